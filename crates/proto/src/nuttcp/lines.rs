//! Splits the control connection's bytes into lines, refusing a line longer
//! than [`MAX_LINE`](super::MAX_LINE) or one that is not text.

/// Bytes in, complete lines out.
#[derive(Debug, Default)]
pub struct Lines {
    buf: Vec<u8>,
}

impl Lines {
    /// An empty splitter.
    pub fn new() -> Lines {
        Lines::default()
    }

    /// Takes bytes read from the peer.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete line without its `\n` (and `\r`), if one is in.
    ///
    /// # Errors
    /// A line over the cap (also when its end has not come yet) or one that
    /// is not UTF-8, as one sentence.
    pub fn next_line(&mut self) -> Result<Option<String>, String> {
        let Some(end) = self.buf.iter().position(|&b| b == b'\n') else {
            if self.buf.len() > super::MAX_LINE {
                return Err(format!(
                    "nuttcp peer sent a line over {} bytes",
                    super::MAX_LINE
                ));
            }
            return Ok(None);
        };
        if end > super::MAX_LINE {
            return Err(format!(
                "nuttcp peer sent a line over {} bytes",
                super::MAX_LINE
            ));
        }
        let raw: Vec<u8> = self.buf.drain(..=end).collect();
        let text = std::str::from_utf8(&raw[..end])
            .map_err(|_| "nuttcp peer sent a line that is not text".to_string())?;
        if text
            .chars()
            .any(|c| c.is_control() && c != '\r' && c != '\t')
        {
            return Err("nuttcp peer sent a line with control characters".into());
        }
        Ok(Some(text.trim_end_matches('\r').to_string()))
    }

    /// Bytes held that are not yet a whole line.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_caps() {
        let mut l = Lines::new();
        l.push(b"HELO nuttcp v6.1.2\nOK v6");
        assert_eq!(l.next_line(), Ok(Some("HELO nuttcp v6.1.2".into())));
        assert_eq!(l.next_line(), Ok(None));
        l.push(b".1.2\r\n");
        assert_eq!(l.next_line(), Ok(Some("OK v6.1.2".into())));
        l.push(&[b'x'; 3000]);
        assert!(l.next_line().is_err_and(|e| e.contains("over 2048")));
        let mut l = Lines::new();
        l.push(b"\xff\xfe\n");
        assert!(l.next_line().is_err_and(|e| e.contains("not text")));
        let mut l = Lines::new();
        l.push(b"a\x00b\n");
        assert!(l.next_line().is_err_and(|e| e.contains("control")));
    }
}
