//! The errors of decoder construction and of the decode call.

/// Why a decoder could not be built, or a decode call was refused.
///
/// Construction errors name the bad setting; the decode-path variants
/// ([`DecoderError::SyndromeLength`], [`DecoderError::OutputLength`]) carry only integers, so
/// returning them does not allocate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecoderError {
    /// `error_rate` outside the open interval (0, 0.5), or not a number.
    #[error("error rate {0} is outside (0, 0.5)")]
    ErrorRate(f64),
    /// An entry of `error_channel` outside (0, 0.5).
    #[error("error channel entry {bit} is {p}, outside (0, 0.5)")]
    ChannelRate {
        /// The bit.
        bit: usize,
        /// Its rate.
        p: f64,
    },
    /// `error_channel` has the wrong length.
    #[error("error channel has {found} entries, the checks have {expected} columns")]
    ChannelLength {
        /// Columns of the checks.
        expected: usize,
        /// Entries given.
        found: usize,
    },
    /// `ms_scaling_factor` negative or not finite (0 selects the adaptive factor `1 − 2^−it`).
    #[error("min-sum scaling factor {0} must be finite and ≥ 0")]
    ScalingFactor(f64),
    /// `osd_order` larger than the number of free (non-pivot) columns, `n − rank(H)`. No
    /// longer returned: the order is clamped to `n − rank(H)` ([`crate::osd`]); kept so that
    /// matches on it still compile.
    #[error(
        "OSD order {order} is larger than the {free_columns} free columns of the checks \
         (n − rank = {n} − {rank})"
    )]
    OsdOrderTooLarge {
        /// The order asked for.
        order: usize,
        /// `n − rank(H)`.
        free_columns: usize,
        /// Columns of the checks.
        n: usize,
        /// Rank of the checks.
        rank: usize,
    },
    /// Checks too large for the dense elimination of OSD.
    #[error("{0}")]
    TooLarge(crate::bitmat::TooLarge),
    /// A decoder setting out of its range (Relay-BP's, for example).
    #[error("{name} = {value}: expected {expected}")]
    Setting {
        /// The setting's name.
        name: &'static str,
        /// The value given (a count as a number).
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
    /// A mechanism of a detector error model whose probability a decoder cannot use. No longer
    /// returned by the decoders on a model (a prior of `p ≥ ½` enters BP as
    /// [`crate::decoder::MAX_BP_PRIOR`]); kept so that matches on it still compile.
    #[error(
        "{file}:{line}: mechanism {mechanism} has probability {p}; the decoders need 0 < p < 0.5"
    )]
    MechanismPrior {
        /// The model's name.
        file: String,
        /// The line of the `error` instruction that made it.
        line: u32,
        /// Its index in the model.
        mechanism: usize,
        /// Its probability.
        p: f64,
    },
    /// A detector error model with nothing to decode: no mechanism with `p > 0` flips a
    /// detector.
    #[error("{0}: no error mechanism with p > 0 flips a detector")]
    NothingToDecode(String),
    /// Packed shot data of the wrong length.
    #[error("{what} is {found} bytes, expected {expected}")]
    PackedLength {
        /// Detection events or observable flips.
        what: &'static str,
        /// `⌈bits/8⌉`.
        expected: usize,
        /// Bytes given.
        found: usize,
    },
    /// The checks have no columns, or too many entries for 32-bit edge indices.
    #[error("unsupported check matrix: {0}")]
    Matrix(String),
    /// The system refused to start a thread (`decode_batch`): the threads that had started
    /// finished their shots; the batch has no answer.
    #[error("cannot start decoding thread {started} of {asked}: {why}")]
    Thread {
        /// Threads started before the refusal.
        started: usize,
        /// Threads asked for.
        asked: usize,
        /// The system's reason.
        why: String,
    },
    /// Memory for what an input asks could not be allocated (the allocation was refused, not
    /// aborted on).
    #[error("out of memory: {0}")]
    Memory(String),
    /// A lookup table would be too large.
    #[error("lookup table for {checks} checks is too large (at most {max} checks)")]
    LookupTooLarge {
        /// Rows of the checks.
        checks: usize,
        /// The limit.
        max: usize,
    },
    /// A syndrome whose length is not the number of checks.
    #[error("syndrome has {found} bits, the checks have {expected} rows")]
    SyndromeLength {
        /// Rows of the checks.
        expected: usize,
        /// Bits given.
        found: usize,
    },
    /// A detector error model a matching decoder cannot take (a hyperedge, `p = 1`, too many
    /// observables, no edges).
    #[error(transparent)]
    MatchingModel(#[from] crate::matching::errors::MatchingBuildError),
    /// A matching decode refused its shot (a `Copy` fault: returning it does not allocate).
    #[error(transparent)]
    Match(#[from] crate::matching::errors::MatchFault),
    /// A colour-code model the Möbius decoder cannot take, or a shot it cannot lift.
    #[error(transparent)]
    Mobius(#[from] crate::mobius::MobiusError),
    /// A detection event on a detector that no error of the model with `p > 0` flips: no
    /// correction explains the shot (PyMatching: "No perfect matching could be found"). A
    /// `Copy` fault: returning it does not allocate.
    #[error(
        "detector D{0} fired, and no error of the model with p > 0 flips it: no correction explains the shot"
    )]
    Unexplained(u32),
    /// An output buffer whose length is not the number of bits.
    #[error("correction buffer has {found} entries, the checks have {expected} columns")]
    OutputLength {
        /// Columns of the checks.
        expected: usize,
        /// Entries given.
        found: usize,
    },
}

