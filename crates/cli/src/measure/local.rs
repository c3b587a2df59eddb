//! iperf3's flags for this end's own sockets — `--bind-dev`, `--cntl-ka`,
//! `--snd-timeout`, `--dont-fragment`, `-L` — read into
//! [`plumb_net::local::LocalOptions`]. A plumb client honours all of them;
//! a server takes `--bind-dev` and `--snd-timeout` (on its listener and UDP
//! sockets) and refuses the rest in one line, as iperf3's does.

use std::time::Duration;

use clap::Args;
use plumb_net::local::{Keepalive, LocalOptions};

/// The flags.
#[derive(Debug, Args, Clone, Default)]
pub struct LocalArgs {
    /// Bind every socket to this network device (SO_BINDTODEVICE)
    #[arg(long = "bind-dev", value_name = "DEV")]
    pub bind_dev: Option<String>,
    /// Client: TCP keepalive on the control connection, each part optional (seconds)
    #[arg(long = "cntl-ka", num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "IDLE/INTV/CNT", value_parser = parse_keepalive)]
    pub cntl_ka: Option<Keepalive>,
    /// Drop a connection whose sent data stays unacknowledged this long, ms (TCP_USER_TIMEOUT)
    #[arg(long = "snd-timeout", value_name = "MS", value_parser = parse_snd_timeout)]
    pub snd_timeout: Option<Duration>,
    /// Client: set IPv4's don't-fragment bit on UDP datagrams (IP_PMTUDISC_DO)
    #[arg(long = "dont-fragment")]
    pub dont_fragment: bool,
    /// Client: the IPv6 flow label of the TCP data streams (0 to 1048575)
    #[arg(short = 'L', long = "flowlabel", value_name = "N", value_parser = parse_flowlabel)]
    pub flowlabel: Option<u32>,
}

impl LocalArgs {
    /// The options, for a client.
    pub fn options(&self) -> LocalOptions {
        LocalOptions {
            bind_dev: self.bind_dev.clone(),
            keepalive: self.cntl_ka,
            snd_timeout: self.snd_timeout,
            dont_fragment: self.dont_fragment,
            flowlabel: self.flowlabel,
        }
    }

    /// The first of them given that only a client takes, by name.
    pub fn client_only_given(&self) -> Option<&'static str> {
        [
            (self.cntl_ka.is_some(), "--cntl-ka"),
            (self.dont_fragment, "--dont-fragment"),
            (self.flowlabel.is_some(), "-L"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }
}

/// `IDLE/INTV/CNT`, each part optional, as iperf3 reads it; the idle time
/// must exceed the probes' whole span, as iperf3 requires.
fn parse_keepalive(s: &str) -> Result<Keepalive, String> {
    let bad = || {
        format!("invalid --cntl-ka '{s}' (accepted: IDLE/INTV/CNT in whole seconds and probes, each optional: --cntl-ka, --cntl-ka=60/10/3)")
    };
    let mut parts = s.split('/');
    let mut next = || -> Result<Option<u32>, String> {
        match parts.next().map(str::trim) {
            None | Some("") => Ok(None),
            Some(p) => p.parse::<u32>().map(Some).map_err(|_| bad()),
        }
    };
    let (idle, interval, count) = (next()?, next()?, next()?);
    if parts.next().is_some() {
        return Err(bad());
    }
    if let Some(i) = idle.filter(|&i| i > 0) {
        let span = u64::from(interval.unwrap_or(0)) * u64::from(count.unwrap_or(0));
        if u64::from(i) <= span {
            return Err(format!(
                "invalid --cntl-ka '{s}': the idle time must be longer than INTV × CNT ({span} s)"
            ));
        }
    }
    let secs = |v: Option<u32>| v.filter(|&v| v > 0).map(|v| Duration::from_secs(v.into()));
    Ok(Keepalive {
        idle: secs(idle),
        interval: secs(interval),
        count: count.filter(|&c| c > 0),
    })
}

/// A 20-bit flow label, as iperf3 takes it (decimal; 0 sends none).
fn parse_flowlabel(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n <= plumb_net::local::FLOWLABEL_MASK => Ok(n),
        _ => Err(format!("invalid flow label '{s}' (accepted: 0 to 1048575)")),
    }
}

/// Milliseconds, 1 to a day (iperf3's bound).
fn parse_snd_timeout(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<u64>() {
        Ok(ms) if (1..=86_400_000).contains(&ms) => Ok(Duration::from_millis(ms)),
        _ => Err(format!(
            "invalid --snd-timeout '{s}' (accepted: 1 to 86400000 milliseconds)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keepalive_reads_as_iperf3_does() {
        let k = |s| parse_keepalive(s);
        assert_eq!(k(""), Ok(Keepalive::default()));
        assert_eq!(
            k("60/10/3"),
            Ok(Keepalive {
                idle: Some(Duration::from_secs(60)),
                interval: Some(Duration::from_secs(10)),
                count: Some(3)
            })
        );
        assert_eq!(
            k("/5").map(|k| k.interval),
            Ok(Some(Duration::from_secs(5)))
        );
        assert!(k("30/10/3").is_err_and(|e| e.contains("longer than INTV × CNT")));
        for bad in ["x", "1/2/3/4", "-1"] {
            assert!(k(bad).is_err_and(|e| e.contains("accepted")), "{bad}");
        }
        assert_eq!(parse_snd_timeout("2500"), Ok(Duration::from_millis(2500)));
        assert!(parse_snd_timeout("0").is_err());
    }
}
