//! `HOST:PORT` as `plumb handshake` takes it: the port is required, and a
//! literal IPv6 address goes in brackets (`[2001:db8::1]:22`).

/// Splits `HOST:PORT` into the host and a port in 1–65535, or says in one
/// phrase what is wrong.
pub fn parse_target(s: &str) -> Result<(String, u16), String> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, tail) = rest
            .split_once(']')
            .ok_or_else(|| format!("{s}: an IPv6 address needs its closing ]"))?;
        let p = tail
            .strip_prefix(':')
            .ok_or_else(|| format!("{s}: give the port, as [{h}]:PORT"))?;
        (h, p)
    } else {
        match s.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err(format!(
                    "{s}: put an IPv6 address in brackets, as [ADDR]:PORT"
                ))
            }
            Some((h, p)) => (h, p),
            None => return Err(format!("{s}: give the port, as HOST:PORT (e.g. {s}:445)")),
        }
    };
    if host.is_empty() {
        return Err(format!("{s}: the host is missing"));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{s}: the port must be a number from 1 to 65535"))?;
    if port == 0 {
        return Err(format!("{s}: port 0 is not a service's port (1 to 65535)"));
    }
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_are_split() {
        assert_eq!(
            parse_target("nas.example:445"),
            Ok(("nas.example".into(), 445))
        );
        assert_eq!(parse_target("198.18.0.2:22"), Ok(("198.18.0.2".into(), 22)));
        assert_eq!(parse_target("[::1]:8080"), Ok(("::1".into(), 8080)));
    }

    #[test]
    fn every_bad_form_is_one_clear_phrase() {
        for (bad, says) in [
            ("nas.example", "give the port"),
            ("nas.example:", "must be a number"),
            ("nas.example:0", "port 0"),
            ("nas.example:65536", "must be a number"),
            ("nas.example:ssh", "must be a number"),
            (":22", "host is missing"),
            ("::1:22", "brackets"),
            ("[::1]", "give the port"),
            ("[::1:22", "closing ]"),
        ] {
            let e = parse_target(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
