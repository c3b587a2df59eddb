//! iperf3's `-F`: a sending stream's bytes read from a file instead of the
//! payload block, and a receiving stream's bytes written to one. Each
//! stream opens the file for itself, as iperf3's do.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::BorrowedFd;
use std::path::Path;

use crate::stream::write_some;

/// A file read a block at a time and written to a socket.
pub struct FileSource {
    file: File,
    buf: Vec<u8>,
    /// Bytes of `buf` read from the file.
    filled: usize,
    /// Bytes of them already written.
    start: usize,
    eof: bool,
}

impl FileSource {
    /// Opens `path` to send it in `block`-byte reads.
    ///
    /// # Errors
    /// The file cannot be opened for reading.
    pub fn open(path: &Path, block: usize) -> io::Result<FileSource> {
        Ok(FileSource {
            file: File::open(path)?,
            buf: vec![0; block.max(1)],
            filled: 0,
            start: 0,
            eof: false,
        })
    }

    /// The read size.
    pub fn block_len(&self) -> usize {
        self.buf.len()
    }

    /// Writes at most `want` bytes of the file to `fd`, reading the next
    /// block when the last is out; `Ok(0)` once the whole file is out.
    ///
    /// # Errors
    /// Reading the file or writing the socket failed.
    pub fn send(&mut self, fd: BorrowedFd<'_>, want: usize) -> io::Result<usize> {
        if self.start == self.filled && !self.eof {
            self.filled = read_full(&mut self.file, &mut self.buf)?;
            self.start = 0;
            self.eof = self.filled < self.buf.len();
        }
        if self.start == self.filled {
            return Ok(0);
        }
        let end = self.filled.min(self.start + want);
        let n = write_some(fd, &self.buf[self.start..end])?;
        self.start += n;
        Ok(n)
    }
}

/// Opens `path` for a receiving stream to write from its start (created
/// if missing; the client empties it once before the test).
///
/// # Errors
/// The file cannot be opened for writing.
pub fn open_for_writing(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Reads until `buf` is full or the file ends; how much it holds.
fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    #[test]
    fn a_file_goes_out_whole_then_says_zero() {
        let dir = std::env::temp_dir().join(format!("plumb-diskfile-{}", std::process::id()));
        let data: Vec<u8> = (0..100_003u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&dir, &data).expect("write the file");
        let l = TcpListener::bind("127.0.0.1:0").expect("listen");
        let tx = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (mut rx, _) = l.accept().expect("accept");
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            rx.read_to_end(&mut got).map(|_| got)
        });
        let mut src = FileSource::open(&dir, 4096).expect("open");
        let mut sent = 0;
        for _ in 0..100_000 {
            match src.send(tx.as_fd(), 1000).expect("send") {
                0 => break,
                n => sent += n,
            }
        }
        drop(tx);
        let got = reader.join().expect("reader").expect("read");
        let _ = std::fs::remove_file(&dir);
        assert_eq!(sent, data.len());
        assert_eq!(got, data);
    }
}
