//! The `plumb` command lines the README and `docs/` show, read from their
//! command blocks, and how a test runs each of them here.
//!
//! A command block is a fenced block with no language or `sh`; blocks
//! marked `text` hold output and are not read. A line is a command when it
//! starts with `plumb` (or `$ plumb`) and a subcommand or a flag; a line
//! ending in `\` goes on on the next. A trailing comment (`#` starting a
//! word) is the doc's, not the shell's.

use std::path::{Path, PathBuf};

/// One command line and where the docs show it.
#[derive(Debug, Clone)]
pub struct DocLine {
    /// `docs/why.md:14`, each place the same line is shown.
    pub places: Vec<String>,
    /// The command as shown, comment removed.
    pub shown: String,
}

/// The subcommands a command line may name after `plumb`.
const SUBCOMMANDS: &[&str] = &[
    "calc",
    "why",
    "top",
    "lab",
    "demo",
    "report",
    "exporter",
    "handshake",
];

/// Every command line of README.md, docs/*.md and the `Examples:` of each
/// `--help` (`help` maps a subcommand, "" for plumb's own, to its text),
/// each once, in the order first shown.
pub fn all(root: &Path, help: impl Fn(&str) -> String) -> Vec<DocLine> {
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out: Vec<DocLine> = Vec::new();
    for f in files {
        let name = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        let text = std::fs::read_to_string(&f).expect("doc file");
        for (line, shown) in in_file(&text) {
            add(&mut out, format!("{name}:{line}"), shown);
        }
    }
    for sub in std::iter::once("").chain(SUBCOMMANDS.iter().copied()) {
        let name = format!("plumb {sub} --help").replace("  ", " ");
        for shown in in_help(&help(sub)) {
            add(&mut out, name.clone(), shown);
        }
    }
    out
}

fn add(out: &mut Vec<DocLine>, place: String, shown: String) {
    match out.iter_mut().find(|d| d.shown == shown) {
        Some(d) => d.places.push(place),
        None => out.push(DocLine {
            places: vec![place],
            shown,
        }),
    }
}

/// The command lines of a `--help`'s `Examples:`, up to its first blank
/// line; what follows a run of two spaces is the example's comment.
fn in_help(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut more = false;
    let examples = text
        .lines()
        .skip_while(|l| l.trim() != "Examples:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty());
    for l in examples {
        let (body, next) = continued(help_comment(l.trim()).trim_end());
        match out.last_mut() {
            Some(last) if more => {
                last.push(' ');
                last.push_str(body);
            }
            _ if is_command(body) => out.push(body.to_string()),
            _ => {}
        }
        more = next;
    }
    out
}

/// An example up to its comment: two spaces outside quotes.
fn help_comment(line: &str) -> &str {
    cut_outside_quotes(line, |b, i| b[i] == b' ' && b.get(i + 1) == Some(&b' '))
}

/// `line` up to the first byte outside quotes where `starts(bytes, i)`
/// says a comment begins.
fn cut_outside_quotes(line: &str, starts: impl Fn(&[u8], usize) -> bool) -> &str {
    let (mut single, mut double) = (false, false);
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            _ if !single && !double && starts(bytes, i) => return &line[..i],
            _ => {}
        }
    }
    line
}

/// The command lines of one Markdown text, with their line numbers.
fn in_file(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut block: Option<bool> = None; // Some(reads commands) inside a fence
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        if let Some(lang) = raw.strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => Some(matches!(lang.trim(), "" | "sh")),
            };
            continue;
        }
        if block != Some(true) {
            continue;
        }
        let line = strip_comment(raw).trim().to_string();
        if let Some((n, mut acc)) = pending.take() {
            let (body, more) = continued(&line);
            acc.push(' ');
            acc.push_str(body);
            if more {
                pending = Some((n, acc));
            } else {
                out.push((n, acc));
            }
            continue;
        }
        let line = line.strip_prefix("$ ").unwrap_or(&line);
        if !is_command(line) {
            continue;
        }
        let (body, more) = continued(line);
        if more {
            pending = Some((i + 1, body.to_string()));
        } else {
            out.push((i + 1, body.to_string()));
        }
    }
    out
}

