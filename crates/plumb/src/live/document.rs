//! The `-J` document of `plumb why` on running connections: the filter and
//! the sampling time, one row per connection (who, which way the data goes,
//! its rate and its diagnosis), and the first diagnosis found.

use plumb_live::sys::Owner;
use plumb_live::Track;
use plumb_record::class::FlowClass;
use plumb_record::diagnosis::Diagnosis;
use serde::Serialize;

/// The whole document.
#[derive(Debug, Serialize)]
pub struct LiveDocument {
    /// What was sampled.
    pub live: LiveSampling,
    /// One row per matching connection, busiest first.
    pub connections: Vec<ConnectionRow>,
    /// The first row's diagnosis that there is (`null`: none).
    pub diagnosis: Option<Diagnosis>,
}

/// `live`: the filter in words and the seconds sampled.
#[derive(Debug, Serialize)]
pub struct LiveSampling {
    /// As `describe_filter` words it.
    pub filter: String,
    /// Seconds sampled.
    pub seconds: f64,
}

/// One connection.
#[derive(Debug, Serialize)]
pub struct ConnectionRow {
    /// Local address and port.
    pub local: String,
    /// Remote address and port.
    pub remote: String,
    /// Local port.
    pub local_port: u16,
    /// Remote port.
    pub remote_port: u16,
    /// The owning process (`null`: unknown).
    pub pid: Option<u32>,
    /// Its command name (`null`: unknown).
    pub command: Option<String>,
    /// The congestion control (`null`: not reported).
    pub congestion: Option<String>,
    /// `sender`, `receiver` or `idle`.
    pub this_host: &'static str,
    /// Its class over the period (`null`: nothing measured).
    pub class: Option<FlowClass>,
    /// The class rule that fits, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class_why: Option<String>,
    /// The connection closed while sampled.
    pub closed: bool,
    /// Its rate, bit/s (left out when there were too few samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<f64>,
    /// Samples taken (left out when there were too few).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<u32>,
    /// `plumb why`'s diagnosis object (`null`: nothing to measure).
    pub diagnosis: Option<Diagnosis>,
    /// Why there is no diagnosis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
}

impl ConnectionRow {
    /// The row of a tracked connection with its identity filled in and no
    /// measurement yet.
    pub fn identity(tr: &Track, owner: Option<&Owner>) -> ConnectionRow {
        let c = &tr.last;
        ConnectionRow {
            local: c.local.to_string(),
            remote: c.remote.to_string(),
            local_port: c.local.port(),
            remote_port: c.remote.port(),
            pid: owner.map(|o| o.pid),
            command: owner.map(|o| o.command.clone()),
            congestion: c.congestion.map(|c| c.to_string()),
            this_host: tr.delta().role.name(),
            class: None,
            class_why: None,
            closed: false,
            rate_bps: None,
            samples: None,
            diagnosis: None,
            note: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> plumb_live::Conn {
        plumb_live::Conn {
            local: "127.0.0.1:5201".parse().expect("addr"),
            remote: "[::1]:40000".parse().expect("addr"),
            state: 1,
            inode: 0,
            uid: 0,
            ifindex: 0,
            cookie: 7,
            recv_queue: 0,
            send_queue: 0,
            tcp: None,
            congestion: plumb_live::CcName::new(b"cubic"),
            mem: None,
            bbr: None,
        }
    }

    /// The keys and their order, as `plumb why --port -J` has printed them.
    #[test]
    fn rows_keep_their_keys_in_order() {
        let tr = Track::new(conn(), 0.0);
        let owner = Owner {
            pid: 42,
            command: "rsync".into(),
        };
        let mut closed = ConnectionRow::identity(&tr, Some(&owner));
        closed.closed = true;
        closed.note = Some("closed before a second sample: nothing to measure");
        assert_eq!(
            serde_json::to_string(&closed).expect("serializes"),
            r#"{"local":"127.0.0.1:5201","remote":"[::1]:40000","local_port":5201,"remote_port":40000,"pid":42,"command":"rsync","congestion":"cubic","this_host":"idle","class":null,"closed":true,"diagnosis":null,"note":"closed before a second sample: nothing to measure"}"#
        );
        let mut busy = ConnectionRow::identity(&tr, None);
        busy.rate_bps = Some(1.5e6);
        busy.samples = Some(30);
        assert_eq!(
            serde_json::to_string(&busy).expect("serializes"),
            r#"{"local":"127.0.0.1:5201","remote":"[::1]:40000","local_port":5201,"remote_port":40000,"pid":null,"command":null,"congestion":"cubic","this_host":"idle","class":null,"closed":false,"rate_bps":1500000.0,"samples":30,"diagnosis":null}"#
        );
    }
}
