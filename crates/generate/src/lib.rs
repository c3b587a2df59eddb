//! The man pages and shell completions the Debian package ships
//! (`scripts/package`, docs/packaging.md), made from the clap definitions
//! that parse plumb's command line, so neither can drift from `--help`:
//! [`man_pages`] writes `plumb.1` and a page per subcommand, [`completions`]
//! bash's, zsh's and fish's. The caller hands in the command and the
//! version and date the pages carry ([`Stamp`]); nothing here touches files.

use clap::builder::Resettable;
use clap_complete::Shell;

/// What a man page's header says besides the command: the version and the
/// commit's date (empty when unknown).
#[derive(Debug, Clone, Copy)]
pub struct Stamp<'a> {
    /// `0.1.0`.
    pub version: &'a str,
    /// The commit's date, `2026-11-28`, or empty.
    pub date: &'a str,
}

/// `plumb.1`, then `plumb-SUB.1` for each subcommand, as file name and roff.
/// Each page shows what `plumb [SUB] --help` shows: the same command, so the
/// flags a subcommand hides from its help (`plumb why` has no server flags)
/// are left out of its page too.
pub fn man_pages(root: clap::Command, stamp: &Stamp) -> Vec<(String, Vec<u8>)> {
    let mut root = root.disable_help_subcommand(true);
    root.build();
    let subs: Vec<clap::Command> = root
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let mut pages = vec![page(&root, stamp, &see_also_root(&subs))];
    for sub in &subs {
        pages.push(page(sub, stamp, "\\fBplumb\\fR(1)"));
    }
    pages
}

/// One page: clap_mangen's sections, then SEE ALSO.
fn page(cmd: &clap::Command, stamp: &Stamp, see_also: &str) -> (String, Vec<u8>) {
    // An empty date would shift the header's later fields one place left
    // (the date would read "plumb 0.1.0"); `\&` is roff's empty word.
    let date = match stamp.date {
        "" => "\\&",
        d => d,
    };
    let man = clap_mangen::Man::new(cmd.clone())
        .title(
            cmd.get_display_name()
                .unwrap_or(cmd.get_name())
                .to_uppercase(),
        )
        .date(date)
        .source(format!("plumb {}", stamp.version))
        .manual("User Commands");
    let mut text = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = man.render(&mut text);
    let mut text = examples(&String::from_utf8_lossy(&text));
    // No hyphenation and a ragged right edge: groff would otherwise break
    // flag names across lines (`--con‐nect-timeout`) in SYNOPSIS and the
    // descriptions, and a broken flag cannot be searched for or copied.
    if let Some(end) = text
        .find("\n.TH ")
        .and_then(|at| text[at + 1..].find('\n').map(|n| at + 2 + n))
    {
        text.insert_str(end, ".nh\n.ad l\n");
    }
    text.push_str(&format!(
        ".SH \"SEE ALSO\"\n{see_also}\n.PP\nThe documentation in /usr/share/doc/plumb/.\n"
    ));
    (man.get_filename(), text.into_bytes())
}

/// clap_mangen heads `after_help` EXTRA and fills its lines into
/// paragraphs; every plumb command's is its examples, headed "Examples:" in
/// `--help`, which the section's name says, in columns that only unfilled
/// lines (`.nf`) keep.
fn examples(page: &str) -> String {
    let Some((head, rest)) = page.split_once("\n.SH EXTRA\n") else {
        return page.to_string();
    };
    let (block, tail) = match rest.split_once("\n.SH ") {
        Some((block, tail)) => (block, format!("\n.SH {tail}")),
        None => (rest.trim_end_matches('\n'), "\n".to_string()),
    };
    let block = match block.split_once('\n') {
        Some((first, after)) if first.starts_with("Example") => after,
        _ => block,
    };
    format!("{head}\n.SH EXAMPLES\n.nf\n{block}\n.fi{tail}")
}

/// plumb(1)'s SEE ALSO: every subcommand's page, by name, and iperf3's.
fn see_also_root(subs: &[clap::Command]) -> String {
    let mut names: Vec<&str> = subs.iter().map(clap::Command::get_name).collect();
    names.sort_unstable();
    let mut refs: Vec<String> = names
        .iter()
        .map(|name| format!("\\fBplumb\\-{name}\\fR(1)"))
        .collect();
    refs.push("\\fBiperf3\\fR(1)".into());
    refs.join(",\n")
}

