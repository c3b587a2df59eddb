//! Virtual-clock tests of the link model: no threads, no sleeps.

use super::*;
use crate::wire::testpkt::{build, resegment, seq_of, Spec};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn gbps(g: u64) -> Rate {
    Rate::from_bps(g * 1_000_000_000).expect("nonzero")
}

/// A non-vnet packet of `len` bytes carrying `id` in its first 8 bytes
/// (opaque to the link: one segment of `len` IP bytes).
fn plain(len: usize, id: u64) -> Packet {
    let mut f = vec![0u8; len.max(8)];
    f[..8].copy_from_slice(&id.to_be_bytes());
    Packet::from_frame(&f[..len.max(8)], false)
}

fn id_of(p: &Packet) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&p.frame()[..8]);
    u64::from_be_bytes(b)
}

fn drain(link: &mut Link, now: Time) -> Vec<(Time, u64)> {
    let mut out = Vec::new();
    let mut bufs = Vec::new();
    link.release_due(now, |due, p| {
        out.push((due, id_of(&p)));
        bufs.push(p);
    });
    for b in bufs {
        link.recycle(b);
    }
    out
}

#[test]
fn back_to_back_packets_are_spaced_by_wire_time() {
    let mut cfg = LinkConfig::new(gbps(1), Duration::from_millis(5));
    cfg.queue_bytes = 1 << 20;
    let mut link = Link::new(cfg).expect("config");
    for id in 0..3 {
        assert_eq!(link.enqueue(Time::ZERO, plain(1500, id)), Verdict::Queued);
    }
    // 1538 wire bytes at 1 Gb/s = 12 304 ns each.
    assert_eq!(link.next_release(), Some(Time(12_304 + 5 * MS)));
    assert!(drain(&mut link, Time(12_303 + 5 * MS)).is_empty());
    let got = drain(&mut link, Time(10 * MS));
    let want: Vec<(Time, u64)> = (0..3)
        .map(|i| (Time(12_304 * (i + 1) + 5 * MS), i))
        .collect();
    assert_eq!(got, want);
    // An idle link starts serialising at the arrival time.
    assert_eq!(
        link.enqueue(Time(1000 * MS), plain(100, 9)),
        Verdict::Queued
    );
    assert_eq!(
        link.next_release(),
        Some(Time(1000 * MS + 138 * 8 + 5 * MS))
    );
}

#[test]
fn fractional_wire_times_do_not_accumulate_rounding() {
    // 1538 B at 3 Gb/s = 4101.33… ns: release at ceil of the exact end.
    let mut cfg = LinkConfig::new(gbps(3), Duration::ZERO);
    cfg.queue_bytes = 1 << 20;
    let mut link = Link::new(cfg).expect("config");
    for id in 0..300 {
        link.enqueue(Time::ZERO, plain(1500, id));
    }
    let got = drain(&mut link, Time(10 * MS));
    assert_eq!(got.len(), 300);
    for (i, (due, _)) in got.iter().enumerate() {
        let exact_num = 12_304 * (i as u64 + 1); // ns × 3
        assert_eq!(due.0, exact_num.div_ceil(3), "packet {i}");
    }
}

#[test]
fn queue_overflow_drops_exactly_the_excess() {
    let mut cfg = LinkConfig::new(gbps(1), Duration::from_millis(1));
    cfg.queue_bytes = 10 * 1538;
    let mut link = Link::new(cfg).expect("config");
    let verdicts: Vec<Verdict> = (0..15)
        .map(|id| link.enqueue(Time::ZERO, plain(1500, id)))
        .collect();
    assert!(verdicts[..10].iter().all(|v| *v == Verdict::Queued));
    assert!(verdicts[10..]
        .iter()
        .all(|v| *v == Verdict::DroppedQueueFull));
    assert_eq!(link.backlog_bytes(Time::ZERO), 10 * 1538);
    // After three wire times, exactly three frames fit again.
    let t = Time(3 * 12_304);
    let verdicts: Vec<Verdict> = (15..20)
        .map(|id| link.enqueue(t, plain(1500, id)))
        .collect();
    assert_eq!(
        verdicts.iter().filter(|v| **v == Verdict::Queued).count(),
        3,
        "{verdicts:?}"
    );
    let s = *link.stats();
    assert_eq!(
        s.dropped_queue,
        Counter {
            segments: 7,
            bytes: 7 * 1500
        }
    );
    assert_eq!(s.max_queue_bytes, 10 * 1538);
    // A smaller frame still fits where a full one did not.
    cfg = LinkConfig::new(gbps(1), Duration::ZERO);
    cfg.queue_bytes = 1538 + 100;
    let mut link = Link::new(cfg).expect("config");
    assert_eq!(link.enqueue(Time::ZERO, plain(1500, 0)), Verdict::Queued);
    assert_eq!(
        link.enqueue(Time::ZERO, plain(1500, 1)),
        Verdict::DroppedQueueFull
    );
    assert_eq!(link.enqueue(Time::ZERO, plain(62, 2)), Verdict::Queued);
}

