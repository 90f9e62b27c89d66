//! The decoder registry against what is written about it: the settings table of
//! docs/decoders.md is generated from it (`BACKLINE_BLESS=1` rewrites the copy), and every
//! setting of every decoder is reachable through the one path every front end takes
//! (`registry::settings` then `set`), with the same message for the same bad value.

use std::path::PathBuf;

use backline_decoders::registry::{self, DECODERS, Profile, ValueType};

const BEGIN: &str = "<!-- registry:settings begin (generated from decoders/src/registry.rs) -->\n";
const END: &str = "<!-- registry:settings end -->";

#[test]
fn the_documented_settings_table_is_the_registry() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/decoders.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let a = text.find(BEGIN).expect("the table's begin marker") + BEGIN.len();
    let b = text[a..].find(END).expect("the table's end marker") + a;
    let want = registry::markdown_table();
    if text[a..b] != want {
        if std::env::var_os("BACKLINE_BLESS").is_some() {
            std::fs::write(&path, format!("{}{want}{}", &text[..a], &text[b..])).unwrap();
            return;
        }
        panic!(
            "docs/decoders.md's settings table is stale: run \
             `BACKLINE_BLESS=1 cargo test -p backline-decoders --test registry`"
        );
    }
}

/// A value of the setting's type that its range refuses, when there is one.
fn out_of_range(t: ValueType) -> &'static str {
    match t {
        ValueType::Integer => "-1",
        ValueType::Number | ValueType::OptionalNumber => "x",
        ValueType::Choice(_) => "no_such_choice",
        ValueType::Interval => "1",
        ValueType::Flag => "2",
    }
}

#[test]
fn every_setting_is_refused_the_same_way_whatever_the_profile() {
    for e in DECODERS {
        for st in e.settings {
            let bad = out_of_range(st.value);
            let msgs: Vec<String> = [Profile::Offline, Profile::Realtime]
                .into_iter()
                .map(|p| {
                    let mut s = registry::settings(e.name, p).unwrap();
                    s.set(st.key, bad).unwrap_err().to_string()
                })
                .collect();
            assert_eq!(msgs[0], msgs[1], "{} {}", e.name, st.key);
            assert!(msgs[0].starts_with(st.key), "{}: {}", st.key, msgs[0]);
            // Whitespace around a key or value is not a new key.
            let mut s = registry::settings(e.name, Profile::Offline).unwrap();
            s.set(&format!(" {} ", st.key), &format!(" {} ", st.offline))
                .unwrap();
        }
    }
}
