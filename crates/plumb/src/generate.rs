//! `plumb --generate man DIR` and `plumb --generate completions DIR` (hidden
//! from `--help`): the man pages and shell completions the Debian package
//! ships (`scripts/package`, docs/packaging.md), made from the same clap
//! definitions that parse the command line, so neither can drift from
//! `--help`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::builder::Resettable;
use clap_complete::Shell;

use crate::usage::usage_error;

/// Writes the files `what` names into `dir` (created if missing), made from
/// `root`, the command line as `--help` shows it.
pub fn run(what: &[String], root: clap::Command) -> anyhow::Result<ExitCode> {
    let [what, dir] = what else {
        return Ok(usage_error("--generate takes WHAT and DIR"));
    };
    let files = match what.as_str() {
        "man" => man_pages(root),
        "completions" => completions(root),
        _ => {
            return Ok(usage_error(format!(
                "--generate {what}: say man or completions"
            )))
        }
    };
    let dir = Path::new(dir);
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `plumb.1`, then `plumb-SUB.1` for each subcommand, as file name and roff.
/// Each page shows what `plumb [SUB] --help` shows: the same command, so the
/// flags a subcommand hides from its help (`plumb why` has no server flags)
/// are left out of its page too.
fn man_pages(root: clap::Command) -> Vec<(String, Vec<u8>)> {
    let mut root = root.disable_help_subcommand(true);
    root.build();
    let subs: Vec<clap::Command> = root
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let mut pages = vec![page(&root, &see_also_root(&subs))];
    for sub in &subs {
        pages.push(page(sub, "\\fBplumb\\fR(1)"));
    }
    pages
}

/// One page: clap_mangen's sections, then SEE ALSO.
fn page(cmd: &clap::Command, see_also: &str) -> (String, Vec<u8>) {
    // An empty date would shift the header's later fields one place left
    // (the date would read "plumb 0.1.0"); `\&` is roff's empty word.
    let date = match env!("PLUMB_COMMIT_DATE") {
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
        .source(format!("plumb {}", env!("CARGO_PKG_VERSION")))
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
fn completions(root: clap::Command) -> Vec<(String, Vec<u8>)> {
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

    fn text(files: &[(String, Vec<u8>)], name: &str) -> String {
        let (_, t) = files
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no {name}"));
        String::from_utf8_lossy(t).into_owned()
    }

    #[test]
    fn a_page_for_plumb_and_each_subcommand() {
        let pages = man_pages(crate::cli::command());
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        for want in ["plumb.1", "plumb-why.1", "plumb-lab.1", "plumb-server.1"] {
            assert!(names.contains(&want), "{want} not in {names:?}");
        }
        assert!(!names.contains(&"plumb-help.1"), "{names:?}");
        let why = text(&pages, "plumb-why.1");
        assert!(
            why.contains("plumb\\-why \\- What limits a transfer"),
            "{why}"
        );
        assert!(why.contains("\\-\\-rwin") && !why.contains("\\-\\-max\\-tests"));
        let root = text(&pages, "plumb.1");
        assert!(
            !root.contains("\\-\\-generate"),
            "the hidden flag is on the page"
        );
        assert!(root.contains("\n.nh\n.ad l\n.SH NAME"), "hyphenation is on");
    }

    #[test]
    fn completions_leave_out_what_help_hides() {
        let files = completions(crate::cli::command());
        for (name, _) in &files {
            let t = text(&files, name);
            assert!(t.contains("rwin"), "{name}");
            assert!(!t.contains("generate"), "{name} offers --generate");
        }
        // fish names each flag with its subcommand: why's has no server flags.
        let fish = text(&files, "plumb.fish");
        let why_flags: Vec<&str> = fish
            .lines()
            .filter(|l| l.contains("__fish_plumb_using_subcommand why"))
            .collect();
        assert!(why_flags.iter().any(|l| l.contains("-l rwin")));
        assert!(!why_flags.iter().any(|l| l.contains("-l max-tests")));
    }
}
