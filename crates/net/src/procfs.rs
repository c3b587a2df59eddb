//! Reading the kernel's small text files (`/proc`, `/sys`, `/sys/fs/cgroup`)
//! in as few system calls as the file allows.
//!
//! Why: these files report a size of 0, so `std::fs::read_to_string` asks
//! for their size (`statx`) and then reads them 32 bytes at first, doubling:
//! `/proc/stat` took ten system calls. A test reads a few of them between
//! exec and its first data write, and `bench/run`'s start-up row (under
//! strace, which stops at every system call) counts each one. Here a file
//! is opened, read into 4 KiB (more only if it is longer) and closed: four
//! calls for a file that fits.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The first read's size: every file plumb reads this way fits in it on
/// the machines it runs on (`/proc/self/mountinfo` of a busy container
/// host may not, and takes more reads).
const FIRST_READ: usize = 4096;

/// The whole text of the file at `path`; an error as `std::fs::read_to_string`
/// gives it (not found, permission, or `InvalidData` when it is not UTF-8).
pub fn read_text(path: impl AsRef<Path>) -> io::Result<String> {
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; FIRST_READ];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proc_file_reads_as_std_reads_it() {
        // /proc/self/cmdline is this test binary's: the same at both reads.
        let std = std::fs::read_to_string("/proc/self/cmdline").expect("the scenario's file");
        assert!(!std.is_empty(), "the scenario needs a non-empty file");
        assert_eq!(
            read_text("/proc/self/cmdline").expect("the scenario's file"),
            std
        );
    }

    #[test]
    fn a_file_longer_than_the_first_read_is_read_whole() {
        let dir = std::env::temp_dir().join(format!("plumb-procfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the scenario's file");
        let path = dir.join("long");
        let text: String = (0..3 * FIRST_READ)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        std::fs::write(&path, &text).expect("the scenario's file");
        assert!(
            text.len() > 2 * FIRST_READ,
            "the scenario needs more than two first reads"
        );
        let got = read_text(&path);
        std::fs::remove_dir_all(&dir).expect("the scenario's file");
        assert_eq!(got.expect("the scenario's file"), text);
    }

    #[test]
    fn errors_are_those_of_std() {
        let missing = read_text("/proc/self/no-such-file").expect_err("an error");
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let dir = std::env::temp_dir().join(format!("plumb-procfs-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the scenario's file");
        let path = dir.join("bin");
        std::fs::write(&path, [0xff, 0xfe, 0x00]).expect("the scenario's file");
        let got = read_text(&path);
        std::fs::remove_dir_all(&dir).expect("the scenario's file");
        assert_eq!(
            got.expect_err("an error").kind(),
            io::ErrorKind::InvalidData
        );
    }
}