/// The decode-path check of a syndrome of `m` bits and a correction buffer of `n` entries
/// ([`DecoderError::SyndromeLength`], [`DecoderError::OutputLength`]; neither allocates).
#[inline]
pub(crate) fn check_lengths(
    syndrome: usize,
    m: usize,
    correction: usize,
    n: usize,
) -> Result<(), DecoderError> {
    if syndrome != m {
        return Err(DecoderError::SyndromeLength {
            expected: m,
            found: syndrome,
        });
    }
    if correction != n {
        return Err(DecoderError::OutputLength {
            expected: n,
            found: correction,
        });
    }
    Ok(())
}

/// A `key=value` decoder setting that could not be applied ([`crate::BpOsdConfig::set`],
/// [`crate::relay::RelayConfig::set`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingError {
    /// A name the decoder does not have.
    #[error("unknown setting `{key}` (expected one of {known})")]
    Unknown {
        /// The name given (an excerpt of it).
        key: String,
        /// The names there are.
        known: String,
    },
    /// A decoder the registry does not have ([`crate::registry`]).
    #[error("unknown decoder `{name}` (expected one of {known})")]
    UnknownDecoder {
        /// The name given (an excerpt of it).
        name: String,
        /// The registered names.
        known: String,
    },
    /// A value that does not parse as the setting's type.
    #[error("{key}: `{value}` is not {expected}")]
    Value {
        /// The setting.
        key: String,
        /// The value given (an excerpt of it).
        value: String,
        /// What it must be.
        expected: &'static str,
    },
}

impl SettingError {
    /// A value that does not parse; the key and the value are quoted as excerpts
    /// ([`crate::io::excerpt`]).
    pub fn value(key: &str, value: &str, expected: &'static str) -> SettingError {
        SettingError::Value {
            key: crate::io::excerpt(key.trim()),
            value: crate::io::excerpt(value),
            expected,
        }
    }

    /// A name that is not one of `known`, quoted as an excerpt.
    pub fn unknown(key: &str, known: &str) -> SettingError {
        SettingError::Unknown {
            key: crate::io::excerpt(key.trim()),
            known: known.to_string(),
        }
    }
}

/// Parses a setting's value.
pub(crate) fn parse_value<T: std::str::FromStr>(
    key: &str,
    value: &str,
    expected: &'static str,
) -> Result<T, SettingError> {
    value
        .trim()
        .parse()
        .map_err(|_| SettingError::value(key, value, expected))
}

/// Parses an integer setting of at most `max`; `expected` (which names the range) is the
/// error's.
pub(crate) fn parse_bounded(
    key: &str,
    value: &str,
    max: usize,
    expected: &'static str,
) -> Result<usize, SettingError> {
    match value.trim().parse::<usize>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(SettingError::value(key, value, expected)),
    }
}

/// Parses a [`crate::registry::ValueType::Flag`] setting: `0`/`1`, `false`/`true` (any case).
pub(crate) fn parse_flag(key: &str, value: &str) -> Result<bool, SettingError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(SettingError::value(key, value, "0 or 1")),
    }
}
