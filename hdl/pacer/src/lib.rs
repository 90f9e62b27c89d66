//! The round pacer, defined once: a 32-bit Fibonacci LFSR and the rule that turns its state
//! into the quiet interval before each round. `backline bench` paces software rounds with it,
//! the HWHS RTL implements the same rule in logic, and both are checked against the test
//! vectors in `vectors/` that this crate generates.
//!
//! # The rule
//!
//! * LFSR: 32 bits, taps 32, 22, 2, 1 (polynomial x³² + x²² + x² + x + 1, maximal length
//!   2³² − 1). One step shifts left by one and feeds in `s[31] ^ s[21] ^ s[1] ^ s[0]` at bit 0.
//!   The state is never zero; a zero seed is rejected.
//! * Interval of round `k` (in clock cycles): `freq + (state_k & span)`, where `state_0` is the
//!   seed and the LFSR advances [`DRAW_STRIDE`] = 64 steps after each draw
//!   (`state_{k+1} = step⁶⁴(state_k)`). Two whole register refills between draws mean
//!   consecutive intervals share no bits, and the sequence depends only on the seed, never on
//!   round timing, so software and RTL produce it identically. (One step per draw would make
//!   consecutive intervals shifted copies of each other: their mean over 10,000 rounds is off
//!   by 2 %.)
//! * `span` must be 2^N − 1 (0 included), so that `state & span` is uniform on `0 ..= span`.
//! * *b2b* is `freq = span = 0`: the next round starts as soon as the last one ends.
//!
//! The interval is a quiet period before the round; it is never part of a round-trip time.
#![no_std]
#![deny(missing_docs)]

#[cfg(test)]
extern crate std;

/// The LFSR's feedback taps, 1-indexed as in the polynomial x³² + x²² + x² + x + 1.
pub const TAPS: [u32; 4] = [32, 22, 2, 1];

/// LFSR steps between two draws.
pub const DRAW_STRIDE: u32 = 64;

/// The seed the reference engine used.
pub const REFERENCE_SEED: u32 = 1;
/// The reference random-delayed `freq` (cycles at 200 MHz: 5 ms).
pub const REFERENCE_FREQ: u32 = 1_000_000;
/// The reference random-delayed `span`.
pub const REFERENCE_SPAN: u32 = 0x0FFF_FFFF;
/// The reference engine clock.
pub const REFERENCE_CLOCK_MHZ: f64 = 200.0;

/// A 32-bit Fibonacci LFSR with the taps of [`TAPS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lfsr {
    state: u32,
}

impl Lfsr {
    /// Starts the register at `seed`, which must not be zero (the all-zero state locks up).
    pub const fn new(seed: u32) -> Result<Lfsr, PacerError> {
        if seed == 0 {
            Err(PacerError::ZeroSeed)
        } else {
            Ok(Lfsr { state: seed })
        }
    }

    /// The current state.
    #[inline]
    pub const fn state(&self) -> u32 {
        self.state
    }

    /// The state after `s`, without changing anything.
    #[inline]
    pub const fn next_state(s: u32) -> u32 {
        let feedback = ((s >> 31) ^ (s >> 21) ^ (s >> 1) ^ s) & 1;
        (s << 1) | feedback
    }

    /// Advances one step and returns the new state.
    #[inline]
    pub fn step(&mut self) -> u32 {
        self.state = Self::next_state(self.state);
        self.state
    }

    /// The state [`DRAW_STRIDE`] steps after `s`.
    #[inline]
    pub const fn next_draw_state(s: u32) -> u32 {
        let mut s = s;
        let mut i = 0;
        while i < DRAW_STRIDE {
            s = Self::next_state(s);
            i += 1;
        }
        s
    }
}

/// Why pacer settings are rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacerError {
    /// The LFSR seed is zero.
    ZeroSeed,
    /// `span` is not of the form 2^N − 1.
    SpanNotMask(u32),
    /// `freq + span` does not fit the 32-bit interval counter.
    IntervalOverflow {
        /// Fixed part.
        freq: u32,
        /// Random part mask.
        span: u32,
    },
}

impl core::fmt::Display for PacerError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PacerError::ZeroSeed => {
                write!(f, "LFSR seed must not be 0 (the all-zero state locks up)")
            }
            PacerError::SpanNotMask(s) => write!(
                f,
                "span {s:#x} is not of the form 2^N-1 (e.g. 0x0, 0xff, 0x0fffffff)"
            ),
            PacerError::IntervalOverflow { freq, span } => write!(
                f,
                "freq {freq} + span {span:#x} exceeds the 32-bit interval counter"
            ),
        }
    }
}

