//! `plumb --generate man DIR` and `plumb --generate completions DIR` (hidden
//! from `--help`): the man pages and shell completions the Debian package
//! ships, made by `plumb_generate` from the clap definitions that parse the
//! command line, written into DIR.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use plumb_generate::{completions, man_pages, Stamp};

use crate::usage::usage_error;

/// Writes the files `what` names into `dir` (created if missing), made from
/// `root`, the command line as `--help` shows it.
pub fn run(what: &[String], root: clap::Command) -> anyhow::Result<ExitCode> {
    let [what, dir] = what else {
        return Ok(usage_error("--generate takes WHAT and DIR"));
    };
    let files = match what.as_str() {
        "man" => man_pages(
            root,
            &Stamp {
                version: env!("CARGO_PKG_VERSION"),
                date: env!("PLUMB_COMMIT_DATE"),
            },
        ),
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
        let pages = man_pages(
            crate::cli::command(),
            &Stamp {
                version: "0.1.0",
                date: "",
            },
        );
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
