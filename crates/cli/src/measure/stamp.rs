//! `--timestamps[=FORMAT]`'s value: iperf3's default format, and the check
//! that strftime(3) can read a format given (the stamping itself is the
//! binary's text printer).

/// iperf3's format when `--timestamps` names none.
pub const DEFAULT_FORMAT: &str = "%c ";

/// Whether strftime can read all of `format`: a NUL byte would end it.
pub fn check(format: &str) -> Result<(), String> {
    if format.contains('\0') {
        return Err(format!(
            "invalid --timestamps format {format:?}: it holds a NUL byte"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_byte_is_refused() {
        assert!(check("a\0b").is_err() && check("%H:%M:%S ").is_ok());
    }
}