impl core::error::Error for PacerError {}

/// Pacer settings: the fixed and random parts of the interval, and the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacerConfig {
    /// Fixed part of every interval, in cycles.
    pub freq: u32,
    /// Mask of the random part, 2^N − 1.
    pub span: u32,
    /// LFSR seed, non-zero.
    pub seed: u32,
}

impl PacerConfig {
    /// Back-to-back: no quiet interval.
    pub const B2B: PacerConfig = PacerConfig {
        freq: 0,
        span: 0,
        seed: REFERENCE_SEED,
    };

    /// The reference system's random-delayed cadence.
    pub const REFERENCE_RANDOM_DELAYED: PacerConfig = PacerConfig {
        freq: REFERENCE_FREQ,
        span: REFERENCE_SPAN,
        seed: REFERENCE_SEED,
    };

    /// Checks seed, span and overflow.
    pub const fn validate(self) -> Result<PacerConfig, PacerError> {
        if self.seed == 0 {
            return Err(PacerError::ZeroSeed);
        }
        if !is_mask(self.span) {
            return Err(PacerError::SpanNotMask(self.span));
        }
        if self.freq as u64 + self.span as u64 > u32::MAX as u64 {
            return Err(PacerError::IntervalOverflow {
                freq: self.freq,
                span: self.span,
            });
        }
        Ok(self)
    }

    /// True for back-to-back (no quiet period at all).
    pub const fn is_b2b(&self) -> bool {
        self.freq == 0 && self.span == 0
    }

    /// The mean interval of a uniform random part: `freq + span / 2`.
    pub fn expected_mean_cycles(&self) -> f64 {
        self.freq as f64 + self.span as f64 / 2.0
    }
}

/// How rounds follow each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cadence {
    /// The next round goes out as soon as the last reply lands (freq = span = 0).
    B2b,
    /// A quiet interval of `freq + (lfsr & span)` cycles before each round.
    RandomDelayed,
}

/// Why cadence settings are refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CadenceError {
    /// Not `b2b` or `random-delayed`.
    Unknown,
    /// b2b with a quiet period.
    B2bWithQuiet,
    /// The pacer refused the settings.
    Pacer(PacerError),
}

impl core::fmt::Display for CadenceError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CadenceError::Unknown => write!(f, "unknown cadence (expected b2b or random-delayed)"),
            CadenceError::B2bWithQuiet => write!(
                f,
                "cadence b2b means freq = span = 0: use cadence random-delayed to set them"
            ),
            CadenceError::Pacer(e) => write!(f, "pacer: {e}"),
        }
    }
}

impl core::error::Error for CadenceError {}

impl core::str::FromStr for Cadence {
    type Err = CadenceError;
    fn from_str(s: &str) -> Result<Cadence, CadenceError> {
        match s {
            "b2b" => Ok(Cadence::B2b),
            "random-delayed" => Ok(Cadence::RandomDelayed),
            _ => Err(CadenceError::Unknown),
        }
    }
}

impl Cadence {
    /// Name on the command line and in traces.
    pub const fn name(self) -> &'static str {
        match self {
            Cadence::B2b => "b2b",
            Cadence::RandomDelayed => "random-delayed",
        }
    }

    /// Pacer settings from command-line style options, validated: b2b refuses a non-zero
    /// `freq` or `span`; random-delayed takes what is missing from `defaults` (freq, span).
    pub fn config(
        self,
        freq: Option<u32>,
        span: Option<u32>,
        seed: u32,
        defaults: (u32, u32),
    ) -> Result<PacerConfig, CadenceError> {
        self.settings(freq, span, seed, defaults)?
            .validate()
            .map_err(CadenceError::Pacer)
    }

    /// As [`Cadence::config`], but leaves [`PacerConfig::validate`] to the caller (the board
    /// driver reports a bad span with the register it would go to).
    pub fn settings(
        self,
        freq: Option<u32>,
        span: Option<u32>,
        seed: u32,
        defaults: (u32, u32),
    ) -> Result<PacerConfig, CadenceError> {
        Ok(match self {
            Cadence::B2b => {
                if freq.unwrap_or(0) != 0 || span.unwrap_or(0) != 0 {
                    return Err(CadenceError::B2bWithQuiet);
                }
                PacerConfig {
                    freq: 0,
                    span: 0,
                    seed,
                }
            }
            Cadence::RandomDelayed => PacerConfig {
                freq: freq.unwrap_or(defaults.0),
                span: span.unwrap_or(defaults.1),
                seed,
            },
        })
    }
}

/// A pacer setting (`freq`, `span`, `seed`) that is not a 32-bit number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotANumber;

