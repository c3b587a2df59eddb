//! The kernel filter of a live capture, as a classic BPF program: TCP over
//! IPv4 and IPv6 (and ICMP's "fragmentation needed" / ICMPv6 "packet too
//! big", which path-MTU evidence needs), optionally only to or from given
//! ports and peer addresses, each accepted packet cut to the snap length.
//! Everything else stays in the kernel: nothing is copied for it.
//!
//! The program is written with symbolic jump targets and assembled here:
//! classic BPF's conditional jumps go only forward, by at most 255
//! instructions, so a list of ports (about 120) or peers (about 14) too long
//! for that is refused rather than cut.
//!
//! What it matches, and what not:
//! - IPv4 TCP by the protocol field; with a port list, non-first fragments
//!   (no TCP header) are refused, as tcpdump's `port` does.
//! - IPv6 TCP when TCP is the first next header: extension headers are
//!   not walked (they are rare on TCP flows; such packets are not seen).
//! - Ethernet frames by their EtherType at byte 12: VLAN tags the NIC does
//!   not strip hide the packet (most NICs strip them into metadata).
//! - Other links by the kernel's protocol of the packet (`SKF_AD_PROTOCOL`),
//!   with the IP header at byte 0.

use std::net::IpAddr;

use crate::sys::Insn;

/// Classic BPF opcodes (linux/bpf_common.h), the ones the program uses.
mod op {
    /// `ld [k]`: a 32-bit word at offset k.
    pub const LD_W_ABS: u16 = 0x20;
    /// `ldh [k]`.
    pub const LD_H_ABS: u16 = 0x28;
    /// `ldb [k]`.
    pub const LD_B_ABS: u16 = 0x30;
    /// `ldh [x + k]`.
    pub const LD_H_IND: u16 = 0x48;
    /// `ldxb 4 * ([k] & 0xf)`: an IPv4 header's length.
    pub const LDX_MSH: u16 = 0xb1;
    /// `jeq #k`.
    pub const JEQ: u16 = 0x15;
    /// `ja k`: an unconditional jump, 32-bit offset.
    pub const JA: u16 = 0x05;
    /// `jset #k`.
    pub const JSET: u16 = 0x45;
    /// `ret #k`.
    pub const RET: u16 = 0x06;
}

/// `SKF_AD_OFF`: loads at this offset and beyond read the packet's metadata.
const AD_OFF: u32 = 0xffff_f000;
/// `SKF_AD_PROTOCOL`: the packet's protocol (ETH_P_*, host order).
const AD_PROTOCOL: u32 = AD_OFF;
/// `SKF_AD_PKTTYPE`: PACKET_HOST, PACKET_OUTGOING, ...
const AD_PKTTYPE: u32 = AD_OFF + 4;
/// `PACKET_OUTGOING`.
const PACKET_OUTGOING: u32 = 4;
const ETH_P_IP: u32 = 0x0800;
const ETH_P_IPV6: u32 = 0x86dd;
const TCP: u32 = 6;
const ICMP: u32 = 1;
const ICMPV6: u32 = 58;
/// ICMP type 3 (unreachable) code 4 (fragmentation needed), as one u16.
const ICMP_FRAG_NEEDED: u32 = 0x0304;
/// ICMPv6 type 2 (packet too big).
const ICMPV6_TOO_BIG: u32 = 2;

/// Where the network header starts, and how its protocol is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Ethernet: the IP header at byte 14, the EtherType at byte 12.
    Ethernet,
    /// The IP header at byte 0 (raw IP links, `SOCK_DGRAM`), its protocol
    /// from the packet's metadata.
    Ip,
}

impl Framing {
    fn l3(self) -> u32 {
        match self {
            Framing::Ethernet => 14,
            Framing::Ip => 0,
        }
    }
}

/// What the kernel lets through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only these TCP ports, at either end (all when empty).
    pub ports: Vec<u16>,
    /// Only these addresses, at either end (all when empty).
    pub peers: Vec<IpAddr>,
    /// Bytes kept of each packet.
    pub snaplen: u32,
    /// Drop the outgoing copy of each packet (loopback shows every packet
    /// twice: leaving and arriving).
    pub skip_outgoing: bool,
}

/// The list of ports or peers makes a jump longer than classic BPF allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong;

