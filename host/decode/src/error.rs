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
    /// `osd_order` larger than the number of free (non-pivot) columns, `n − rank(H)`.
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
    /// The checks have no columns, or too many entries for 32-bit edge indices.
    #[error("unsupported check matrix: {0}")]
    Matrix(String),
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
    /// An output buffer whose length is not the number of bits.
    #[error("correction buffer has {found} entries, the checks have {expected} columns")]
    OutputLength {
        /// Columns of the checks.
        expected: usize,
        /// Entries given.
        found: usize,
    },
}