impl core::fmt::Display for NotANumber {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("not a 32-bit number (decimal or 0x-hex, `_` separators allowed)")
    }
}

impl core::error::Error for NotANumber {}

/// Parses a pacer setting as every tool takes it: decimal or `0x` hex, with `_` separators
/// (`1_000_000`, `0x0FFF_FFFF`).
pub fn parse_setting(s: &str) -> Result<u32, NotANumber> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    let mut v: u32 = 0;
    let mut any = false;
    for c in digits.chars().filter(|&c| c != '_') {
        let d = c.to_digit(radix).ok_or(NotANumber)?;
        v = v
            .checked_mul(radix)
            .and_then(|v| v.checked_add(d))
            .ok_or(NotANumber)?;
        any = true;
    }
    if any { Ok(v) } else { Err(NotANumber) }
}

/// True when `span` is 2^N − 1 for some N in 0..=32.
pub const fn is_mask(span: u32) -> bool {
    span & span.wrapping_add(1) == 0
}

/// The interval generator: yields each round's quiet interval in cycles.
#[derive(Debug, Clone)]
pub struct Pacer {
    cfg: PacerConfig,
    lfsr: Lfsr,
}

impl Pacer {
    /// A pacer in its reset state.
    pub const fn new(cfg: PacerConfig) -> Result<Pacer, PacerError> {
        match cfg.validate() {
            Ok(cfg) => Ok(Pacer {
                cfg,
                lfsr: Lfsr { state: cfg.seed },
            }),
            Err(e) => Err(e),
        }
    }

    /// The settings.
    pub const fn config(&self) -> PacerConfig {
        self.cfg
    }

    /// The LFSR state the next interval will be drawn from.
    pub const fn state(&self) -> u32 {
        self.lfsr.state()
    }

    /// The interval of the next round, in cycles; steps the LFSR.
    #[inline]
    pub fn next_interval_cycles(&mut self) -> u32 {
        let i = self.cfg.freq + (self.lfsr.state() & self.cfg.span);
        self.lfsr.state = Lfsr::next_draw_state(self.lfsr.state);
        i
    }
}

impl Iterator for Pacer {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        Some(self.next_interval_cycles())
    }
}

/// The named vector sets that `vectors/pacer.txt` holds: (name, settings, count).
pub const VECTOR_SETS: [(&str, PacerConfig, usize); 3] = [
    ("b2b", PacerConfig::B2B, 16),
    (
        "reference_random_delayed",
        PacerConfig::REFERENCE_RANDOM_DELAYED,
        1024,
    ),
    (
        "small_span",
        PacerConfig {
            freq: 100,
            span: 0xFF,
            seed: 0xACE1,
        },
        1024,
    ),
];

