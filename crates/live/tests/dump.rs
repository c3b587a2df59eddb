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

/// A lookup of one socket by its 4-tuple and cookie, against this kernel:
/// it returns that socket with its counters of now (IPv4 and IPv6, batched
/// beyond one send), says a closed one is gone, and does not mistake
/// another socket on the same 4-tuple (another cookie) for it.
#[test]
fn lookup_reads_one_socket_again_and_says_when_it_is_gone() {
    use std::io::{Read, Write};
    let Ok(mut d) = Dumper::open() else {
        plumb_testkit::skip!("sock_diag cannot be opened here");
        return;
    };
    let (l, mut c, mut s) = pair("127.0.0.1:0");
    let port = l.local_addr().expect("addr").port();
    // Enough other connections on the port for more than one batch.
    let many: Vec<_> = (0..40)
        .map(|_| {
            let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
            let (s, _) = l.accept().expect("accept");
            (c, s)
        })
        .collect();
    let v6 = TcpListener::bind("[::1]:0").ok().map(|l6| {
        let c6 = TcpStream::connect(l6.local_addr().expect("addr")).expect("connect");
        let (s6, _) = l6.accept().expect("accept");
        (l6, c6, s6)
    });
    let (a, b) = (c.local_addr().expect("a"), c.peer_addr().expect("b"));
    let all = d.dump().expect("dump");
    let mine: Vec<Conn> = all
        .iter()
        .filter(|x| {
            x.local.port() == port
                || x.remote.port() == port
                || v6.as_ref().is_some_and(|(l6, _, _)| {
                    let p6 = l6.local_addr().expect("addr").port();
                    x.local.port() == p6 || x.remote.port() == p6
                })
        })
        .copied()
        .collect();
    let want = 2 * (1 + many.len()) + if v6.is_some() { 2 } else { 0 };
    assert_eq!(mine.len(), want, "{mine:?}");
    let sender = *mine
        .iter()
        .find(|x| x.local == a && x.remote == b)
        .expect("the client end");
    let acked = |x: &Conn| x.tcp.and_then(|t| t.bytes_acked).unwrap_or(0);
    // Move 1 MB; the lookup sees the new count, not the dump's.
    let buf = vec![7u8; 1 << 20];
    let reader = std::thread::spawn(move || {
        let mut got = 0;
        let mut b = vec![0u8; 1 << 16];
        while got < 1 << 20 {
            got += s.read(&mut b).expect("read");
        }
        s
    });
    c.write_all(&buf).expect("write");
    let s = reader.join().expect("reader");
    let (mut out, mut gone) = (Vec::new(), Vec::new());
    let mut later = acked(&sender);
    for _ in 0..50 {
        d.lookup(&mine, &mut out, &mut gone).expect("lookup");
        later = out
            .iter()
            .find(|x| x.cookie == sender.cookie)
            .map_or(0, acked);
        if later >= acked(&sender) + (1 << 20) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(later >= acked(&sender) + (1 << 20), "{later}");
    assert_eq!(out.len(), mine.len(), "every socket found again");
    assert!(gone.is_empty(), "{gone:?}");
    for x in &mine {
        let y = out.iter().find(|y| y.cookie == x.cookie).expect("found");
        assert_eq!((y.local, y.remote), (x.local, x.remote));
    }
    // Another cookie on the same 4-tuple is not this socket.
    let mut stale = sender;
    stale.cookie ^= 1 << 40;
    d.lookup([&stale], &mut out, &mut gone).expect("lookup");
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(gone, vec![stale.cookie]);
    // Closed: the client end is gone (or in TIME_WAIT, with another cookie).
    drop(c);
    drop(s);
    d.lookup([&sender], &mut out, &mut gone).expect("lookup");
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(gone, vec![sender.cookie]);
    drop(many);
}

/// An IPv6 socket holding an IPv4 connection (a dual-stack listener's
/// accepted end) is reported with IPv4 addresses, and the lookup finds it
/// by them: the kernel keeps both families in one table.
#[test]
fn lookup_finds_an_ipv6_socket_holding_an_ipv4_connection() {
    let Ok(mut d) = Dumper::open() else {
        plumb_testkit::skip!("sock_diag cannot be opened here");
        return;
    };
    let Ok(l) = TcpListener::bind("[::]:0") else {
        plumb_testkit::skip!("no IPv6 here");
        return;
    };
    let port = l.local_addr().expect("addr").port();
    let Ok(c) = TcpStream::connect(("127.0.0.1", port)) else {
        plumb_testkit::skip!("IPv6 sockets here are IPv6 only (bindv6only)");
        return;
    };
    let (s, _) = l.accept().expect("accept");
    let server_end = (c.peer_addr().expect("peer"), c.local_addr().expect("local"));
    d.port = Some(port);
    let all = d.dump().expect("dump");
    let mapped = *all
        .iter()
        .find(|x| x.local.port() == port && x.remote == server_end.1)
        .unwrap_or_else(|| panic!("the accepted end: {all:?}"));
    assert!(
        mapped.local.is_ipv4() && mapped.remote.is_ipv4(),
        "{mapped:?}"
    );
    let (mut out, mut gone) = (Vec::new(), Vec::new());
    d.lookup([&mapped], &mut out, &mut gone).expect("lookup");
    assert!(gone.is_empty(), "{gone:?}");
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(
        (out[0].cookie, out[0].local, out[0].remote),
        (mapped.cookie, mapped.local, mapped.remote)
    );
    drop((c, s));
}

/// The listeners' dump holds a listening socket and not the connections
/// on its port: the accepted end of one is told from the end that opened
/// it.
#[test]
fn listeners_tell_the_accepted_end_from_the_opening_one() {
    let Ok(mut d) = Dumper::open() else {
        plumb_testkit::skip!("sock_diag cannot be opened here");
        return;
    };
    let (l, c, s) = pair("127.0.0.1:0");
    let listeners = d.listeners().expect("listeners");
    let at = l.local_addr().expect("addr");
    assert!(listeners.contains(&at), "{at} not in {listeners:?}");
    // The client's ephemeral port listens nowhere.
    let client = c.local_addr().expect("addr");
    assert!(!listeners.iter().any(|x| x.port() == client.port()));
    let accepted = s.local_addr().expect("addr");
    assert!(!plumb_live::diag::opened_here(accepted, &listeners));
    assert!(plumb_live::diag::opened_here(client, &listeners));
}