/// A jump target.
#[derive(Debug, Clone, Copy)]
enum To {
    Next,
    L(Label),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Label(usize);

#[derive(Debug, Clone, Copy)]
enum Item {
    Stmt(u16, u32),
    Jump(u16, u32, To, To),
    Ja(Label),
    Mark(Label),
}

/// A program with symbolic labels.
#[derive(Debug, Default)]
struct Asm {
    items: Vec<Item>,
    labels: usize,
}

impl Asm {
    fn label(&mut self) -> Label {
        self.labels += 1;
        Label(self.labels - 1)
    }
    fn mark(&mut self, l: Label) {
        self.items.push(Item::Mark(l));
    }
    fn stmt(&mut self, code: u16, k: u32) {
        self.items.push(Item::Stmt(code, k));
    }
    fn jeq(&mut self, k: u32, jt: To, jf: To) {
        self.items.push(Item::Jump(op::JEQ, k, jt, jf));
    }

    /// Resolves the labels: every jump forward, within 255.
    fn assemble(&self) -> Result<Vec<Insn>, TooLong> {
        let mut at = vec![usize::MAX; self.labels];
        let mut n = 0;
        for item in &self.items {
            match item {
                Item::Mark(l) => at[l.0] = n,
                _ => n += 1,
            }
        }
        let mut out = Vec::with_capacity(n);
        for item in &self.items {
            let pc = out.len();
            let off = |t: To| -> Result<u8, TooLong> {
                match t {
                    To::Next => Ok(0),
                    To::L(l) => at[l.0]
                        .checked_sub(pc + 1)
                        .and_then(|d| u8::try_from(d).ok())
                        .ok_or(TooLong),
                }
            };
            match *item {
                Item::Mark(_) => {}
                Item::Stmt(code, k) => out.push(Insn {
                    code,
                    jt: 0,
                    jf: 0,
                    k,
                }),
                Item::Jump(code, k, jt, jf) => out.push(Insn {
                    code,
                    jt: off(jt)?,
                    jf: off(jf)?,
                    k,
                }),
                Item::Ja(l) => out.push(Insn {
                    code: op::JA,
                    jt: 0,
                    jf: 0,
                    k: at[l.0]
                        .checked_sub(pc + 1)
                        .and_then(|d| u32::try_from(d).ok())
                        .ok_or(TooLong)?,
                }),
            }
        }
        Ok(out)
    }
}

/// The program for `framing` and `sel`. Each family's section ends in
/// its own returns, and the dispatch reaches the sections with `ja` (a
/// 32-bit offset), so only a section's own lists bound its jumps.
pub fn program(framing: Framing, sel: &Selection) -> Result<Vec<Insn>, TooLong> {
    let mut a = Asm::default();
    let (v4, not4, v6, drop) = (a.label(), a.label(), a.label(), a.label());
    if sel.skip_outgoing {
        a.stmt(op::LD_W_ABS, AD_PKTTYPE);
        a.jeq(PACKET_OUTGOING, To::L(drop), To::Next);
    }
    match framing {
        Framing::Ethernet => a.stmt(op::LD_H_ABS, 12),
        Framing::Ip => a.stmt(op::LD_W_ABS, AD_PROTOCOL),
    }
    a.jeq(ETH_P_IP, To::Next, To::L(not4));
    a.items.push(Item::Ja(v4));
    a.mark(not4);
    a.jeq(ETH_P_IPV6, To::Next, To::L(drop));
    a.items.push(Item::Ja(v6));
    a.mark(drop);
    a.stmt(op::RET, 0);
    let l3 = framing.l3();

    a.mark(v4);
    section(&mut a, sel, |a, accept, drop| {
        ipv4(a, l3, sel, accept, drop)
    });
    a.mark(v6);
    section(&mut a, sel, |a, accept, drop| {
        ipv6(a, l3, sel, accept, drop)
    });
    a.assemble()
}

/// A family's section, followed by its own `ret #snaplen` and `ret #0`.
fn section(a: &mut Asm, sel: &Selection, body: impl FnOnce(&mut Asm, Label, Label)) {
    let (accept, drop) = (a.label(), a.label());
    body(a, accept, drop);
    a.mark(accept);
    a.stmt(op::RET, sel.snaplen.max(1));
    a.mark(drop);
    a.stmt(op::RET, 0);
}

fn ipv4(a: &mut Asm, l3: u32, sel: &Selection, accept: Label, drop: Label) {
    let (tcp, icmp) = (a.label(), a.label());
    a.stmt(op::LD_B_ABS, l3 + 9);
    a.jeq(TCP, To::L(tcp), To::Next);
    a.jeq(ICMP, To::L(icmp), To::L(drop));
    a.mark(icmp);
    a.stmt(op::LDX_MSH, l3);
    a.stmt(op::LD_H_IND, l3);
    a.jeq(ICMP_FRAG_NEEDED, To::L(accept), To::L(drop));

    a.mark(tcp);
    let v4: Vec<u32> = sel
        .peers
        .iter()
        .filter_map(|p| match p {
            IpAddr::V4(v) => Some(u32::from(*v)),
            IpAddr::V6(_) => None,
        })
        .collect();
    if !sel.peers.is_empty() && v4.is_empty() {
        // Only IPv6 peers were asked for.
        a.stmt(op::RET, 0);
        return;
    }
    let ports = a.label();
    for (i, at) in [l3 + 12, l3 + 16].into_iter().enumerate() {
        if v4.is_empty() {
            break;
        }
        a.stmt(op::LD_W_ABS, at);
        for (j, addr) in v4.iter().enumerate() {
            let last = i == 1 && j == v4.len() - 1;
            a.jeq(
                *addr,
                To::L(ports),
                if last { To::L(drop) } else { To::Next },
            );
        }
    }
    a.mark(ports);
    if sel.ports.is_empty() {
        a.items
            .push(Item::Jump(op::JEQ, 0, To::L(accept), To::L(accept)));
        return;
    }
    // A fragment after the first carries no TCP header.
    a.stmt(op::LD_H_ABS, l3 + 6);
    a.items
        .push(Item::Jump(op::JSET, 0x1fff, To::L(drop), To::Next));
    a.stmt(op::LDX_MSH, l3);
    port_match(a, op::LD_H_IND, l3, sel, accept, drop);
}

fn ipv6(a: &mut Asm, l3: u32, sel: &Selection, accept: Label, drop: Label) {
    let (tcp, icmp) = (a.label(), a.label());
    a.stmt(op::LD_B_ABS, l3 + 6);
    a.jeq(TCP, To::L(tcp), To::Next);
    a.jeq(ICMPV6, To::L(icmp), To::L(drop));
    a.mark(icmp);
    a.stmt(op::LD_B_ABS, l3 + 40);
    a.jeq(ICMPV6_TOO_BIG, To::L(accept), To::L(drop));

    a.mark(tcp);
    let v6: Vec<[u32; 4]> = sel
        .peers
        .iter()
        .filter_map(|p| match p {
            IpAddr::V6(v) => {
                let o = v.octets();
                Some(std::array::from_fn(|w| {
                    u32::from_be_bytes([o[4 * w], o[4 * w + 1], o[4 * w + 2], o[4 * w + 3]])
                }))
            }
            IpAddr::V4(_) => None,
        })
        .collect();
    if !sel.peers.is_empty() && v6.is_empty() {
        a.stmt(op::RET, 0);
        return;
    }
    let ports = a.label();
    for (i, at) in [l3 + 8, l3 + 24].into_iter().enumerate() {
        for (j, words) in v6.iter().enumerate() {
            let last = i == 1 && j == v6.len() - 1;
            let miss = a.label();
            for (w, word) in words.iter().enumerate() {
                a.stmt(op::LD_W_ABS, at + 4 * w as u32);
                let hit = if w == 3 { To::L(ports) } else { To::Next };
                a.jeq(*word, hit, To::L(miss));
            }
            a.mark(miss);
            if last {
                a.stmt(op::RET, 0);
            }
        }
    }
    a.mark(ports);
    if sel.ports.is_empty() {
        a.items
            .push(Item::Jump(op::JEQ, 0, To::L(accept), To::L(accept)));
        return;
    }
    port_match(a, op::LD_H_ABS, l3 + 40, sel, accept, drop);
}

/// Source port then destination port against each of `sel.ports`; `load`
/// with `at` reads the source port (absolute, or after the IPv4 header
/// length in X).
fn port_match(a: &mut Asm, load: u16, at: u32, sel: &Selection, accept: Label, drop: Label) {
    for (i, off) in [at, at + 2].into_iter().enumerate() {
        a.stmt(load, off);
        for (j, port) in sel.ports.iter().enumerate() {
            let last = i == 1 && j == sel.ports.len() - 1;
            a.jeq(
                u32::from(*port),
                To::L(accept),
                if last { To::L(drop) } else { To::Next },
            );
        }
    }
}

#[cfg(test)]
#[path = "bpf_tests.rs"]
mod tests;
