//! A detector error model prints back: parse → print → parse gives the same model (the same
//! instruction tree, line numbers apart, and the same mechanisms, matrices, priors,
//! coordinates and graphlike edges) — on every `.dem` fixture under `tests/data/`, on the
//! inline models of the crate's tests, and on a few hundred seeded random models with errors,
//! separators, tags, detectors with coordinates, shifts and nested `repeat` blocks.

use std::path::{Path, PathBuf};

use backline_decoders::dem::{DemTarget, DetectorErrorModel, InstructionKind};

/// Parses `text`, prints it, parses the print and checks that both are the same model and
/// that the print is a fixed point (printing the second model gives the same text).
fn round_trip(text: &str, name: &str) -> DetectorErrorModel {
    let first = DetectorErrorModel::parse(text, name).unwrap_or_else(|e| panic!("{e}"));
    let printed = first.to_string();
    let second = DetectorErrorModel::parse(&printed, name)
        .unwrap_or_else(|e| panic!("{name}: the print does not parse: {e}\n{printed}"));
    assert!(
        second.without_lines() == first.without_lines(),
        "{name}: the print reads back to another model\n--- text\n{text}\n--- print\n{printed}"
    );
    assert_eq!(
        second.to_string(),
        printed,
        "{name}: printing is not stable"
    );
    first
}

/// Every `.dem` file under `dir`, recursively, sorted.
fn dem_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            dem_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "dem") {
            out.push(path);
        }
    }
    out.sort();
}

#[test]
fn every_fixture_prints_back() {
    let mut files = Vec::new();
    dem_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data"),
        &mut files,
    );
    assert!(files.len() >= 2, "{files:?}");
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        let dem = round_trip(&text, &name);
        assert!(!dem.instructions().is_empty());
    }
}

/// The models written out in the crate's own tests and docs, and a few more corners.
const INLINE: &[&str] = &[
    "# a comment\n\
     ERROR(0.1) D2 D0 L1 # trailing\n\
     error(0.02) D0 L0 ^ D1 L0\n\
     error(0.2) D0 D2 L1\n\
     error[some tag # with a hash](0.3) D1 D1 D3\n\
     error(0.5)\n\
     error(0.4) L0 ^ L0\n",
    "repeat 3333333333333333 { # detector(0, 1) D0\n}\n\
     error(0.1) D0 L0\ndetector(0, 0) D0\n",
    "detector(0, 0) D0\n\
     repeat 3 {\n\
     \x20   detector(0.5, 0.5) D1\n\
     \x20   error(0.01) D0 D1\n\
     \x20   repeat 2 {\n\
     \x20       error(0.001) D1 L0\n\
     \x20       shift_detectors 0\n\
     \x20   }\n\
     \x20   shift_detectors(0.5, 0.5, 7) 1\n\
     }\n\
     detector(1) D0\n\
     logical_observable L4\n",
    "error(0.1) D0 D1\nerror(0.1) D4\ndetector D2\n",
    "repeat 3 {\n\
     \x20 error(0.1) D0 D1\n\
     \x20 error(0.1) D0 D2\n\
     \x20 error(0.05) D1 L0\n\
     \x20 detector(0, 0) D0\n\
     \x20 detector(1, 0) D1\n\
     \x20 shift_detectors(0, 1) 2\n\
     }\n",
    "error(0.1) D0 D1\n\
     repeat 2 {\n    error(0.1) D1 D2 L0\n    shift_detectors(0, 1) 1\n}\n\
     detector(1, 0) D0\n",
    "error[tag](0.125) D0 # note\nerror(0.5) D0 L1\n",
    // Tags on every instruction, empty tags, a `#` and braces inside a tag, odd spellings of
    // numbers, a repeat with `{` glued to its count, a separator at either end.
    "Detector[d](+1.50, -0, 1E3, .25) d0 D1\n\
     logical_observable[] l2\n\
     shift_detectors[s]() 0\n\
     REPEAT[r #{}] 2{\n\
     \x20 error[e](1e-300) D0 ^ L2 ^\n\
     \x20 repeat 1 {\n  }\n\
     }\n\
     error(1) ^ D0007\n\
     error(0) D3\n\
     error(5e-324) D1\n\
     shift_detectors(1.7976931348623157e308, 1e-7) 18446744073709551615\n",
];

