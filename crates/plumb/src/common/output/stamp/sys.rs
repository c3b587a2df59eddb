//! The local time in strftime(3)'s words: libc's `time`, `localtime_r` and
//! `strftime`, which read the time zone as iperf3 does (`TZ`,
//! `/etc/localtime`) and take its formats unchanged.
#![allow(unsafe_code)]

use std::ffi::CStr;

/// Now, formatted by `format`; empty when the result would not fit in 256
/// bytes (strftime's own answer for that).
pub fn local_now(format: &CStr) -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `tm` is plain data that localtime_r fills; time(NULL) writes
    // nowhere; strftime writes at most `buf.len()` bytes into `buf` and
    // reads the NUL-terminated `format`.
    let n = unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return String::new();
        }
        libc::strftime(buf.as_mut_ptr().cast(), buf.len(), format.as_ptr(), &tm)
    };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}