/// Completions for bash, zsh and fish, named as Debian's shells look them
/// up: `plumb` in bash-completion's directory, `_plumb` in zsh's, and
/// `plumb.fish` in fish's.
pub fn completions(root: clap::Command) -> Vec<(String, Vec<u8>)> {
    let mut root = root;
    root.build();
    [
        (Shell::Bash, "plumb"),
        (Shell::Zsh, "_plumb"),
        (Shell::Fish, "plumb.fish"),
    ]
    .into_iter()
    .map(|(shell, name)| {
        let mut cmd = visible(&root);
        let mut text = Vec::new();
        clap_complete::generate(shell, &mut cmd, "plumb", &mut text);
        (name.to_string(), text)
    })
    .collect()
}

/// The command line as completions offer it: without the flags and
/// subcommands `--help` hides (clap_complete's generators list hidden ones
/// too). Only what completion reads is kept: names, help, values; the
/// relations between flags (conflicts, requirements, groups) go, since a
/// hidden flag they name is no longer there.
fn visible(cmd: &clap::Command) -> clap::Command {
    // clap (without its `string` feature, which every parse would pay for)
    // names commands with `&'static str` only; this runs once, in a process
    // that exits after writing the files.
    let name: &'static str = Box::leak(cmd.get_name().into());
    let aliases: Vec<&'static str> = cmd
        .get_visible_aliases()
        .map(|a| &*Box::leak(Box::<str>::from(a)))
        .collect();
    let mut out = clap::Command::new(name)
        .disable_help_flag(true)
        .disable_version_flag(true)
        .disable_help_subcommand(true)
        .visible_aliases(aliases);
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        out = out.arg(
            arg.clone()
                .conflicts_with(Resettable::Reset)
                .requires(Resettable::Reset)
                .overrides_with(Resettable::Reset)
                .group(Resettable::Reset),
        );
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out = out.subcommand(visible(sub));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction, Command};

    const STAMP: Stamp<'static> = Stamp {
        version: "0.1.0",
        date: "2026-11-28",
    };

    /// A command line shaped like plumb's: a hidden flag on the root, a
    /// subcommand with examples and a hidden flag of its own.
    fn command() -> Command {
        let flag = |name: &'static str| Arg::new(name).long(name).action(ArgAction::SetTrue);
        Command::new("plumb")
            .about("Measures a path")
            .arg(flag("rwin"))
            .arg(flag("generate").hide(true))
            .subcommand(
                Command::new("why")
                    .about("What limits a transfer")
                    .arg(flag("rwin"))
                    .arg(flag("max-tests").hide(true))
                    .after_help("Examples:\n  plumb why host      explain a test"),
            )
            .subcommand(Command::new("secret").hide(true))
    }

    fn text(files: &[(String, Vec<u8>)], name: &str) -> String {
        let (_, t) = files
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no {name}"));
        String::from_utf8_lossy(t).into_owned()
    }

    #[test]
    fn a_page_for_plumb_and_each_shown_subcommand() {
        let pages = man_pages(command(), &STAMP);
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["plumb.1", "plumb-why.1"]);
        let why = text(&pages, "plumb-why.1");
        assert!(
            why.contains("plumb\\-why \\- What limits a transfer"),
            "{why}"
        );
        assert!(why.contains("\\-\\-rwin") && !why.contains("\\-\\-max\\-tests"));
        assert!(why.contains("\n.SH EXAMPLES\n.nf\n"), "{why}");
        assert!(
            why.contains("plumb 0.1.0") && why.contains("2026-11-28"),
            "{why}"
        );
        let root = text(&pages, "plumb.1");
        assert!(
            !root.contains("\\-\\-generate"),
            "the hidden flag is on the page"
        );
        assert!(root.contains("\n.nh\n.ad l\n.SH NAME"), "hyphenation is on");
        assert!(
            root.contains("\\fBplumb\\-why\\fR(1),\n\\fBiperf3\\fR(1)"),
            "{root}"
        );
    }

    #[test]
    fn completions_leave_out_what_help_hides() {
        let files = completions(command());
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["plumb", "_plumb", "plumb.fish"]);
        for (name, _) in &files {
            let t = text(&files, name);
            assert!(t.contains("rwin"), "{name}");
            assert!(!t.contains("generate") && !t.contains("secret"), "{name}");
        }
        let fish = text(&files, "plumb.fish");
        assert!(!fish.contains("max-tests"), "{fish}");
    }
}
