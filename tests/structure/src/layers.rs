//! The layer rule: a crate depends only on crates of its own layer or below.
//!
//! The layers are written once, as the table under the README's `## The layers` heading: one
//! row a layer, lowest first; the first cell names the layer, the second lists its crates in
//! backticks. The dependencies come from `cargo metadata --no-deps` (normal, build and dev
//! dependencies alike: a test that needs a higher layer belongs to that layer's crate).

use std::collections::BTreeMap;
use std::path::Path;

use crate::Error;

/// The heading the layer table follows in the README.
pub const HEADING: &str = "## The layers";

/// Each crate's layer: its index (0 = lowest) and the layer's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layers {
    of: BTreeMap<String, (usize, String)>,
}

impl Layers {
    /// Reads the table under [`HEADING`] in `readme`.
    pub fn from_readme(readme: &str) -> Result<Layers, Error> {
        let bad = |m: String| Error::LayerTable(m);
        let mut lines = readme.lines().skip_while(|l| l.trim_end() != HEADING);
        if lines.next().is_none() {
            return Err(bad(format!("no `{HEADING}` heading")));
        }
        let rows: Vec<&str> = lines
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2) // the header row and its |---| line
            .collect();
        if rows.is_empty() {
            return Err(bad(format!("no table under `{HEADING}`")));
        }
        let mut of = BTreeMap::new();
        for (index, row) in rows.iter().enumerate() {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let (Some(name), Some(crates)) = (cells.get(1), cells.get(2)) else {
                return Err(bad(format!("row {} has no crates cell: {row}", index + 1)));
            };
            let names: Vec<&str> = crates
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|c| c.starts_with("backline"))
                .collect();
            if names.is_empty() {
                return Err(bad(format!("layer `{name}` lists no crate")));
            }
            for c in names {
                if let Some((_, other)) = of.insert(c.to_string(), (index, name.to_string())) {
                    return Err(bad(format!(
                        "`{c}` is in two layers: `{other}` and `{name}`"
                    )));
                }
            }
        }
        Ok(Layers { of })
    }

    /// The layer of `krate`: its index and name.
    pub fn of(&self, krate: &str) -> Option<(usize, &str)> {
        self.of.get(krate).map(|(i, n)| (*i, n.as_str()))
    }

    /// Every crate the table names.
    pub fn crates(&self) -> impl Iterator<Item = &str> {
        self.of.keys().map(String::as_str)
    }
}

/// One dependency between two crates of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The crate that depends.
    pub from: String,
    /// The crate depended on.
    pub to: String,
    /// `normal`, `build` or `dev`.
    pub kind: String,
}

/// The workspace's crates and the dependencies among them, from the JSON of `cargo metadata
/// --format-version 1 --no-deps`.
pub fn graph_of_metadata(json: &str) -> Result<(Vec<String>, Vec<Edge>), Error> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| Error::Metadata(e.to_string()))?;
    let packages = v["packages"]
        .as_array()
        .ok_or_else(|| Error::Metadata("no `packages` array".into()))?;
    let members: Vec<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    let mut edges = Vec::new();
    for p in packages {
        let from = p["name"].as_str().unwrap_or_default();
        for d in p["dependencies"].as_array().into_iter().flatten() {
            let to = d["name"].as_str().unwrap_or_default();
            if members.iter().any(|m| m == to) {
                edges.push(Edge {
                    from: from.to_string(),
                    to: to.to_string(),
                    kind: d["kind"].as_str().unwrap_or("normal").to_string(),
                });
            }
        }
    }
    Ok((members, edges))
}

