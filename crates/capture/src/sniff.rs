//! Telling a capture from other files by its first bytes, so that one flag
//! (`plumb why --from`, `plumb report`) takes a `-J` document or a capture.

/// Whether `head`, the first bytes of a file, start a capture this crate
/// reads: pcap (either byte order, micro- or nanosecond), pcapng, or gzip
/// (whose content is checked only when it is read: a text document is never
/// gzip-compressed by plumb or iperf3).
pub fn is_capture(head: &[u8]) -> bool {
    matches!(
        head,
        [0x1f, 0x8b, ..]
            | [0x0a, 0x0d, 0x0d, 0x0a, ..]
            | [0xa1, 0xb2, 0xc3, 0xd4, ..]
            | [0xd4, 0xc3, 0xb2, 0xa1, ..]
            | [0xa1, 0xb2, 0x3c, 0x4d, ..]
            | [0x4d, 0x3c, 0xb2, 0xa1, ..]
            | [0xa1, 0xb2, 0xcd, 0x34, ..]
            | [0x34, 0xcd, 0xb2, 0xa1, ..]
    )
}

/// Whether the file at `path` starts like a capture; a file that cannot be
/// read is not one (the caller's own read then says why).
pub fn file_is_capture(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4];
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let n = f.read(&mut head).unwrap_or(0);
    is_capture(&head[..n])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_and_documents_are_told_apart() {
        assert!(is_capture(&[0x0a, 0x0d, 0x0d, 0x0a, 0x1c]));
        assert!(is_capture(&[0xd4, 0xc3, 0xb2, 0xa1]));
        assert!(is_capture(&[0x4d, 0x3c, 0xb2, 0xa1]));
        assert!(is_capture(&[0x1f, 0x8b, 0x08]));
        assert!(!is_capture(b"{\n  \"start\""));
        assert!(!is_capture(b""));
        assert!(!is_capture(&[0x0a, 0x0d]));
    }
}
