//! The newest iperf3's flags that plumb does not honour. The parser takes
//! them, so that a command line written for iperf3 gets one line naming the
//! flag and why it is refused (and exit status 2), never clap's "unexpected
//! argument" and never a flag silently ignored. Each one's help is hidden:
//! `docs/measure.md` lists them with iperf3's meaning.

use clap::Args;

/// The flags, each as iperf3 takes it (with or without a value).
#[derive(Debug, Args, Clone, Default)]
pub struct RefusedArgs {
    #[arg(long = "sctp", hide = true)]
    sctp: bool,
    #[arg(long = "nstreams", hide = true, value_name = "N")]
    nstreams: Option<String>,
    #[arg(short = 'X', long = "xbind", hide = true, value_name = "NAME")]
    xbind: Option<String>,
    #[arg(long = "pacing-timer", hide = true, value_name = "US")]
    pacing_timer: Option<String>,
}

/// Why SCTP's flags are refused: plumb has no SCTP data path.
const NO_SCTP: &str = "plumb measures over TCP and UDP only; use iperf3 for SCTP";
/// Why `--pacing-timer` is refused: there is no timer to set.
const NO_TIMER: &str = "plumb's -b pacing keeps a timetable instead of checking on a timer, so there is no timer to set";

impl RefusedArgs {
    /// The first refused flag given, with its one-line reason.
    pub fn first(&self) -> Option<String> {
        let given = [
            (self.sctp, "--sctp", NO_SCTP),
            (self.nstreams.is_some(), "--nstreams", NO_SCTP),
            (self.xbind.is_some(), "-X/--xbind", NO_SCTP),
            (self.pacing_timer.is_some(), "--pacing-timer", NO_TIMER),
        ];
        given
            .into_iter()
            .find(|(on, _, _)| *on)
            .map(|(_, flag, why)| format!("iperf3's {flag}: {why}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_given_is_none_and_each_given_names_itself() {
        assert_eq!(RefusedArgs::default().first(), None);
        let sctp = RefusedArgs {
            sctp: true,
            ..RefusedArgs::default()
        };
        assert!(sctp
            .first()
            .is_some_and(|m| m.contains("--sctp: plumb measures over TCP and UDP")));
        let xbind = RefusedArgs {
            xbind: Some("x".into()),
            ..RefusedArgs::default()
        };
        assert!(xbind
            .first()
            .is_some_and(|m| m.contains("-X/--xbind: plumb measures over TCP")));
    }
}
