//! iperf3's `-F NAME` on a client: the sending streams send the file's
//! bytes, the receiving ones (`-R`) write theirs to it. As iperf3, TCP
//! only, and with no `-t`, `-n` or `-k` the file's size is the test's byte
//! count. The file is checked (and with `-R` emptied) before the test, so
//! a name that cannot be read or written is one line, not a failed test.

use std::path::Path;

use plumb_net::config::TestSpec;

/// `-F` and the flags it is checked against.
pub struct FileFlags<'a> {
    /// `-F NAME`.
    pub file: Option<&'a Path>,
    /// `-u`.
    pub udp: bool,
    /// `--bidir`.
    pub bidir: bool,
    /// `--rr`, `--crr` or `--latency`.
    pub latency_test: bool,
    /// `-t`, `-n` or `-k`.
    pub end_given: bool,
    /// `-R`.
    pub reverse: bool,
}

/// Checks `-F` against the other flags and the file, and puts it in `t`.
pub fn apply(a: &FileFlags<'_>, t: &mut TestSpec) -> Result<(), String> {
    let Some(path) = a.file else {
        return Ok(());
    };
    let name = path.display();
    if a.udp {
        return Err("-F sends a file over TCP only (iperf3 refuses -F with -u too)".into());
    }
    if a.bidir {
        return Err(
            "-F with --bidir would read and write the one file; give -F with or without -R".into(),
        );
    }
    if a.latency_test {
        return Err("-F belongs to a throughput test, not --rr, --crr or --latency".into());
    }
    if !a.end_given {
        // iperf3's rule: the file's size ends the test (a file that cannot
        // be read leaves the default time; the check below names it).
        if let Some(n) = std::fs::metadata(path)
            .ok()
            .map(|m| m.len())
            .filter(|&n| n > 0)
        {
            t.bytes = n;
        }
    }
    if a.reverse {
        std::fs::File::create(path).map_err(|e| format!("-F {name}: cannot write it: {e}"))?;
    } else {
        readable(path).map_err(|e| format!("-F {name}: cannot read it: {e}"))?;
    }
    t.file = Some(path.to_path_buf());
    Ok(())
}

/// Whether `path` opens for reading and is not a directory.
fn readable(path: &Path) -> std::io::Result<()> {
    let f = std::fs::File::open(path)?;
    if f.metadata()?.is_dir() {
        return Err(std::io::Error::other("a directory"));
    }
    Ok(())
}
