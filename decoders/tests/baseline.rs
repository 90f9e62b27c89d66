//! The corrections of the build before the speed work (commit 2d22b02) must come out
//! identical: every library code, min-sum with OSD-CS and product-sum with OSD-0, on non-zero
//! syndromes of seeded code-capacity shots (`tests/data/baseline_2d22b02.txt`, written by
//! `scripts/dev/compare_builds.py --write-vectors` with that build).

use backline_decoders::codes::CssCode;
use backline_decoders::{BpOsdConfig, BpOsdDecoder};

fn unhex(s: &str, bits: usize) -> Vec<u8> {
    let bytes: Vec<u8> = (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    (0..bits).map(|i| bytes[i / 8] >> (i % 8) & 1).collect()
}

#[test]
fn corrections_are_those_of_the_baseline_build() {
    let text = include_str!("data/baseline_2d22b02.txt");
    let mut cases = 0;
    let mut shots = 0;
    let mut current: Option<(CssCode, BpOsdDecoder, String)> = None;
    for line in text.lines() {
        if let Some(header) = line.strip_prefix("# code=") {
            let (name, rest) = header.split_once(' ').unwrap();
            let code = CssCode::by_name(name).unwrap();
            let mut config = BpOsdConfig::default();
            for kv in rest.split_whitespace() {
                let (k, v) = kv.split_once('=').unwrap();
                config.set(k, v).unwrap();
            }
            let dec = BpOsdDecoder::new(&code.hz, &config).unwrap();
            current = Some((code, dec, header.to_string()));
            cases += 1;
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (code, dec, header) = current.as_mut().expect("a case header first");
        let (s, c) = line.split_once(' ').unwrap();
        let syndrome = unhex(s, code.hz.rows());
        let want = unhex(c, code.n());
        let mut got = vec![0u8; code.n()];
        dec.decode(&syndrome, &mut got).unwrap();
        assert_eq!(got, want, "{header}: syndrome {s}");
        shots += 1;
    }
    assert_eq!(cases, 16);
    assert!(shots > 800, "{shots}");
}
