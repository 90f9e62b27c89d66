//! The one table of decoders: each decoder is one [`Entry`] — its names, its settings
//! (key, type, offline default, real-time default, one line of help) and how to configure and
//! build it. Every front end reads this table: `backline decode`'s flags, `stream:` and
//! responder specs, `backline.DemDecoder` and the sinter decoders, the CUQR server, the fuzz
//! targets and the settings table of docs/decoders.md (generated from [`markdown_table`] and
//! checked by a test). Nothing outside a decoder's own module names a decoder kind.
//!
//! Adding a decoder is one module that implements [`crate::decoder::ObservableDecoder`] (or
//! [`crate::decoder::MechanismDecoder`], wrapped by
//! [`crate::decoder::MechanismsToObservables`]) and a [`DecoderConfig`], plus one entry in
//! [`DECODERS`].
//!
//! A setting's value is always given as text (a flag, a `key=value` of a spec, a Python
//! keyword rendered by the bindings) and parsed by the decoder's [`DecoderConfig::set`], and
//! its range is checked there or when the decoder is built ([`DecoderConfig::build`]): one
//! place per setting, so the same bad value gets the same message from every entry point.
//!
//! ```
//! use backline_decoders::registry::{self, Profile};
//! let mut s = registry::settings("relay-bp", Profile::Offline).unwrap();
//! s.set("alpha_iteration_scaling_factor", "2").unwrap();
//! assert_eq!(s.get("gamma0").as_deref(), Some("0.1"));
//! let e = registry::settings("bposd", Profile::Offline).unwrap().set("gamma0", "1").unwrap_err();
//! assert!(e.to_string().contains("expected one of bp_method, max_iter"), "{e}");
//! ```

use std::any::Any;
use std::fmt;

use crate::decoder::ObservableDecoder;
use crate::dem::DetectorErrorModel;
use crate::error::{DecoderError, SettingError};

/// Which set of defaults: offline (the peer library's, for accuracy studies) or real time
/// (a bounded cost per decode, for streams and coprocessors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// The defaults of the library the decoder follows (`ldpc`, `relay-bp`, PyMatching):
    /// `backline decode`, `backline.DemDecoder`, the sinter decoders.
    Offline,
    /// The defaults of a decoder that answers rounds as they arrive: `stream:` specs, the
    /// CUQR server.
    Realtime,
}

/// The type of a setting's value, as front ends present it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// A non-negative integer.
    Integer,
    /// A number.
    Number,
    /// A number, or `none`.
    OptionalNumber,
    /// One of the given words.
    Choice(&'static [&'static str]),
    /// Two numbers, `LO,HI`.
    Interval,
    /// `0`/`1` (also `false`/`true`).
    Flag,
}

impl ValueType {
    /// The type's name in docs and help.
    pub fn name(&self) -> String {
        match self {
            ValueType::Integer => "integer".into(),
            ValueType::Number => "number".into(),
            ValueType::OptionalNumber => "number or none".into(),
            ValueType::Choice(_) => "word".into(),
            ValueType::Interval => "LO,HI".into(),
            ValueType::Flag => "0 or 1".into(),
        }
    }
}

/// One setting of a decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// Its name, as the peer library spells it (`max_iter`, `gamma0`); flags use it with `-`
    /// for `_`.
    pub key: &'static str,
    /// The type of its value.
    pub value: ValueType,
    /// The values it takes, as errors and docs say it.
    pub range: &'static str,
    /// The offline default, as text ([`Profile::Offline`]).
    pub offline: &'static str,
    /// The real-time default, as text ([`Profile::Realtime`]).
    pub realtime: &'static str,
    /// One line of help.
    pub help: &'static str,
}

impl Setting {
    /// The default of `profile`.
    pub fn default_for(&self, profile: Profile) -> &'static str {
        match profile {
            Profile::Offline => self.offline,
            Profile::Realtime => self.realtime,
        }
    }

    /// The command-line flag: `--` and the key with `-` for `_`.
    pub fn flag(&self) -> String {
        format!("--{}", self.key.replace('_', "-"))
    }
}

