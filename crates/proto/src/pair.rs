//! A client and a server machine joined back to back on a virtual clock:
//! whole tests end to end, with no sockets.

use std::time::Duration;

use crate::udp::{SeqWidth, UdpHeader, UdpReceiver};
use crate::{
    stream_id, ClientControl, ClientEvent, Cookie, PlumbParams, PlumbResults, PlumbStreamInfo,
    Protocol, Results, ServerControl, ServerEvent, ServerLimits, StreamResult, TestParams,
};

/// What each side's driver does when asked.
struct Script {
    client_results: Results,
    server_results: Results,
    /// Refuse instead of running (a busy server).
    refuse: bool,
}

#[derive(Default)]
struct Log {
    client: Vec<ClientEvent>,
    server: Vec<ServerEvent>,
}

/// Moves bytes both ways and reacts to events until neither side has anything to do.
fn pump(
    client: &mut ClientControl,
    server: &mut ServerControl,
    script: &Script,
    now: Duration,
    log: &mut Log,
) {
    loop {
        let mut progress = false;
        let mut bytes = Vec::new();
        if client.poll_transmit(&mut bytes) {
            server.handle_input(&bytes, now);
            progress = true;
        }
        while let Some(event) = server.poll_event() {
            let result = match &event {
                ServerEvent::Cookie(_) if script.refuse => server.refuse(),
                ServerEvent::Params(_) => {
                    server.create_streams().and_then(|()| server.start_test())
                }
                ServerEvent::TestEnd => server.request_results(),
                ServerEvent::ClientResults(_) => server.send_results(&script.server_results),
                _ => Ok(()),
            };
            assert!(result.is_ok() || server.is_closed(), "{result:?}");
            log.server.push(event);
            progress = true;
        }
        let mut bytes = Vec::new();
        if server.poll_transmit(&mut bytes) {
            client.handle_input(&bytes, now);
            progress = true;
        }
        while let Some(event) = client.poll_event() {
            let result = match &event {
                ClientEvent::ResultsRequested => client.send_results(&script.client_results),
                _ => Ok(()),
            };
            assert!(result.is_ok() || client.is_closed(), "{result:?}");
            log.client.push(event);
            progress = true;
        }
        if !progress {
            return;
        }
    }
}

fn cookie() -> Cookie {
    Cookie::from_random(&[7; 36])
}

fn udp_bidir_params() -> TestParams {
    TestParams {
        protocol: Protocol::Udp,
        time: 1,
        parallel: 2,
        bidirectional: true,
        len: 1460,
        bandwidth: 1_048_576,
        udp_counters_64bit: true,
        get_server_output: true,
        gso: Some(0),
        gso_dg_size: Some(0),
        gso_bf_size: Some(65_507),
        gro: Some(0),
        gro_bf_size: Some(65_507),
        client_version: "plumb 0.1.0".into(),
        plumb: Some(PlumbParams {
            version: "0.1.0".into(),
            rwin: Some(262_144),
            ..PlumbParams::default()
        }),
        ..TestParams::default()
    }
}

/// The server's receiving stream: datagrams 1..=10 sent, 4 lost, 7 duplicated, 9 late.
fn receive_udp() -> StreamResult {
    let mut rx = UdpReceiver::new();
    let width = SeqWidth::from_counters_64bit(true);
    let mut datagram = [0u8; 1460];
    let order = [1u64, 2, 3, 5, 6, 7, 7, 8, 10, 9];
    for (i, seq) in order.iter().enumerate() {
        let sent = Duration::from_millis(500 + 10 * seq);
        UdpHeader::stamped(*seq, sent)
            .encode(width, &mut datagram)
            .expect("1460 bytes");
        let header = UdpHeader::decode(&datagram, width).expect("decodes");
        // 2 ms one-way delay, plus 1 ms extra on every third datagram.
        let extra = if i % 3 == 0 { 1 } else { 0 };
        rx.record_header(&header, sent + Duration::from_millis(2 + extra));
    }
    let stats = rx.stats();
    assert_eq!(
        (
            stats.max_seq,
            stats.lost,
            stats.out_of_order,
            stats.duplicates
        ),
        (10, 0, 2, 1)
    );
    StreamResult {
        id: stream_id(0),
        bytes: stats.received * 1460,
        retransmits: -1,
        jitter: stats.jitter,
        errors: i64::try_from(stats.lost).expect("small"),
        omitted_errors: Some(0),
        omitted_packets: Some(0),
        packets: i64::try_from(stats.max_seq).expect("small"),
        start_time: 0.0,
        end_time: 1.0,
    }
}