#[test]
fn the_inline_models_print_back() {
    for (i, text) in INLINE.iter().enumerate() {
        round_trip(text, &format!("inline{i}.dem"));
    }
}

#[test]
fn a_model_prints_as_stim_writes_it() {
    let text = "# header\n\
                ERROR[leak](0.125) D0 D1 ^ D2 L0   # a part\n\
                detector(1, 0.5, 0) D0\n\
                repeat 2 {\n\
                \x20 error(1e-07) D1\n\
                \x20 REPEAT 3 {\n\
                \x20   shift_detectors(0, 0, 1) 2\n\
                \x20 }\n\
                \x20 logical_observable L1\n\
                }\n\
                detector D9\n\
                shift_detectors 1\n";
    let dem = DetectorErrorModel::parse(text, "exact.dem").unwrap();
    assert_eq!(
        dem.to_string(),
        "error[leak](0.125) D0 D1 ^ D2 L0\n\
         detector(1, 0.5, 0) D0\n\
         repeat 2 {\n\
         \x20   error(1e-7) D1\n\
         \x20   repeat 3 {\n\
         \x20       shift_detectors(0, 0, 1) 2\n\
         \x20   }\n\
         \x20   logical_observable L1\n\
         }\n\
         detector D9\n\
         shift_detectors 1\n"
    );
    // The tree as read: four top-level instructions and a block, with their lines.
    let tree = dem.instructions();
    assert_eq!(tree.len(), 5);
    assert_eq!((tree[0].line, &*tree[0].tag), (2, "leak"));
    assert_eq!(
        tree[0].kind,
        InstructionKind::Error {
            p: 0.125,
            targets: vec![
                DemTarget::Detector(0),
                DemTarget::Detector(1),
                DemTarget::Separator,
                DemTarget::Detector(2),
                DemTarget::Observable(0),
            ]
            .into(),
        }
    );
    let InstructionKind::Repeat { count: 2, body } = &tree[2].kind else {
        panic!("{:?}", tree[2]);
    };
    assert_eq!((tree[2].line, body.len()), (4, 3));
    assert_eq!(
        body[1].to_string(),
        "repeat 3 {\n    shift_detectors(0, 0, 1) 2\n}"
    );
    assert_eq!(tree[4].to_string(), "shift_detectors 1");
}

#[test]
fn a_window_prints_its_mechanisms_flat() {
    let dem = round_trip(INLINE[4], "chain.dem");
    let w = dem.window_from(2..4);
    assert!(w.model.instructions().is_empty());
    let printed = w.model.to_string();
    assert_eq!(
        printed,
        "error(0.1) D0 D1\nerror(0.1) D0\nerror(0.05) D1 L0\n\
         detector(0, 1) D0\ndetector(1, 1) D1\n"
    );
    let again = DetectorErrorModel::parse(&printed, "w.dem").unwrap();
    assert_eq!(again.check_matrix(), w.model.check_matrix());
    assert_eq!(again.observable_matrix(), w.model.observable_matrix());
    assert_eq!(again.priors(), w.model.priors());
    assert_eq!(again.detector_coords(1), w.model.detector_coords(1));
}

/// A small xorshift generator: reproducible models without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A number as a model might spell it: small integers, decimals, exponents, extremes, signs.
fn number(r: &mut Rng, probability: bool) -> String {
    if probability {
        return match r.below(6) {
            0 => "0".into(),
            1 => "1".into(),
            2 => format!("{}e-{}", 1 + r.below(9), 1 + r.below(300)),
            3 => format!("0.{:03}", r.below(1000)),
            _ => format!("{}", (r.below(1 << 53) as f64) / (1u64 << 53) as f64),
        };
    }
    let sign = if r.chance(30) { "-" } else { "" };
    match r.below(6) {
        0 => format!("{sign}{}", r.below(20)),
        1 => format!("{sign}{}.{}", r.below(100), r.below(1000)),
        2 => format!("{sign}{}E{}", 1 + r.below(9), r.below(40)),
        3 => format!("{sign}.{}", r.below(100)),
        4 => format!("{sign}{}e-{}", 1 + r.below(9), r.below(320)),
        _ => format!("{sign}{}", f64::from_bits(r.below(0x7FE0_0000_0000_0000))),
    }
}

