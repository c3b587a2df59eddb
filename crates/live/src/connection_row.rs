//! The rows of the `-J` document of `plumb why` on running connections
//! (`plumb_record::Document`'s `connections`): a tracked connection's identity.

use crate::sys::Owner;
use crate::Track;
use plumb_record::ConnectionRow;

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
        this_host: tr.delta().role.name().to_string(),
        class: None,
        class_why: None,
        closed: false,
        rate_bps: None,
        samples: None,
        diagnosis: None,
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> crate::Conn {
        crate::Conn {
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
            congestion: crate::CcName::new(b"cubic"),
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
        let mut closed = identity(&tr, Some(&owner));
        closed.closed = true;
        closed.note = Some("closed before a second sample: nothing to measure".into());
        assert_eq!(
            serde_json::to_string(&closed).expect("serializes"),
            r#"{"local":"127.0.0.1:5201","remote":"[::1]:40000","local_port":5201,"remote_port":40000,"pid":42,"command":"rsync","congestion":"cubic","this_host":"idle","class":null,"closed":true,"diagnosis":null,"note":"closed before a second sample: nothing to measure"}"#
        );
        let mut busy = identity(&tr, None);
        busy.rate_bps = Some(1.5e6);
        busy.samples = Some(30);
        assert_eq!(
            serde_json::to_string(&busy).expect("serializes"),
            r#"{"local":"127.0.0.1:5201","remote":"[::1]:40000","local_port":5201,"remote_port":40000,"pid":null,"command":null,"congestion":"cubic","this_host":"idle","class":null,"closed":false,"rate_bps":1500000.0,"samples":30,"diagnosis":null}"#
        );
    }
}