/// The line without its continuation backslash, and whether there was one.
fn continued(line: &str) -> (&str, bool) {
    match line.strip_suffix('\\') {
        Some(body) => (body.trim_end(), true),
        None => (line, false),
    }
}

/// `plumb` followed by a subcommand or a flag.
fn is_command(line: &str) -> bool {
    let mut words = line.split_whitespace();
    words.next() == Some("plumb")
        && words
            .next()
            .is_some_and(|w| w.starts_with('-') || SUBCOMMANDS.contains(&w))
}

/// The line up to a comment: `#` starting a word, outside quotes, as the
/// shell reads it.
fn strip_comment(line: &str) -> &str {
    cut_outside_quotes(line, |b, i| {
        b[i] == b'#' && i > 0 && b[i - 1].is_ascii_whitespace()
    })
}

/// How a command is run here: in its own lab (it builds namespaces), or in
/// the test's scene, to its end or, for one that runs until stopped, until
/// it shows it works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `plumb lab`, `plumb demo`: they build their own namespaces.
    Lab,
    /// Runs in the scene's near namespace and ends by itself.
    Ends,
    /// Runs until stopped (`plumb -s`, `plumb exporter`, `plumb top`
    /// without `-n`, `plumb lab --hold`): started, checked, then
    /// interrupted as a user's Ctrl-C would.
    Serves,
}

impl DocLine {
    /// How the test runs this line.
    pub fn kind(&self) -> Kind {
        let w: Vec<&str> = self.shown.split_whitespace().collect();
        let serves = self.shown.ends_with('&')
            || w.get(1) == Some(&"exporter")
            || (w.get(1) == Some(&"-s") && w.len() == 2)
            || (w.get(1) == Some(&"top") && !w.contains(&"-n"))
            || w.contains(&"--hold");
        match w.get(1) {
            _ if serves => Kind::Serves,
            Some(&"lab") | Some(&"demo") => Kind::Lab,
            _ => Kind::Ends,
        }
    }

    /// The line as this test runs it: the reader's hosts (`HOST`,
    /// `*.example`) become the scene's far address, durations shrink to
    /// one second (`-t N`, `--for N`, `top -n N` to two readings; a test
    /// against `HOST` or a `demo` that names no length gets `-t 1` in place
    /// of its default 10 s, or 5 s for `why`), and a trailing `&` goes (the test
    /// holds the process itself).
    pub fn as_run(&self, far: &str) -> String {
        let mut words: Vec<String> = Vec::new();
        let bounded = [" -t ", " -n ", " -k "]
            .iter()
            .any(|f| self.shown.contains(f));
        let mut it = self.shown.split(' ').peekable();
        while let Some(w) = it.next() {
            // A test of no stated length: one second of it.
            let unbounded = match w {
                "HOST" => Some(far),
                "demo" if words.len() == 1 => Some("demo"),
                _ => None,
            };
            if let Some(first) = unbounded.filter(|_| !bounded) {
                words.extend([first.to_string(), "-t".into(), "1".into()]);
                continue;
            }
            let shrink = match w {
                "-t" | "--for" => Some("1"),
                "-n" if self.shown.starts_with("plumb top") => Some("2"),
                _ => None,
            };
            match (shrink, it.peek()) {
                (Some(v), Some(n)) if n.parse::<u32>().is_ok() => {
                    words.push(w.to_string());
                    words.push(v.to_string());
                    it.next();
                }
                _ => words.push(host(w, far)),
            }
        }
        let cmd = words.join(" ");
        cmd.strip_suffix('&')
            .map_or(cmd.clone(), |c| c.trim_end().to_string())
    }
}

/// A word with the reader's host name replaced by `far`.
fn host(word: &str, far: &str) -> String {
    if word == "HOST" {
        return far.to_string();
    }
    match word.split_once(".example") {
        Some((name, rest)) if !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase()) => {
            format!("{far}{rest}")
        }
        _ => word.to_string(),
    }
}