/// Offers `n` 1500-byte packets 20 µs apart on a 1 Gb/s link (never queueing),
/// releasing as it goes; returns the per-packet loss pattern.
fn loss_pattern(loss: LossModel, seed: u64, n: u64) -> Vec<bool> {
    let mut cfg = LinkConfig::new(gbps(1), Duration::from_millis(1));
    cfg.loss = loss;
    cfg.seed = seed;
    let mut link = Link::new(cfg).expect("config");
    let mut lost = Vec::with_capacity(n as usize);
    for i in 0..n {
        let now = Time(i * 20_000);
        let v = link.enqueue(now, plain(1500, i));
        assert_ne!(v, Verdict::DroppedQueueFull);
        lost.push(v == Verdict::DroppedLoss);
        drain(&mut link, now);
    }
    lost
}

#[test]
fn bernoulli_loss_rate_within_bound() {
    for seed in [1, 2, 3] {
        let lost = loss_pattern(LossModel::Bernoulli(0.01), seed, 100_000);
        let n = lost.iter().filter(|&&l| l).count();
        // ±0.2 % absolute is about 6 standard deviations.
        assert!((800..=1200).contains(&n), "seed {seed}: {n} of 100000 lost");
    }
}

#[test]
fn gilbert_elliott_mean_burst_and_rate() {
    let ge = GilbertElliott::from_loss_and_burst(0.02, 4.0).expect("valid");
    assert!((ge.mean_loss() - 0.02).abs() < 1e-12);
    let lost = loss_pattern(LossModel::GilbertElliott(ge), 42, 1_000_000);
    let total = lost.iter().filter(|&&l| l).count() as f64;
    let bursts =
        lost.windows(2).filter(|w| !w[0] && w[1]).count() as f64 + f64::from(u8::from(lost[0]));
    let rate = total / lost.len() as f64;
    let mean_burst = total / bursts;
    assert!((rate - 0.02).abs() < 0.002, "loss rate {rate}");
    assert!((mean_burst - 4.0).abs() < 0.2, "mean burst {mean_burst}");
    // Bernoulli at the same rate has bursts of ~1/(1-p).
    let lost = loss_pattern(LossModel::Bernoulli(0.02), 42, 200_000);
    let total = lost.iter().filter(|&&l| l).count() as f64;
    let bursts = lost.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
    assert!(total / bursts < 1.1);
}

#[test]
fn gilbert_elliott_rejects_impossible_parameters() {
    assert!(GilbertElliott::from_loss_and_burst(1.0, 3.0).is_err());
    assert!(GilbertElliott::from_loss_and_burst(0.01, 0.5).is_err());
    assert!(GilbertElliott::from_loss_and_burst(0.9, 1.0).is_err());
    let mut cfg = LinkConfig::new(gbps(1), Duration::ZERO);
    cfg.loss = LossModel::Bernoulli(1.5);
    assert!(matches!(
        Link::new(cfg),
        Err(ConfigError::Probability { .. })
    ));
}

