//! The sysctls of this host that decide which options its own SYN offers:
//! the connect path can only see the peer answer an option this host asked
//! for.

use std::collections::BTreeMap;

/// The sysctls read, as paths under `/proc/sys`.
const OFFER_SYSCTLS: [&str; 4] = [
    "net/ipv4/tcp_window_scaling",
    "net/ipv4/tcp_sack",
    "net/ipv4/tcp_timestamps",
    "net/ipv4/tcp_ecn",
];

/// [`OFFER_SYSCTLS`] of this host, keyed by dotted name
/// (`net.ipv4.tcp_sack`), each value with its whitespace runs collapsed to
/// one space; a sysctl that is missing or unreadable (a container may hide
/// it) is left out.
pub(super) fn read() -> BTreeMap<String, String> {
    OFFER_SYSCTLS
        .iter()
        .filter_map(|rel| {
            let text = std::fs::read_to_string(format!("/proc/sys/{rel}")).ok()?;
            let value = text.split_whitespace().collect::<Vec<_>>().join(" ");
            Some((rel.replace('/', "."), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dotted_and_values_trimmed() {
        let got = read();
        for (name, value) in &got {
            assert!(name.starts_with("net.ipv4.tcp_"), "{name}");
            assert_eq!(value.trim(), value, "{name}");
            assert!(!value.is_empty(), "{name}");
        }
        // Linux has had all four since 2.6; a test host hides none of them
        // unless /proc/sys is not mounted at all.
        if std::path::Path::new("/proc/sys/net/ipv4").is_dir() {
            assert_eq!(got.len(), OFFER_SYSCTLS.len(), "{got:?}");
        }
    }
}
