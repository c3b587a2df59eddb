//! Which peer program's wire protocol a test speaks: iperf3's (plumb's
//! own), iperf 2's or nuttcp's, and the client's `auto`, which tries them
//! in that order. Each tool's default port is where its stock server
//! listens.

use std::fmt;

/// A measurement tool whose wire protocol plumb speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Tool {
    /// iperf3's control connection and data streams (plumb's own).
    #[default]
    Iperf3,
    /// iperf 2's per-connection test header and UDP server report.
    Iperf2,
    /// nuttcp's control connection with a data connection beside it.
    Nuttcp,
}

/// The client's choice of peer: one tool, or each in turn until one answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoice {
    /// Speak this tool's protocol.
    One(Tool),
    /// Try iperf3, then iperf 2, then nuttcp, each on its default port.
    Auto,
}

impl Default for ToolChoice {
    /// iperf3's protocol, as a client that names no tool speaks.
    fn default() -> Self {
        ToolChoice::One(Tool::Iperf3)
    }
}

impl Tool {
    /// Every tool, in the order `auto` tries them.
    pub const ALL: [Tool; 3] = [Tool::Iperf3, Tool::Iperf2, Tool::Nuttcp];

    /// The name on the command line and in documents.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Iperf3 => "iperf3",
            Tool::Iperf2 => "iperf2",
            Tool::Nuttcp => "nuttcp",
        }
    }

    /// The port the tool's stock server listens on: iperf3's 5201, iperf
    /// 2's 5001, nuttcp's control port 5000 (its data port is the next one).
    pub fn default_port(self) -> u16 {
        match self {
            Tool::Iperf3 => 5201,
            Tool::Iperf2 => 5001,
            Tool::Nuttcp => 5000,
        }
    }

    /// Reads one tool's name.
    ///
    /// # Errors
    /// A name that is none of the three, quoted, with the accepted names.
    pub fn parse(s: &str) -> Result<Tool, String> {
        Tool::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("unknown tool '{s}' (accepted: iperf3, iperf2, nuttcp)"))
    }

    /// Reads a server's comma-separated list of tools, each once and each
    /// with its own port if given (`iperf3,iperf2=15001,nuttcp`).
    ///
    /// # Errors
    /// An empty list, an unknown name, a name given twice or a port that is
    /// not a number from 1 to 65535.
    pub fn parse_list(s: &str) -> Result<Vec<Listen>, String> {
        let mut out: Vec<Listen> = Vec::new();
        for part in s.split(',') {
            let (name, port) = match part.trim().split_once('=') {
                Some((n, p)) => (n, Some(parse_port(p)?)),
                None => (part.trim(), None),
            };
            let tool = Tool::parse(name)?;
            if out.iter().any(|l| l.tool == tool) {
                return Err(format!("tool '{tool}' given twice in '{s}'"));
            }
            out.push(Listen { tool, port });
        }
        Ok(out)
    }
}

/// One tool a server answers, on its own port or the tool's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listen {
    /// The tool whose clients are answered.
    pub tool: Tool,
    /// The port given with `TOOL=PORT`, if any.
    pub port: Option<u16>,
}

impl Listen {
    /// The port to listen on: the one given, else the tool's default.
    pub fn port(self) -> u16 {
        self.port.unwrap_or(self.tool.default_port())
    }
}

/// A port from 1 to 65535.
fn parse_port(p: &str) -> Result<u16, String> {
    match p.trim().parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("invalid port '{p}' (accepted: 1 to 65535)")),
    }
}

impl ToolChoice {
    /// Reads `iperf3`, `iperf2`, `nuttcp` or `auto`.
    ///
    /// # Errors
    /// Any other word, quoted, with the accepted ones.
    pub fn parse(s: &str) -> Result<ToolChoice, String> {
        if s == "auto" {
            return Ok(ToolChoice::Auto);
        }
        Tool::parse(s)
            .map(ToolChoice::One)
            .map_err(|_| format!("unknown tool '{s}' (accepted: iperf3, iperf2, nuttcp, auto)"))
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for t in Tool::ALL {
            assert_eq!(Tool::parse(t.name()), Ok(t));
            assert_eq!(ToolChoice::parse(t.name()), Ok(ToolChoice::One(t)));
        }
        assert_eq!(ToolChoice::parse("auto"), Ok(ToolChoice::Auto));
        assert!(ToolChoice::parse("iperf").is_err_and(|e| e.contains("'iperf'")));
        assert!(Tool::parse("auto").is_err());
    }

    #[test]
    fn lists() {
        let l = Tool::parse_list("iperf3,iperf2=15001, nuttcp").unwrap_or_default();
        let ports: Vec<(Tool, u16)> = l.iter().map(|l| (l.tool, l.port())).collect();
        assert_eq!(
            ports,
            [
                (Tool::Iperf3, 5201),
                (Tool::Iperf2, 15001),
                (Tool::Nuttcp, 5000)
            ]
        );
        assert!(Tool::parse_list("nuttcp=0").is_err_and(|e| e.contains("'0'")));
        assert!(Tool::parse_list("nuttcp=x").is_err());
        assert!(Tool::parse_list("iperf3,iperf3").is_err_and(|e| e.contains("twice")));
        assert!(Tool::parse_list("").is_err());
        assert!(Tool::parse_list("iperf3,,nuttcp").is_err());
    }
}
