//! The crate's module layers, read from its source: every `crate::MODULE` a module's code
//! uses (comments and `#[cfg(test)]` modules aside) must be a module of a lower layer, so
//! that there is no import circle; and the crate graph has no path to the Verilator model
//! (`backline-sim`) except through the `sim` feature.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first: a module may use the modules of the layers before its own.
const LAYERS: &[&[&str]] = &[
    &["config"],
    &["mmio"],
    &["peer"],
    &["error"],
    &["regs"],
    &["bringup", "hwhs"],
    &["board"],
];

/// The `crate::MODULE` names the non-test code of `text` refers to.
fn uses(text: &str) -> BTreeSet<String> {
    let code = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut out = BTreeSet::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

fn module_sources(src: &Path) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        if p.is_dir() {
            let mut text = String::new();
            for f in std::fs::read_dir(&p).unwrap() {
                text += &std::fs::read_to_string(f.unwrap().path()).unwrap();
                text += "\n";
            }
            m.insert(name, text);
        } else if name != "lib" && name != "main" {
            m.insert(name, std::fs::read_to_string(&p).unwrap());
        }
    }
    m
}

#[test]
fn modules_use_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = module_sources(&src);
    let layer_of = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    for m in modules.keys() {
        assert!(
            layer_of(m).is_some(),
            "module `{m}` is in no layer of this test: add it"
        );
    }
    for (m, text) in &modules {
        let mine = layer_of(m).unwrap();
        for used in uses(text) {
            if !modules.contains_key(&used) {
                continue; // a re-export of lib.rs (crate::Config, crate::ernic)
            }
            let theirs = layer_of(&used).unwrap();
            assert!(
                theirs < mine,
                "`{m}` (layer {mine}) uses `crate::{used}` (layer {theirs}): an import \
                 circle or a helper above its user"
            );
        }
    }
}

#[test]
fn the_board_build_has_no_path_to_the_verilator_model() {
    // `cargo metadata`'s resolve of this crate without its default features.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    // backline-sim is optional and only the `sim` feature turns it on.
    let dep = text
        .lines()
        .find(|l| l.starts_with("backline-sim"))
        .expect("a backline-sim dependency line");
    assert!(dep.contains("optional = true"), "{dep}");
    let sim_feature = text
        .lines()
        .find(|l| l.starts_with("sim = "))
        .expect("a `sim` feature");
    assert!(sim_feature.contains("dep:backline-sim"), "{sim_feature}");
    for l in text.lines().filter(|l| l.contains("dep:backline-sim")) {
        assert!(
            l.starts_with("sim = "),
            "another feature enables backline-sim: {l}"
        );
    }
    // No other dependency of the board build reaches it either.
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-q",
            "-p",
            "backline-apu",
            "--no-default-features",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.contains("backline-board"), "{tree}");
    assert!(!tree.contains("backline-sim"), "{tree}");
}
