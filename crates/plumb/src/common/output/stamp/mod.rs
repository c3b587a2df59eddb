//! iperf3's line prefixes on the text output: `--timestamps[=FORMAT]`, the
//! time each line was written in strftime(3)'s FORMAT (iperf3's default,
//! `"%c "`), then `-T TITLE` as `TITLE:  `, in iperf3's order.

mod sys;

use std::ffi::CString;
use std::io::{self, Write};

/// A writer that starts each line with the time and the title.
pub struct Stamped<W: Write> {
    out: W,
    format: Option<CString>,
    title: Option<String>,
    at_line_start: bool,
}

impl<W: Write> Stamped<W> {
    /// `out`, each line stamped with the time in `format` (read up to a
    /// NUL byte, which `plumb_cli::measure::stamp::check` refuses) and then `title`.
    pub fn new(out: W, format: Option<&str>, title: Option<&str>) -> Self {
        let format = format.map(|f| {
            let upto = f.split('\0').next().unwrap_or_default();
            CString::new(upto).unwrap_or_default()
        });
        Stamped {
            out,
            format,
            title: title.map(|t| format!("{t}:  ")),
            at_line_start: true,
        }
    }
}

impl<W: Write> Write for Stamped<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while !rest.is_empty() {
            if self.at_line_start {
                if let Some(f) = &self.format {
                    self.out.write_all(sys::local_now(f).as_bytes())?;
                }
                if let Some(t) = &self.title {
                    self.out.write_all(t.as_bytes())?;
                }
                self.at_line_start = false;
            }
            let line = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |i| i + 1);
            self.out.write_all(&rest[..line])?;
            self.at_line_start = rest[line - 1] == b'\n';
            rest = &rest[line..];
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_starts_with_the_stamp_once() {
        let mut s = Stamped::new(Vec::new(), Some("T "), None);
        s.write_all(b"one\ntw").expect("write");
        s.write_all(b"o\n\nthree\n").expect("write");
        let text = String::from_utf8(s.out).expect("utf-8");
        assert_eq!(text, "T one\nT two\nT \nT three\n");
        let mut y = Stamped::new(Vec::new(), Some("%Y|"), Some("t"));
        y.write_all(b"x\n").expect("write");
        let year = String::from_utf8(y.out).expect("utf-8");
        assert!(
            year.len() == 11 && year.ends_with("|t:  x\n") && year.starts_with("20"),
            "{year}"
        );
    }
}