#[test]
fn same_seed_same_drop_pattern() {
    let ge = LossModel::GilbertElliott(GilbertElliott::from_loss_and_burst(0.05, 3.0).expect("ok"));
    for model in [LossModel::Bernoulli(0.05), ge] {
        let a = loss_pattern(model, 7, 20_000);
        let b = loss_pattern(model, 7, 20_000);
        let c = loss_pattern(model, 8, 20_000);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}

#[test]
fn jitter_never_reorders() {
    let mut cfg = LinkConfig::new(gbps(1), Duration::from_millis(10));
    cfg.jitter = Duration::from_millis(3);
    let mut link = Link::new(cfg).expect("config");
    let mut released = Vec::new();
    let mut bases = Vec::new();
    for i in 0..20_000u64 {
        let now = Time(i * 50_000);
        link.enqueue(now, plain(1500, i));
        bases.push(now.0 + 12_304 + 10 * MS);
        released.extend(drain(&mut link, now));
    }
    released.extend(drain(&mut link, Time(u64::MAX)));
    assert_eq!(released.len(), 20_000);
    let mut spread = 0u64;
    for (k, (due, id)) in released.iter().enumerate() {
        assert_eq!(*id, k as u64, "released in order");
        let base = bases[k];
        assert!(
            due.0 >= base && due.0 <= base + 3 * MS,
            "{k}: {due:?} vs {base}"
        );
        spread = spread.max(due.0 - base);
        if k > 0 {
            assert!(released[k - 1].0 <= *due);
        }
    }
    assert!(spread > 2 * MS, "jitter applied ({spread} ns)");
}

#[test]
fn reordering_and_duplication() {
    let mut cfg = LinkConfig::new(gbps(1), Duration::from_millis(10));
    cfg.reorder = Some(Reorder {
        probability: 0.1,
        advance: Duration::from_millis(2),
    });
    cfg.duplicate = 0.05;
    let mut link = Link::new(cfg).expect("config");
    let mut released = Vec::new();
    for i in 0..10_000u64 {
        let now = Time(i * 100_000);
        link.enqueue(now, plain(1500, i));
        released.extend(drain(&mut link, now));
    }
    released.extend(drain(&mut link, Time(u64::MAX)));
    let s = *link.stats();
    assert_eq!(released.len() as u64, 10_000 + s.duplicated.segments);
    assert!((850..1150).contains(&s.reordered), "{}", s.reordered);
    assert!((400..600).contains(&s.duplicated.segments));
    let overtaken = released.windows(2).filter(|w| w[1].1 < w[0].1).count();
    assert!(overtaken > 500, "{overtaken}");
    // Release order is due order.
    assert!(released.windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn gso_packet_is_charged_per_segment() {
    let frame = build(&Spec::default()); // 10 000 B payload, gso 1448, 52 B headers
    let mut cfg = LinkConfig::new(gbps(1), Duration::from_millis(1));
    cfg.queue_bytes = 1 << 20;
    let mut link = Link::new(cfg).expect("config");
    assert_eq!(
        link.enqueue(Time::ZERO, Packet::from_frame(&frame, true)),
        Verdict::Queued
    );
    // 6 × (1500 + 38) + (52 + 1312 + 38) = 10 630 wire bytes = 85 040 ns.
    assert_eq!(link.next_release(), Some(Time(85_040 + MS)));
    let s = *link.stats();
    assert_eq!(s.offered.segments, 7);
    assert_eq!(s.offered.bytes, 6 * 1500 + 1364);
    let mut frames = Vec::new();
    link.release_due(Time(2 * MS), |_, p| frames.push(p));
    assert!(frames[0].is_intact(), "nothing dropped, passes whole");
    assert_eq!(frames[0].frame(), &frame[..]);
}

#[test]
fn gso_tail_overflow_keeps_the_head() {
    let frame = build(&Spec {
        payload: 65_000,
        ..Spec::default()
    });
    let mut cfg = LinkConfig::new(gbps(1), Duration::ZERO);
    cfg.queue_bytes = 3 * 1538;
    let mut link = Link::new(cfg).expect("config");
    let v = link.enqueue(Time::ZERO, Packet::from_frame(&frame, true));
    assert_eq!(
        v,
        Verdict::Partial {
            lost: 0,
            overflowed: 42,
            too_big: 0
        }
    );
    let mut out = Vec::new();
    link.release_due(Time(MS), |due, p| out.push((due, p)));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, Time(3 * 12_304));
    let mut seqs = Vec::new();
    let mut scratch = Vec::new();
    out[0]
        .1
        .for_each_frame::<()>(&mut scratch, |f| {
            seqs.extend(resegment(f).iter().map(|s| seq_of(s)));
            Ok(())
        })
        .expect("infallible");
    let base = Spec::default().seq;
    assert_eq!(
        seqs,
        vec![base, base.wrapping_add(1448), base.wrapping_add(2896)]
    );
    assert_eq!(link.stats().gso_split, 1);
}

#[test]
fn gso_loss_drops_single_segments() {
    let frame = build(&Spec {
        payload: 64_000,
        ..Spec::default()
    });
    let mut cfg = LinkConfig::new(gbps(10), Duration::ZERO);
    cfg.queue_bytes = 1 << 20;
    cfg.loss = LossModel::Bernoulli(0.1);
    cfg.seed = 5;
    let mut link = Link::new(cfg).expect("config");
    let mut kept_total = 0u64;
    let mut scratch = Vec::new();
    for i in 0..200u64 {
        let now = Time(i * MS);
        let v = link.enqueue(now, Packet::from_frame(&frame, true));
        let mut frames = 0u64;
        let mut rel = Vec::new();
        link.release_due(now + Duration::from_micros(500), |_, p| rel.push(p));
        for p in rel {
            p.for_each_frame::<()>(&mut scratch, |f| {
                frames += resegment(f).len() as u64;
                Ok(())
            })
            .expect("infallible");
            link.recycle(p);
        }
        match v {
            Verdict::Queued => assert_eq!(frames, 45),
            Verdict::Partial {
                lost,
                overflowed,
                too_big,
            } => {
                assert_eq!((overflowed, too_big), (0, 0));
                assert_eq!(frames, 45 - u64::from(lost));
            }
            Verdict::DroppedLoss => assert_eq!(frames, 0),
            other => panic!("{other:?}"),
        }
        kept_total += frames;
    }
    let s = *link.stats();
    assert_eq!(kept_total, s.delivered.segments);
    assert_eq!(s.offered.segments, 200 * 45);
    let rate = s.dropped_loss.segments as f64 / 9000.0;
    assert!((0.08..0.12).contains(&rate), "{rate}");
    assert!(s.gso_split > 150);
}

#[test]
fn steady_state_does_not_allocate() {
    let frame = build(&Spec {
        payload: 30_000,
        ..Spec::default()
    });
    let mut cfg = LinkConfig::new(gbps(1), Duration::from_millis(5));
    cfg.loss = LossModel::Bernoulli(0.01);
    let mut link = Link::new(cfg).expect("config");
    let mut warm = 0;
    for i in 0..20_000u64 {
        let now = Time(i * 300_000);
        let mut p = link.alloc();
        let big = i % 2 == 0;
        p.fill_with::<()>(true, |b| {
            if big {
                b[..frame.len()].copy_from_slice(&frame);
                Ok(frame.len())
            } else {
                b[..100].copy_from_slice(&frame[..100]);
                Ok(100)
            }
        })
        .expect("infallible");
        link.enqueue(now, p);
        let mut rel = Vec::new();
        link.release_due(now, |_, p| rel.push(p));
        for p in rel {
            link.recycle(p);
        }
        if i == 1000 {
            warm = link.allocations();
        }
    }
    assert_eq!(link.allocations(), warm);
}

#[derive(Debug, Clone)]
struct Step {
    gap_ns: u64,
    len: usize,
    gso: bool,
}

fn step() -> impl Strategy<Value = Step> {
    (0u64..200_000, 40usize..1500, any::<bool>()).prop_map(|(gap_ns, len, gso)| Step {
        gap_ns,
        len,
        gso,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn conservation_and_ordering(
        steps in proptest::collection::vec(step(), 1..300),
        loss in 0.0f64..0.3,
        jitter_us in 0u64..3000,
        reorder in 0.0f64..0.2,
        dup in 0.0f64..0.2,
        queue_frames in 1u64..60,
        seed in any::<u64>(),
    ) {
        let mut cfg = LinkConfig::new(Rate::from_mbps(100.0).expect("rate"), Duration::from_millis(3));
        cfg.loss = LossModel::Bernoulli(loss);
        cfg.jitter = Duration::from_micros(jitter_us);
        cfg.reorder = Some(Reorder { probability: reorder, advance: Duration::from_millis(1) });
        cfg.duplicate = dup;
        cfg.queue_bytes = queue_frames * 1538;
        cfg.seed = seed;
        let mut link = Link::new(cfg).expect("config");
        let mut now = Time::ZERO;
        let mut released = 0u64;
        let mut last_due = Time::ZERO;
        let mut check = |link: &mut Link, now: Time, released: &mut u64| {
            let mut rel = Vec::new();
            link.release_due(now, |due, p| rel.push((due, p)));
            for (due, p) in rel {
                prop_assert!(due <= now);
                prop_assert!(due >= last_due, "released in due order");
                last_due = due;
                *released += 1;
                link.recycle(p);
            }
            Ok(())
        };
        for s in &steps {
            now = Time(now.0 + s.gap_ns);
            let pkt = if s.gso {
                Packet::from_frame(&build(&Spec { payload: s.len * 10, ..Spec::default() }), true)
            } else {
                Packet::from_frame(&vec![0u8; s.len], false)
            };
            link.enqueue(now, pkt);
            check(&mut link, now, &mut released)?;
            if let Some(t) = link.next_release() {
                prop_assert!(t > now);
            }
        }
        let st = *link.stats();
        prop_assert_eq!(
            st.offered.segments + st.duplicated.segments,
            st.delivered.segments + st.dropped_queue.segments + st.dropped_loss.segments
                + link.fifo.iter().chain(link.ahead.iter().map(|a| &a.entry)).map(|e| u64::from(e.segments)).sum::<u64>()
        );
        check(&mut link, Time(u64::MAX), &mut released)?;
        prop_assert_eq!(link.next_release(), None);
        prop_assert_eq!(released, link.stats().packets_released);
        let st = *link.stats();
        prop_assert_eq!(
            st.offered.segments + st.duplicated.segments,
            st.delivered.segments + st.dropped_queue.segments + st.dropped_loss.segments
        );
        prop_assert_eq!(
            st.offered.bytes + st.duplicated.bytes,
            st.delivered.bytes + st.dropped_queue.bytes + st.dropped_loss.bytes
        );
        prop_assert!(st.max_queue_bytes <= queue_frames * 1538);
    }
}

/// The black hole: a packet one byte over the limit is dropped and counted,
/// one at the limit passes, and nothing else about the link changes.
#[test]
fn a_packet_over_max_packet_is_dropped_silently_and_counted() {
    let mut cfg = LinkConfig::new(gbps(1), Duration::from_millis(1));
    cfg.max_packet = Some(1400);
    let mut link = Link::new(cfg).expect("config");
    assert_eq!(
        link.enqueue(Time::ZERO, plain(1401, 1)),
        Verdict::DroppedTooBig
    );
    assert_eq!(link.enqueue(Time::ZERO, plain(1400, 2)), Verdict::Queued);
    let got = drain(&mut link, Time(10 * MS));
    assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), vec![2]);
    let s = *link.stats();
    assert_eq!(
        s.dropped_too_big,
        Counter {
            segments: 1,
            bytes: 1401
        }
    );
    assert_eq!(s.dropped_loss.segments + s.dropped_queue.segments, 0);
    // The dropped packet used no link time: the one that fit left first.
    assert_eq!(got[0].0, Time(1438 * 8 + MS));
}

/// A GSO packet is judged per wire segment: its full-size segments are
/// over the limit, its short tail is not.
#[test]
fn a_gso_packet_loses_only_its_segments_over_max_packet() {
    let frame = build(&Spec::default()); // 6 × 1500 B segments + a 1364 B tail
    let mut cfg = LinkConfig::new(gbps(1), Duration::ZERO);
    cfg.queue_bytes = 1 << 20;
    cfg.max_packet = Some(1400);
    let mut link = Link::new(cfg).expect("config");
    assert_eq!(
        link.enqueue(Time::ZERO, Packet::from_frame(&frame, true)),
        Verdict::Partial {
            lost: 0,
            overflowed: 0,
            too_big: 6
        }
    );
    let mut out = Vec::new();
    link.release_due(Time(MS), |_, p| out.push(p));
    let mut seqs = Vec::new();
    let mut scratch = Vec::new();
    for p in &out {
        p.for_each_frame::<()>(&mut scratch, |f| {
            seqs.extend(resegment(f).iter().map(|s| seq_of(s)));
            Ok(())
        })
        .expect("infallible");
    }
    assert_eq!(seqs, vec![Spec::default().seq.wrapping_add(6 * 1448)]);
    let s = *link.stats();
    assert_eq!(s.dropped_too_big.segments, 6);
    assert_eq!(s.dropped_too_big.bytes, 6 * 1500);
    assert_eq!(s.delivered.segments, 1);
    // At a limit the full-size segments fit under, the packet passes whole.
    let mut cfg = LinkConfig::new(gbps(1), Duration::ZERO);
    cfg.queue_bytes = 1 << 20;
    cfg.max_packet = Some(1500);
    let mut link = Link::new(cfg).expect("config");
    assert_eq!(
        link.enqueue(Time::ZERO, Packet::from_frame(&frame, true)),
        Verdict::Queued
    );
}

#[test]
fn max_packet_below_68_bytes_is_refused() {
    let mut cfg = LinkConfig::new(gbps(1), Duration::from_millis(1));
    cfg.max_packet = Some(67);
    assert_eq!(
        Link::new(cfg.clone()).err(),
        Some(ConfigError::MaxPacket(67))
    );
    cfg.max_packet = Some(68);
    assert!(Link::new(cfg).is_ok());
}