/// A decoder's settings, configured by key and built into a decoder on a model.
pub trait DecoderConfig: fmt::Debug + Send + Sync + 'static {
    /// Sets one setting from text: [`SettingError::Unknown`] for a key the decoder does not
    /// have (listing those it has), [`SettingError::Value`] for a value that does not parse
    /// or is out of range.
    fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError>;
    /// The value of `key` as text (parsing it back gives the same value), `None` for a key
    /// the decoder does not have.
    fn get(&self, key: &str) -> Option<String>;
    /// The decoder on `dem`; the ranges [`DecoderConfig::set`] cannot check alone (those
    /// that depend on other settings or on the model) are checked here.
    fn build(&self, dem: &DetectorErrorModel) -> Result<Box<dyn ObservableDecoder>, DecoderError>;
    /// Settings given that have no effect with the others, `(key, why)` (a front end warns):
    /// none by default.
    fn notes(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// How a stream cuts this decoder's work into windows.
    fn windows(&self) -> WindowKind {
        WindowKind::CutModel
    }
    /// A copy.
    fn clone_box(&self) -> Box<dyn DecoderConfig>;
    /// As `Any`, for the code-capacity paths that need the concrete settings.
    fn as_any(&self) -> &dyn Any;
    /// As `Any`, mutably.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// How a stream ([`crate::stream`]) windows a decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowKind {
    /// Each window is a model of its own, cut from the whole one, with its own decoder; the
    /// stream commits the mechanisms the decoder chose (mechanism decoders).
    CutModel,
    /// One decoder on the whole model floods each window in part and commits what the
    /// window's matching decided (matching).
    Masked,
    /// The decoder's own matching graph floods each window as [`WindowKind::Masked`] does,
    /// and the committed paths are lifted to observables after the last window (the Möbius
    /// decoder, [`crate::mobius::MobiusWindows`]); with one window (the default), the whole
    /// shot is decoded once its last round is in.
    Lifted,
}

/// One registered decoder.
pub struct Entry {
    /// Its name in `--decoder`, `stream:` specs and Python (`bposd`).
    pub name: &'static str,
    /// What it is, in a few words (`BP+OSD`).
    pub title: &'static str,
    /// One line on what it does and whose names and defaults it follows.
    pub summary: &'static str,
    /// Its settings, in the order docs and help list them.
    pub settings: &'static [Setting],
    /// Its settings at `profile`'s defaults.
    pub config: fn(Profile) -> Box<dyn DecoderConfig>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry").field("name", &self.name).finish()
    }
}

impl Entry {
    /// The setting named `key`.
    pub fn setting(&self, key: &str) -> Option<&'static Setting> {
        self.settings.iter().find(|s| s.key == key.trim())
    }

    /// Its setting names, `, `-separated (for error messages).
    pub fn keys(&self) -> String {
        if self.settings.is_empty() {
            return format!("({} has no settings)", self.name);
        }
        self.settings
            .iter()
            .map(|s| s.key)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Every decoder, in the order front ends list them (and docs/decoders.md's table).
pub static DECODERS: &[&Entry] = &[
    &crate::bposd::ENTRY,
    &crate::relay::ENTRY,
    &crate::matching::ENTRY,
    &crate::mobius::ENTRY,
];

/// The decoder of a front end that names none (`backline decode`, `stream:` specs).
pub const DEFAULT_DECODER: &str = "bposd";

/// The decoder named `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    DECODERS.iter().copied().find(|e| e.name == name.trim())
}

/// The registered names, `, `-separated.
pub fn names() -> String {
    DECODERS
        .iter()
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The decoder named `name` at `profile`'s defaults; an unknown name lists the registry's.
pub fn settings(name: &str, profile: Profile) -> Result<DecoderSettings, SettingError> {
    let entry = find(name).ok_or_else(|| SettingError::UnknownDecoder {
        name: crate::io::excerpt(name.trim()),
        known: names(),
    })?;
    Ok(DecoderSettings {
        entry,
        config: (entry.config)(profile),
    })
}

/// A registered decoder with its settings: what every front end holds until it builds the
/// decoder on a model ([`DecoderSettings::build`]).
#[derive(Debug)]
pub struct DecoderSettings {
    entry: &'static Entry,
    config: Box<dyn DecoderConfig>,
}

impl Clone for DecoderSettings {
    fn clone(&self) -> DecoderSettings {
        DecoderSettings {
            entry: self.entry,
            config: self.config.clone_box(),
        }
    }
}

impl PartialEq for DecoderSettings {
    /// The same decoder with the same value of every setting.
    fn eq(&self, other: &DecoderSettings) -> bool {
        self.entry.name == other.entry.name
            && self
                .entry
                .settings
                .iter()
                .all(|s| self.get(s.key) == other.get(s.key))
    }
}

impl DecoderSettings {
    /// `config` as the settings of `entry` (each decoder's module offers a `From` of its own
    /// settings type, which is how this is reached).
    pub(crate) fn of(entry: &'static Entry, config: Box<dyn DecoderConfig>) -> DecoderSettings {
        DecoderSettings { entry, config }
    }

    /// Its registry entry.
    pub fn entry(&self) -> &'static Entry {
        self.entry
    }

    /// The decoder's name.
    pub fn name(&self) -> &'static str {
        self.entry.name
    }

    /// Sets one setting by key from text (see [`DecoderConfig::set`]).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        if self.entry.setting(key).is_none() {
            return Err(SettingError::Unknown {
                key: crate::io::excerpt(key.trim()),
                known: self.entry.keys(),
            });
        }
        self.config.set(key.trim(), value)
    }

    /// A setting's value as text.
    pub fn get(&self, key: &str) -> Option<String> {
        self.config.get(key.trim())
    }

    /// Every setting with its value as text, in the registry's order.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        self.entry
            .settings
            .iter()
            .map(|s| (s.key, self.get(s.key).unwrap_or_default()))
            .collect()
    }

    /// The decoder on `dem`: the entry's own, or, for a model from which nothing can be
    /// inferred (no mechanism with `p > 0` flips a detector), a
    /// [`crate::decoder::ConstantDecoder`] whatever the entry — sinter's contract for
    /// degenerate models, kept by every decoder alike.
    pub fn build(
        &self,
        dem: &DetectorErrorModel,
    ) -> Result<Box<dyn ObservableDecoder>, DecoderError> {
        if !crate::decoder::has_evidence(dem) {
            return Ok(Box::new(crate::decoder::ConstantDecoder::new(dem)));
        }
        self.config.build(dem)
    }

    /// Settings that have no effect with the others, `(key, why)`, for a warning.
    pub fn notes(&self) -> Vec<(&'static str, String)> {
        self.config.notes()
    }

    /// How a stream windows the decoder.
    pub fn windows(&self) -> WindowKind {
        self.config.windows()
    }

    /// The concrete settings, if they are a `T` (for the code-capacity paths, which run
    /// BP+OSD on a check matrix rather than on a model).
    pub fn config<T: 'static>(&self) -> Option<&T> {
        self.config.as_any().downcast_ref()
    }

    /// The concrete settings, mutably, if they are a `T`.
    pub fn config_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.config.as_any_mut().downcast_mut()
    }
}