/// `(a, b, …)` of up to `max` numbers, sometimes empty parentheses, sometimes none.
fn arguments(r: &mut Rng, max: u64) -> String {
    let n = r.below(max + 1);
    if n == 0 {
        return if r.chance(20) {
            "()".into()
        } else {
            String::new()
        };
    }
    let args: Vec<String> = (0..n).map(|_| number(r, false)).collect();
    format!("({})", args.join(", "))
}

/// An instruction name as written: lower case mostly, sometimes shouted, sometimes tagged.
fn name(r: &mut Rng, name: &str) -> String {
    let mut s = if r.chance(10) {
        name.to_ascii_uppercase()
    } else {
        name.to_string()
    };
    if r.chance(15) {
        let tags = ["t", "", "leak # x", "a b{c}", "ü"];
        s.push_str(&format!("[{}]", tags[r.below(tags.len() as u64) as usize]));
    }
    s
}

/// One random line (or block) at `depth`, appended to `out`.
fn instruction(r: &mut Rng, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    match r.below(if depth < 3 { 10 } else { 8 }) {
        0..=3 => {
            let mut line = format!("{pad}{}({})", name(r, "error"), number(r, true));
            for _ in 0..r.below(6) {
                line.push_str(match r.below(8) {
                    0 => " ^",
                    1 => " L",
                    2 => " l",
                    _ => " D",
                });
                if !line.ends_with('^') {
                    line.push_str(&r.below(12).to_string());
                }
            }
            out.push_str(&line);
        }
        4 | 5 => {
            out.push_str(&format!("{pad}{}{}", name(r, "detector"), arguments(r, 3)));
            for _ in 0..r.below(3) {
                out.push_str(&format!(" D{}", r.below(12)));
            }
        }
        6 => {
            out.push_str(&format!("{pad}{}", name(r, "logical_observable")));
            for _ in 0..r.below(3) {
                out.push_str(&format!(" L{}", r.below(4)));
            }
        }
        7 => {
            let count = r.below(4);
            let args = arguments(r, 3);
            out.push_str(&format!(
                "{pad}{}{args} {count}",
                name(r, "shift_detectors")
            ));
        }
        _ => {
            // Empty bodies may repeat almost forever; others a few times.
            let lines = r.below(5);
            let count = if lines == 0 && r.chance(50) {
                r.next() >> 1
            } else {
                1 + r.below(3)
            };
            out.push_str(&format!("{pad}{} {count} {{\n", name(r, "repeat")));
            for _ in 0..lines {
                instruction(r, depth + 1, out);
            }
            out.push_str(&format!("{pad}}}"));
        }
    }
    if r.chance(10) {
        out.push_str("  # a comment");
    }
    out.push('\n');
}

/// A random model: a mechanism first (so that it has one), then up to 12 instructions.
fn random_model(r: &mut Rng) -> String {
    let mut text = format!("error({}) D{}\n", number(r, true), r.below(4));
    for _ in 0..r.below(13) {
        if r.chance(5) {
            text.push('\n');
        }
        instruction(r, 0, &mut text);
    }
    text
}

#[test]
fn random_models_print_back() {
    let mut r = Rng(0x2545_F491_4F6C_DD1D);
    let mut read = 0;
    for i in 0..400 {
        let text = random_model(&mut r);
        match DetectorErrorModel::parse(&text, "random.dem") {
            Ok(_) => {
                round_trip(&text, &format!("random{i}.dem"));
                read += 1;
            }
            // A model the generator got wrong (none expected but a mechanism of probability
            // 0 or a part that cancels) is no round trip to check.
            Err(e) => assert!(e.to_string().contains("no error mechanisms"), "{e}\n{text}"),
        }
    }
    assert!(read > 300, "only {read} of 400 random models parsed");
}
