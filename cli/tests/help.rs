//! Helpful help: examples at the end of every subcommand's --help, shell completions and a
//! man page generated from the same command line.

mod common;

use std::process::{Command, Stdio};

use common::backline;

fn stdout(args: &[&str]) -> String {
    let o = backline(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn every_subcommand_help_ends_with_examples_of_itself() {
    let top = stdout(&["--help"]);
    assert!(top.contains("Example:\n  backline bench"), "{top}");
    for sub in [
        "bench",
        "serve",
        "decode",
        "sim",
        "plot",
        "completions",
        "man",
    ] {
        let h = stdout(&[sub, "--help"]);
        let examples = h
            .split("Examples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{sub} --help has no examples:\n{h}"));
        let lines: Vec<&str> = examples
            .lines()
            .take_while(|l| l.starts_with("  backline "))
            .collect();
        assert!(!lines.is_empty(), "{sub}: {examples}");
        for l in lines {
            assert!(l.starts_with(&format!("  backline {sub} ")), "{sub}: {l}");
        }
    }
}

#[test]
fn completion_scripts_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let s = stdout(&["completions", shell]);
        for sub in [
            "bench",
            "serve",
            "decode",
            "sim",
            "plot",
            "completions",
            "man",
        ] {
            assert!(s.contains(sub), "{shell}: no {sub}");
        }
        assert!(s.contains("ring-depth"), "{shell}: no bench flags");
    }
    // The bash script is valid bash.
    let script = stdout(&["completions", "bash"]);
    let mut child = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .spawn()
        .expect("bash");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let o = backline(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff_with_every_subcommand() {
    let m = stdout(&["man"]);
    assert!(m.contains(".TH backline 1"), "{}", &m[..200.min(m.len())]);
    // The SUBCOMMANDS section names each page.
    for sub in [
        "bench",
        "serve",
        "decode",
        "sim",
        "plot",
        "completions",
        "man",
    ] {
        assert!(m.contains(&format!("backline\\-{sub}(1)")), "{sub}");
    }
}
