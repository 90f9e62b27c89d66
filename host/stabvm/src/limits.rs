//! What one run of a [`Program`] may allocate, stated once: the header counts (qubits, bits,
//! words, sessions) and the shots, checked before anything is allocated — by
//! [`crate::codec::decode`] (the executor's front door) and by [`crate::run`] (every run).
//!
//! Defaults: 4,096 qubits (a tableau of 2·4,096 rows of 2·4,096 bits, 8 MiB), 2^24 bits,
//! 2^20 words, 1,024 sessions, 10^9 shots and 2^32 output bits (shots × outputs: the output is
//! kept, one byte a bit). `BACKLINE_PROGRAM_LIMITS` (`qubits=N,bits=N,words=N,sessions=N,
//! shots=N,output_bits=N`, any subset) raises or lowers them; [`ProgramLimits::from_env`]
//! reads it.

use crate::Program;

/// The bounds of one run. `Default` is the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramLimits {
    /// Qubits of the VM (its tableau grows with their square).
    pub qubits: u32,
    /// Classical bits.
    pub bits: u32,
    /// Words.
    pub words: u32,
    /// Sessions.
    pub sessions: u32,
    /// Shots of one run.
    pub shots: u64,
    /// Output bits of one run: shots × the program's outputs.
    pub output_bits: u64,
}

impl Default for ProgramLimits {
    fn default() -> ProgramLimits {
        ProgramLimits {
            qubits: 4096,
            bits: 1 << 24,
            words: 1 << 20,
            sessions: 1024,
            shots: 1_000_000_000,
            output_bits: 1 << 32,
        }
    }
}

/// A count past its limit, or a limits setting that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// A count of the program or the run past its limit.
    #[error(
        "{what} = {count} is past the limit of {limit} (BACKLINE_PROGRAM_LIMITS={key}=N raises it)"
    )]
    Exceeded {
        /// What was counted (`qubits`, `shots`, …).
        what: &'static str,
        /// The key of `BACKLINE_PROGRAM_LIMITS` that sets its limit.
        key: &'static str,
        /// The count.
        count: u64,
        /// The limit.
        limit: u64,
    },
    /// `BACKLINE_PROGRAM_LIMITS` does not parse.
    #[error(
        "BACKLINE_PROGRAM_LIMITS: `{0}`: expected KEY=N,… with keys qubits, bits, words, \
         sessions, shots, output_bits"
    )]
    Setting(String),
}

impl ProgramLimits {
    /// The environment variable that sets them.
    pub const ENV: &'static str = "BACKLINE_PROGRAM_LIMITS";