#[test]
fn udp_bidir_test_runs_end_to_end() {
    let params = udp_bidir_params();
    assert_eq!(params.validate(), Ok(()));
    let mut client = ClientControl::new(cookie(), params.clone());
    let mut server = ServerControl::new(ServerLimits::default(), Duration::ZERO);
    let received = receive_udp();
    let script = Script {
        client_results: Results {
            sender_has_retransmits: 0,
            streams: (0..4)
                .map(|i| StreamResult {
                    id: stream_id(i),
                    packets: 10,
                    ..StreamResult::default()
                })
                .collect(),
            ..Results::default()
        },
        server_results: Results {
            cpu_util_total: 1.25,
            sender_has_retransmits: 0,
            server_output_text: Some("server report".into()),
            streams: vec![received.clone()],
            plumb: Some(PlumbResults {
                version: "0.1.0".into(),
                streams: vec![PlumbStreamInfo {
                    id: 1,
                    rcvbuf_actual: Some(425_984),
                    ..PlumbStreamInfo::default()
                }],
                ..PlumbResults::default()
            }),
            ..Results::default()
        },
        refuse: false,
    };
    let mut log = Log::default();
    pump(
        &mut client,
        &mut server,
        &script,
        Duration::from_millis(1),
        &mut log,
    );
    assert_eq!(
        log.client,
        [
            ClientEvent::CreateStreams,
            ClientEvent::TestStart,
            ClientEvent::TestRunning
        ]
    );
    assert_eq!(server.cookie(), Some(&cookie()));
    assert!(crate::cookie::matches(
        &cookie(),
        client.cookie().as_bytes()
    ));

    client.test_end().expect("running");
    pump(
        &mut client,
        &mut server,
        &script,
        Duration::from_millis(1001),
        &mut log,
    );
    client.handle_eof(Duration::from_millis(1002));
    server.handle_eof(Duration::from_millis(1002));
    assert!(client.is_closed() && server.is_closed());

    assert_eq!(
        log.server,
        [
            ServerEvent::Cookie(cookie()),
            ServerEvent::Params(Box::new(params)),
            ServerEvent::TestEnd,
            ServerEvent::ClientResults(Box::new(script.client_results.clone())),
            ServerEvent::Done { clean: true },
        ]
    );
    assert_eq!(
        log.client[3..],
        [
            ClientEvent::ResultsRequested,
            ClientEvent::ServerResults(Box::new(script.server_results.clone())),
            ClientEvent::DisplayResults,
            ClientEvent::Done,
        ]
    );
    assert!(received.jitter > 0.0);
}

#[test]
fn server_rejects_parameters_out_of_range() {
    let params = TestParams {
        parallel: 0,
        ..udp_bidir_params()
    };
    let mut client = ClientControl::new(cookie(), params);
    let mut server = ServerControl::new(ServerLimits::default(), Duration::ZERO);
    let script = Script {
        client_results: Results::default(),
        server_results: Results::default(),
        refuse: false,
    };
    let mut log = Log::default();
    pump(&mut client, &mut server, &script, Duration::ZERO, &mut log);
    assert_eq!(log.client, [ClientEvent::ServerError { code: 6, errno: 0 }]);
    assert!(matches!(
        log.server[1],
        ServerEvent::Rejected { code: 6, .. }
    ));
}

#[test]
fn busy_server_refuses_after_the_cookie() {
    let mut client = ClientControl::new(cookie(), udp_bidir_params());
    let mut server = ServerControl::new(ServerLimits::default(), Duration::ZERO);
    let script = Script {
        client_results: Results::default(),
        server_results: Results::default(),
        refuse: true,
    };
    let mut log = Log::default();
    pump(&mut client, &mut server, &script, Duration::ZERO, &mut log);
    assert_eq!(log.client, [ClientEvent::AccessDenied]);
    assert!(server.is_closed());
}

#[test]
fn either_side_can_terminate() {
    let script = Script {
        client_results: Results::default(),
        server_results: Results::default(),
        refuse: false,
    };
    let mut client = ClientControl::new(cookie(), udp_bidir_params());
    let mut server = ServerControl::new(ServerLimits::default(), Duration::ZERO);
    let mut log = Log::default();
    pump(&mut client, &mut server, &script, Duration::ZERO, &mut log);
    client.terminate().expect("running");
    pump(&mut client, &mut server, &script, Duration::ZERO, &mut log);
    assert_eq!(log.server.last(), Some(&ServerEvent::ClientTerminated));

    let mut client = ClientControl::new(cookie(), udp_bidir_params());
    let mut server = ServerControl::new(ServerLimits::default(), Duration::ZERO);
    let mut log = Log::default();
    pump(&mut client, &mut server, &script, Duration::ZERO, &mut log);
    server.terminate().expect("running");
    pump(&mut client, &mut server, &script, Duration::ZERO, &mut log);
    assert_eq!(log.client.last(), Some(&ClientEvent::ServerTerminated));
    // The client's IPERF_DONE reply reaches a closed server and is ignored.
    assert_eq!(log.server.len(), 2);
}
