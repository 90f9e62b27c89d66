//! What the benches of this crate share: where their model files are, and reading one.

use backline_decoders::dem::DetectorErrorModel;

/// A model's path: a path under the repository (it has a `/`), or a file name under
/// `BACKLINE_BENCH_MODELS` (default `target/bench-models`, where
/// `scripts/dev/make_bench_models.py` writes).
pub fn model_path(m: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if m.contains('/') {
        return root.join(m);
    }
    std::env::var_os("BACKLINE_BENCH_MODELS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target/bench-models"))
        .join(m)
}

/// The model `m` ([`model_path`]) of case `name`, or `None` after a line saying it is missing
/// and how to make it.
pub fn read_model(name: &str, m: &str) -> Option<DetectorErrorModel> {
    let path = model_path(m);
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!(
            "{name:44} skipped: no {} (scripts/dev/make_bench_models.py writes it)",
            path.display()
        );
        return None;
    };
    Some(DetectorErrorModel::parse(&text, m).unwrap())
}
