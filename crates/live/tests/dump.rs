//! The dump against this host's kernel: one request brings IPv4 and IPv6
//! sockets, and the kernel's port filter (bytecode) keeps both ends of the
//! connections on that port and nothing else. Loopback only.

use std::net::{SocketAddr, TcpListener, TcpStream};

use plumb_live::sys::Dumper;
use plumb_live::Conn;

fn pair(addr: &str) -> (TcpListener, TcpStream, TcpStream) {
    let l = TcpListener::bind(addr).expect("bind");
    let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
    let (s, _) = l.accept().expect("accept");
    (l, c, s)
}

fn ends(conns: &[Conn], a: SocketAddr, b: SocketAddr) -> usize {
    conns
        .iter()
        .filter(|c| (c.local == a && c.remote == b) || (c.local == b && c.remote == a))
        .count()
}

#[test]
fn one_dump_has_both_families_and_the_port_filter_keeps_only_its_port() {
    let Ok(mut d) = Dumper::open() else {
        plumb_testkit::skip!("sock_diag cannot be opened here");
        return;
    };
    let (l4, c4, _s4) = pair("127.0.0.1:0");
    let (l4b, c4b, _s4b) = pair("127.0.0.1:0");
    let v6 = match TcpListener::bind("[::1]:0") {
        Ok(l) => {
            drop(l);
            Some(pair("[::1]:0"))
        }
        Err(_) => None,
    };
    let key = |c: &TcpStream| (c.local_addr().expect("a"), c.peer_addr().expect("b"));
    let (a4, b4) = key(&c4);
    let (a4b, b4b) = key(&c4b);
    let all = d.dump().expect("dump");
    assert_eq!(ends(&all, a4, b4), 2, "both ends of the IPv4 connection");
    assert_eq!(ends(&all, a4b, b4b), 2);
    if let Some((_, c6, _)) = &v6 {
        let (a6, b6) = key(c6);
        assert_eq!(ends(&all, a6, b6), 2, "both ends of the IPv6 connection");
    } else {
        plumb_testkit::skip!("no IPv6 loopback: the IPv6 half is not checked");
    }
    let port = l4.local_addr().expect("addr").port();
    d.port = Some(port);
    let some = d.dump().expect("filtered dump");
    assert_eq!(
        ends(&some, a4, b4),
        2,
        "the filter kept the port's connection"
    );
    assert!(
        some.iter()
            .all(|c| c.local.port() == port || c.remote.port() == port),
        "{some:?}"
    );
    assert_eq!(ends(&some, a4b, b4b), 0);
    drop(l4b);
}
