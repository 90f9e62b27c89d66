//! Why a model cannot be decoded by the Möbius decoder, or a shot's matching not lifted.

use std::fmt::Write;

/// A colour-code model the Möbius decoder refuses, or a shot it cannot lift.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MobiusError {
    /// A detector without a usable colour-and-basis annotation.
    #[error(
        "detector D{detector} {coords}: the Möbius decoder reads each detector's colour and \
         basis from its 4th coordinate (0, 1, 2 = red, green, blue X; 3, 4, 5 = red, green, \
         blue Z; -1 = ignored), as Chromobius does"
    )]
    Annotation {
        /// The detector.
        detector: usize,
        /// Its coordinates, as text (or that it has none).
        coords: String,
    },
    /// An error that does not split into the colour code's pieces.
    #[error(
        "line {line}: this error cannot be split into pieces of one basis that each flip one \
         detector, two, or three of different colours (rainbow triplets){rest}",
        rest = describe_rest(x, z, *obs, *one_colour)
    )]
    Decomposition {
        /// The 1-based line of its `error` instruction.
        line: u32,
        /// The X detectors left over.
        x: Vec<u32>,
        /// The Z detectors left over.
        z: Vec<u32>,
        /// The observables it flips.
        obs: u64,
        /// The model had no annotations and was read as one colour.
        one_colour: bool,
    },
    /// An error with `p = 1`.
    #[error(
        "line {line}: an error of probability 1 always happens and cannot be weighed for \
         matching: flip the detectors and observables it flips into the data instead"
    )]
    Certain {
        /// The 1-based line of its `error` instruction.
        line: u32,
    },
    /// An observable past what a mask holds.
    #[error("line {line}: observable L{observable}; the Möbius decoder tracks L0 to L63")]
    TooManyObservables {
        /// The 1-based line of the `error` instruction that flips it.
        line: u32,
        /// The observable.
        observable: u32,
    },
    /// Detection events that no set of the model's errors explains: the matching found no
    /// perfect matching (an odd number of events in a part of the graph without a boundary).
    #[error(
        "detector D{detector} fired, and no set of the model's errors explains this shot's \
         detection events (no perfect matching of the Möbius graph)"
    )]
    NoMatching {
        /// A detector of the part that could not be matched.
        detector: u32,
    },
    /// A model the sliding windows of a stream cannot take (why).
    #[error("sliding windows of the Möbius decoder: {0}")]
    Windows(String),
    /// A cycle of the shot's matching that no assignment of charges closes (a colouring the
    /// annotations got wrong, or an error the model's atoms do not cover).
    #[error(
        "the matching's cycle through D{detectors:?} cannot be lifted into errors that \
         explain its detection events (are the detectors' colours right?)"
    )]
    Lift {
        /// The detectors of the cycle, in order.
        detectors: Vec<u32>,
    },
}

impl MobiusError {
    /// A missing or bad annotation on `detector` (with `coords`, when declared).
    pub(crate) fn annotation(detector: usize, coords: Option<&[f64]>) -> MobiusError {
        let coords = match coords {
            None => "was never declared with coordinates".to_string(),
            Some(c) => format!(
                "has coordinates ({})",
                c.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        MobiusError::Annotation { detector, coords }
    }
}

fn describe_rest(x: &[u32], z: &[u32], obs: u64, one_colour: bool) -> String {
    let mut s = String::new();
    for (basis, dets) in [("X", x), ("Z", z)] {
        if !dets.is_empty() {
            let _ = write!(s, "; {basis} detectors left over:");
            for d in dets {
                let _ = write!(s, " D{d}");
            }
        }
    }
    if obs != 0 {
        let _ = write!(s, "; it flips observables {obs:#b}");
    }
    s.push_str(if one_colour {
        " (the detectors' 4th coordinates name fewer than two colours, so the model was read \
         as a matchable code of one colour; a colour code needs each detector's colour and \
         basis: 0, 1, 2 = red, green, blue X; 3, 4, 5 = red, green, blue Z)"
    } else {
        " (an error of four or more detectors of one basis needs atoms of the model to split \
         into; is each detector's colour right?)"
    });
    s
}