/// The settings table of docs/decoders.md: one row per setting of every decoder, generated
/// from [`DECODERS`] (a test fails when the copy in the docs differs).
pub fn markdown_table() -> String {
    let mut s = String::from(
        "| decoder | setting | type | values | offline default | real-time default | what |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for e in DECODERS {
        if e.settings.is_empty() {
            s.push_str(&format!(
                "| `{}` | — | | | | | {} has no settings |\n",
                e.name, e.title
            ));
        }
        for st in e.settings {
            s.push_str(&format!(
                "| `{}` | `{}` | {} | {} | `{}` | `{}` | {} |\n",
                e.name,
                st.key,
                st.value.name(),
                st.range,
                st.offline,
                st.realtime,
                st.help
            ));
        }
    }
    s
}

/// Implements the boilerplate of [`DecoderConfig`] (`clone_box`, `as_any`, `as_any_mut`)
/// for a `Clone` settings type.
macro_rules! config_any {
    () => {
        fn clone_box(&self) -> Box<dyn $crate::registry::DecoderConfig> {
            Box::new(self.clone())
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
        fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
            self
        }
    };
}
pub(crate) use config_any;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_one_name_and_its_defaults_read_back() {
        let mut seen = std::collections::HashSet::new();
        for e in DECODERS {
            assert!(seen.insert(e.name), "{} twice", e.name);
            for profile in [Profile::Offline, Profile::Realtime] {
                let mut s = settings(e.name, profile).unwrap();
                for st in e.settings {
                    // The documented default is the value in force ...
                    assert_eq!(
                        s.get(st.key).as_deref(),
                        Some(st.default_for(profile)),
                        "{} {} {profile:?}",
                        e.name,
                        st.key
                    );
                    // ... and it is a value the setting takes.
                    s.set(st.key, st.default_for(profile)).unwrap();
                }
                assert_eq!(s, settings(e.name, profile).unwrap());
            }
        }
    }

    #[test]
    fn unknown_names_and_keys_list_what_there_is() {
        let e = settings("blossom", Profile::Offline)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "unknown decoder `blossom` (expected one of bposd, relay-bp, matching, mobius)"
        );
        let mut s = settings("relay-bp", Profile::Offline).unwrap();
        let e = s.set("max_iter", "3").unwrap_err().to_string();
        assert!(
            e.starts_with("unknown setting `max_iter` (expected one of gamma0,"),
            "{e}"
        );
    }

    #[test]
    fn settings_compare_by_value() {
        let a = settings("bposd", Profile::Offline).unwrap();
        let mut b = a.clone();
        assert_eq!(a, b);
        b.set("max_iter", "7").unwrap();
        assert_ne!(a, b);
        assert_ne!(a, settings("bposd", Profile::Realtime).unwrap());
        assert_eq!(b.config::<crate::BpOsdConfig>().unwrap().max_iter, 7);
        assert!(b.config::<crate::relay::RelayConfig>().is_none());
    }
}