/// Runs `cargo metadata` on the workspace at `root` and returns its graph.
pub fn graph_of_workspace(root: &Path) -> Result<(Vec<String>, Vec<Edge>), Error> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .map_err(|e| Error::Metadata(e.to_string()))?;
    if !out.status.success() {
        return Err(Error::Metadata(
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    graph_of_metadata(&String::from_utf8_lossy(&out.stdout))
}

/// Everything wrong with the workspace against the table: crates in no layer, layers naming
/// crates that do not exist, and each dependency on a higher layer.
pub fn violations(layers: &Layers, members: &[String], edges: &[Edge]) -> Vec<String> {
    let mut found = Vec::new();
    for m in members {
        if layers.of(m).is_none() {
            found.push(format!("`{m}` is in no layer of the README's table"));
        }
    }
    for c in layers.crates() {
        if !members.iter().any(|m| m == c) {
            found.push(format!(
                "the README's layer table names `{c}`, which is no crate"
            ));
        }
    }
    for e in edges {
        let (Some((a, an)), Some((b, bn))) = (layers.of(&e.from), layers.of(&e.to)) else {
            continue;
        };
        if b > a {
            found.push(format!(
                "`{}` (layer {a}, {an}) has a {} dependency on `{}` (layer {b}, {bn}), a higher layer",
                e.from, e.kind, e.to
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const README: &str = "# x\n\n## The layers\n\nSome words.\n\n\
        | layer | crates | job |\n|---|---|---|\n\
        | definitions | `backline-wire`, `backline-regmap` | one each |\n\
        | services | `backline-transport` | sessions |\n\
        | front | `backline` | the CLI |\n\n## Next\n";

    fn edge(from: &str, to: &str) -> Edge {
        Edge {
            from: from.into(),
            to: to.into(),
            kind: "normal".into(),
        }
    }

    fn members() -> Vec<String> {
        [
            "backline-wire",
            "backline-regmap",
            "backline-transport",
            "backline",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn reads_the_table_lowest_first() {
        let l = Layers::from_readme(README).unwrap();
        assert_eq!(l.of("backline-wire"), Some((0, "definitions")));
        assert_eq!(l.of("backline-regmap"), Some((0, "definitions")));
        assert_eq!(l.of("backline"), Some((2, "front")));
        assert_eq!(l.of("backline-ring"), None);
    }

    #[test]
    fn downward_and_sideways_edges_pass() {
        let l = Layers::from_readme(README).unwrap();
        let edges = [
            edge("backline", "backline-transport"),
            edge("backline-transport", "backline-wire"),
            edge("backline-wire", "backline-regmap"),
        ];
        assert_eq!(violations(&l, &members(), &edges), Vec::<String>::new());
    }

    #[test]
    fn a_seeded_upward_edge_is_reported() {
        let l = Layers::from_readme(README).unwrap();
        let mut dev = edge("backline-wire", "backline-transport");
        dev.kind = "dev".into();
        let v = violations(&l, &members(), &[dev]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains("`backline-wire` (layer 0, definitions) has a dev dependency on `backline-transport` (layer 1, services)"),
            "{v:?}"
        );
    }

    #[test]
    fn crates_missing_from_the_table_and_stale_rows_are_reported() {
        let l = Layers::from_readme(README).unwrap();
        let mut m = members();
        m.retain(|c| c != "backline-regmap");
        m.push("backline-new".into());
        let v = violations(&l, &m, &[]);
        assert!(
            v.iter()
                .any(|s| s.contains("`backline-new` is in no layer")),
            "{v:?}"
        );
        assert!(
            v.iter()
                .any(|s| s.contains("names `backline-regmap`, which is no crate")),
            "{v:?}"
        );
    }

    #[test]
    fn malformed_tables_are_refused() {
        assert!(Layers::from_readme("# no table\n").is_err());
        let twice = README.replace("`backline-transport`", "`backline-wire`");
        let e = Layers::from_readme(&twice).unwrap_err().to_string();
        assert!(e.contains("`backline-wire` is in two layers"), "{e}");
    }

    #[test]
    fn metadata_edges_keep_only_workspace_crates() {
        let json = r#"{"packages":[
            {"name":"backline","dependencies":[
                {"name":"backline-wire","kind":null},
                {"name":"clap","kind":null},
                {"name":"backline-transport","kind":"dev"}]},
            {"name":"backline-wire","dependencies":[]},
            {"name":"backline-transport","dependencies":[{"name":"backline-wire","kind":"build"}]}]}"#;
        let (members, edges) = graph_of_metadata(json).unwrap();
        assert_eq!(members.len(), 3);
        assert_eq!(
            edges,
            vec![
                edge("backline", "backline-wire"),
                Edge {
                    kind: "dev".into(),
                    ..edge("backline", "backline-transport")
                },
                Edge {
                    kind: "build".into(),
                    ..edge("backline-transport", "backline-wire")
                },
            ]
        );
    }
}
