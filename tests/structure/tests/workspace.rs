//! The checks of `backline-structure` run on this workspace.

use backline_structure::{functions, generated, layers, read, tracked_files, workspace_root};

#[test]
fn every_crate_depends_only_on_its_own_layer_or_below() {
    let root = workspace_root();
    let table = layers::Layers::from_readme(&read(&root.join("README.md")).unwrap()).unwrap();
    let (members, edges) = layers::graph_of_workspace(&root).unwrap();
    assert!(members.len() > 10, "cargo metadata listed {members:?}");
    let found = layers::violations(&table, &members, &edges);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn no_function_is_longer_than_the_limit() {
    let root = workspace_root();
    let mut found = Vec::new();
    let mut seen = 0;
    for path in tracked_files(&root) {
        if path.extension().is_none_or(|e| e != "rs") || path.starts_with("tests/fuzz/corpus") {
            continue;
        }
        let text = read(&root.join(&path)).unwrap();
        for f in functions::too_long(&text, &path).unwrap() {
            found.push(format!(
                "{}:{}: `{}` spans {} lines (at most {})",
                path.display(),
                f.line,
                f.name,
                f.lines,
                functions::LIMIT
            ));
        }
        seen += 1;
    }
    assert!(seen > 100, "read only {seen} Rust files");
    assert!(found.is_empty(), "split these:\n{}", found.join("\n"));
}

#[test]
fn the_exceptions_to_the_length_limit_still_exist_and_need_it() {
    let root = workspace_root();
    for (file, name, ceiling, _) in functions::EXCEPTIONS {
        let text = read(&root.join(file)).unwrap();
        let f = functions::functions_of(&text, std::path::Path::new(file))
            .unwrap()
            .into_iter()
            .find(|f| f.name == *name)
            .unwrap_or_else(|| panic!("{file} has no `{name}`: drop its exception"));
        assert!(
            f.lines > functions::LIMIT,
            "{file}: `{name}` is {} lines now: drop its exception",
            f.lines
        );
        assert!(
            f.lines <= *ceiling,
            "{file}: `{name}` spans {} lines",
            f.lines
        );
    }
}

#[test]
fn generated_files_are_marked_generated() {
    let root = workspace_root();
    let attributes = read(&root.join(".gitattributes")).unwrap();
    let files: Vec<(String, String)> = tracked_files(&root)
        .into_iter()
        .filter(|p| !p.starts_with("tests/fuzz/corpus"))
        .filter_map(|p| {
            let text = std::fs::read(root.join(&p)).ok()?;
            let head = String::from_utf8_lossy(&text[..text.len().min(2048)]).into_owned();
            Some((p.to_string_lossy().replace('\\', "/"), head))
        })
        .collect();
    let found = generated::findings(&attributes, &files);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// `cargo tree` of one package with its default features (or those given), one crate a line.
fn tree_of(package: &str, features: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args([
        "tree",
        "--offline",
        "-q",
        "-p",
        package,
        "-e",
        "normal,build",
    ])
    .args(["--prefix", "none"])
    .current_dir(workspace_root());
    for f in features {
        cmd.args(["--features", f]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_session_layer_the_c_abi_and_the_board_compile_no_gpu_code() {
    for (package, features) in [
        ("backline-transport", &[][..]),
        ("backline-ffi", &[]),
        ("backline-responder", &[]),
        ("backline-board", &["workload"]),
    ] {
        let tree = tree_of(package, features);
        assert!(tree.contains("backline-wire"), "{package}: {tree}");
        for gpu in ["cudarc", "backline-gpu"] {
            assert!(
                !tree.lines().any(|l| l.starts_with(gpu)),
                "{package} pulls in {gpu}:\n{tree}"
            );
        }
    }
    // The feature that brings them in still does.
    assert!(tree_of("backline-ffi", &["gpu"]).contains("cudarc"));
}