/// Writes the shared test vectors in their text form: for each set, a line
/// `set NAME freq F span S seed X count N`, then N lines `k state interval`.
pub fn write_vectors(out: &mut dyn core::fmt::Write) -> core::fmt::Result {
    writeln!(
        out,
        "# backline pacer test vectors, generated by backline-pacer; do not edit."
    )?;
    writeln!(
        out,
        "# interval_k = freq + (state_k & span); state_0 = seed; state_(k+1) = 64 LFSR steps after state_k; Fibonacci LFSR taps 32,22,2,1"
    )?;
    for (name, cfg, count) in VECTOR_SETS {
        writeln!(
            out,
            "set {name} freq {} span {:#010x} seed {:#010x} count {count}",
            cfg.freq, cfg.span, cfg.seed
        )?;
        let mut p = Pacer::new(cfg).map_err(|_| core::fmt::Error)?;
        for k in 0..count {
            let state = p.state();
            let interval = p.next_interval_cycles();
            writeln!(out, "{k} {state:#010x} {interval}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;

    #[test]
    fn lfsr_matches_a_bit_serial_model() {
        // Independent model: keep the register as 32 booleans, bit i = x^(i+1) position.
        let mut bits = [false; 32];
        let seed = 0x8000_0001u32;
        for (i, b) in bits.iter_mut().enumerate() {
            *b = seed >> i & 1 == 1;
        }
        let mut l = Lfsr::new(seed).unwrap();
        for _ in 0..500 {
            let fb = TAPS
                .iter()
                .fold(false, |acc, &t| acc ^ bits[t as usize - 1]);
            bits.rotate_right(1);
            bits[0] = fb;
            let packed = bits
                .iter()
                .enumerate()
                .fold(0u32, |acc, (i, &b)| acc | (b as u32) << i);
            assert_eq!(l.step(), packed);
        }
    }

    #[test]
    fn lfsr_never_reaches_zero_and_does_not_repeat_early() {
        let mut l = Lfsr::new(REFERENCE_SEED).unwrap();
        for _ in 0..1_000_000 {
            let s = l.step();
            assert_ne!(s, 0);
            assert_ne!(s, REFERENCE_SEED, "period shorter than 10^6");
        }
    }

    #[test]
    fn rejects_bad_settings() {
        assert_eq!(Lfsr::new(0), Err(PacerError::ZeroSeed));
        for bad in [2, 0x0FFF_FFFE, 0x1000_0000, 0xF0] {
            assert_eq!(
                PacerConfig {
                    freq: 0,
                    span: bad,
                    seed: 1
                }
                .validate(),
                Err(PacerError::SpanNotMask(bad))
            );
        }
        for good in [0, 1, 3, 0xFF, 0x0FFF_FFFF, u32::MAX] {
            assert!(is_mask(good));
        }
        assert!(matches!(
            PacerConfig {
                freq: 2,
                span: u32::MAX,
                seed: 1
            }
            .validate(),
            Err(PacerError::IntervalOverflow { .. })
        ));
    }

    #[test]
    fn settings_parse_as_every_tool_takes_them() {
        assert_eq!(parse_setting("1_000_000"), Ok(1_000_000));
        assert_eq!(parse_setting("0x0FFF_FFFF"), Ok(0x0FFF_FFFF));
        assert_eq!(parse_setting("0XfF"), Ok(255));
        assert_eq!(parse_setting("4294967295"), Ok(u32::MAX));
        for bad in ["", "0x", "_", "4294967296", "0x1_0000_0000", "12a", "-1"] {
            assert_eq!(parse_setting(bad), Err(NotANumber), "{bad}");
        }
    }

    #[test]
    fn cadence_options() {
        let d = (REFERENCE_FREQ, REFERENCE_SPAN);
        assert_eq!(Cadence::B2b.config(None, None, 1, d), Ok(PacerConfig::B2B));
        assert_eq!(
            Cadence::B2b.config(Some(5), None, 1, d),
            Err(CadenceError::B2bWithQuiet)
        );
        assert_eq!(
            Cadence::RandomDelayed.config(None, None, 1, d),
            Ok(PacerConfig::REFERENCE_RANDOM_DELAYED)
        );
        assert_eq!(
            Cadence::RandomDelayed.config(None, Some(6), 1, d),
            Err(CadenceError::Pacer(PacerError::SpanNotMask(6)))
        );
        assert_eq!("b2b".parse(), Ok(Cadence::B2b));
        assert_eq!("sometimes".parse::<Cadence>(), Err(CadenceError::Unknown));
    }

    #[test]
    fn b2b_has_no_quiet_period() {
        let p = Pacer::new(PacerConfig::B2B).unwrap();
        assert!(p.take(100).all(|i| i == 0));
    }

    #[test]
    fn reference_cadence_is_uniform() {
        // SPEC §6: over 10,000 intervals the mean is within 0.5 % of the uniform expectation
        // and 20 equal bins are flat within sampling error.
        let cfg = PacerConfig::REFERENCE_RANDOM_DELAYED;
        let n = 10_000usize;
        let mut bins = [0u32; 20];
        let mut sum = 0f64;
        for i in Pacer::new(cfg).unwrap().take(n) {
            assert!(i >= cfg.freq && i <= cfg.freq + cfg.span);
            sum += i as f64;
            let r = (i - cfg.freq) as u64;
            bins[(r * 20 / (cfg.span as u64 + 1)) as usize] += 1;
        }
        let mean = sum / n as f64;
        let rel = (mean - cfg.expected_mean_cycles()).abs() / cfg.expected_mean_cycles();
        assert!(rel < 0.005, "mean off by {rel}");
        let e = n as f64 / 20.0;
        let chi2: f64 = bins.iter().map(|&o| (o as f64 - e).powi(2) / e).sum();
        // χ² with 19 degrees of freedom: 99.9th percentile is 43.82.
        assert!(chi2 < 43.82, "chi2 {chi2} bins {bins:?}");
    }

    #[test]
    fn checked_in_vectors_are_current() {
        let mut s = String::new();
        write_vectors(&mut s).unwrap();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors/pacer.txt");
        if std::env::var_os("BACKLINE_BLESS").is_some() {
            std::fs::write(path, &s).unwrap();
        }
        let on_disk = std::fs::read_to_string(path)
            .expect("vectors/pacer.txt missing: run with BACKLINE_BLESS=1 to generate it");
        assert!(
            on_disk == s,
            "vectors/pacer.txt is stale: run `BACKLINE_BLESS=1 cargo test -p backline-pacer`"
        );
    }
}