    /// The defaults with `spec` (`key=N,…`) applied.
    pub fn parse(spec: &str) -> Result<ProgramLimits, LimitError> {
        let mut l = ProgramLimits::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || LimitError::Setting(part.chars().take(80).collect());
            let (k, v) = part.split_once('=').ok_or_else(bad)?;
            let n: u64 = v.trim().parse().map_err(|_| bad())?;
            let n32 = || u32::try_from(n).map_err(|_| bad());
            match k.trim() {
                "qubits" => l.qubits = n32()?,
                "bits" => l.bits = n32()?,
                "words" => l.words = n32()?,
                "sessions" => l.sessions = n32()?,
                "shots" => l.shots = n,
                "output_bits" => l.output_bits = n,
                _ => return Err(bad()),
            }
        }
        Ok(l)
    }

    /// The defaults with `BACKLINE_PROGRAM_LIMITS` applied (the defaults when it is unset).
    pub fn from_env() -> Result<ProgramLimits, LimitError> {
        match std::env::var(Self::ENV) {
            Ok(s) => Self::parse(&s),
            Err(_) => Ok(ProgramLimits::default()),
        }
    }

    /// Checks the header counts of `p`.
    pub fn check_program(&self, p: &Program) -> Result<(), LimitError> {
        let over = |what, key, count: u32, limit: u32| {
            if count > limit {
                Err(LimitError::Exceeded {
                    what,
                    key,
                    count: count.into(),
                    limit: limit.into(),
                })
            } else {
                Ok(())
            }
        };
        over("num_qubits", "qubits", p.num_qubits, self.qubits)?;
        over("num_bits", "bits", p.num_bits, self.bits)?;
        over("num_words", "words", p.num_words, self.words)?;
        over("num_sessions", "sessions", p.num_sessions, self.sessions)
    }

    /// Checks `shots` shots of a program with `outputs` output bits.
    pub fn check_shots(&self, shots: u64, outputs: usize) -> Result<(), LimitError> {
        if shots > self.shots {
            return Err(LimitError::Exceeded {
                what: "shots",
                key: "shots",
                count: shots,
                limit: self.shots,
            });
        }
        let bits = shots.saturating_mul(outputs as u64);
        if bits > self.output_bits {
            return Err(LimitError::Exceeded {
                what: "output bits (shots × outputs)",
                key: "output_bits",
                count: bits,
                limit: self.output_bits,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{DecodeError, decode, encode};
    use crate::{Rounds, VmError};

    struct NoRounds;

    impl Rounds for NoRounds {
        fn open(&mut self, _: u32, _: u32) -> Result<(), crate::RoundError> {
            Ok(())
        }
        fn stage(&mut self, _: u32, _: u32, _: &[u8]) -> Result<(), crate::RoundError> {
            Ok(())
        }
        fn post(&mut self, _: u32) -> Result<(), crate::RoundError> {
            Ok(())
        }
        fn collect(&mut self, _: u32) -> Result<u64, crate::RoundError> {
            Ok(0)
        }
        fn close(&mut self, _: u32) -> Result<(), crate::RoundError> {
            Ok(())
        }
    }

    /// A one-qubit program measuring its qubit into its one output bit.
    fn one_qubit() -> Program {
        let mut p = Program {
            num_qubits: 1,
            num_bits: 1,
            ..Program::default()
        };
        p.body = vec![crate::Instr::Measure { q: 0, bit: 0 }];
        p.outputs = vec![0];
        p
    }

    #[test]
    fn a_header_of_absurd_counts_is_refused_before_anything_is_allocated() {
        let header = encode(&Program::default());
        // The empty program's header: magic, format, four counts, five empty lists.
        assert_eq!(header.len(), 42);
        for (at, what) in [(6, "num_qubits"), (10, "num_bits"), (14, "num_words")] {
            let mut b = header.clone();
            b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            let e = decode(&b).unwrap_err();
            assert!(matches!(e, DecodeError::Limits(_)), "{e:?}");
            assert!(
                e.to_string().contains(&format!("{what} = 4294967295")),
                "{e}"
            );
            // All three at once, with four bytes more: still the limit, not an abort.
            b[6..18].copy_from_slice(&[0xff; 12]);
            b.extend_from_slice(&[0; 4]);
            assert!(matches!(decode(&b), Err(DecodeError::Limits(_))));
        }
        // The same counts handed to a run directly.
        let p = Program {
            num_qubits: u32::MAX,
            ..one_qubit()
        };
        let e = crate::run(&p, 1, 1, &mut NoRounds).unwrap_err();
        assert!(matches!(e, VmError::Limits(_)), "{e:?}");
        assert!(
            e.to_string()
                .contains("BACKLINE_PROGRAM_LIMITS=qubits=N raises it"),
            "{e}"
        );
    }

    #[test]
    fn shots_past_the_limit_are_refused_before_the_run() {
        let p = one_qubit();
        for shots in [1_000_000_000_000u64, u64::MAX] {
            let e = crate::run(&p, shots, 1, &mut NoRounds).unwrap_err();
            assert!(
                matches!(
                    e,
                    VmError::Limits(LimitError::Exceeded { what: "shots", .. })
                ),
                "{e:?}"
            );
        }
        // Within the shot limit, past the output bits.
        let wide = Program {
            outputs: vec![0; 1000],
            ..one_qubit()
        };
        let e = crate::run(&wide, 100_000_000, 1, &mut NoRounds).unwrap_err();
        assert!(e.to_string().contains("output_bits"), "{e}");
        assert_eq!(crate::run(&p, 3, 1, &mut NoRounds).unwrap().bits.len(), 3);
    }

    #[test]
    fn limits_parse_and_raise() {
        let l = ProgramLimits::parse("qubits=10, shots=5").unwrap();
        assert_eq!((l.qubits, l.shots), (10, 5));
        assert_eq!(l.bits, ProgramLimits::default().bits);
        for bad in ["qubits", "qubits=x", "flops=3", "qubits=4294967296"] {
            assert!(ProgramLimits::parse(bad).is_err(), "{bad}");
        }
        let p = one_qubit();
        assert!(l.check_shots(5, 1).is_ok());
        assert!(l.check_shots(6, 1).is_err());
        let big = Program {
            num_qubits: 11,
            ..p
        };
        assert!(l.check_program(&big).is_err());
        assert!(ProgramLimits::default().check_program(&big).is_ok());
    }
}
