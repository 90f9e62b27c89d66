//! Matching on a parity-check matrix (code capacity): each column — a qubit — flips one or two
//! checks, so it is an edge to the boundary or between them, and the answer is the qubits on
//! the matched paths. The matrices of the surface codes are of this kind; a column in more
//! than two checks is refused, naming it.
//!
//! All columns weigh the same (one error rate for all), so the matching is a minimum-weight
//! correction; parallel columns (on the same checks) are one edge, answered by the first.

use std::sync::Arc;

use super::graph::{BOUNDARY, MatchingGraph};
use super::{MatchFault, MatchingDecoder};
use crate::bitmat::BitMatrix;

/// Why a check matrix cannot be matched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChecksError {
    /// A column in more than two checks.
    #[error("column {column} is in {checks} checks; matching needs every column in at most two")]
    Hyperedge {
        /// The column.
        column: usize,
        /// Its weight.
        checks: usize,
    },
    /// No column flips a check.
    #[error("no column flips a check: there is nothing to match")]
    Empty,
}

/// A matching decoder of a parity-check matrix: syndromes in, corrections out.
#[derive(Debug, Clone)]
pub struct CheckMatching {
    decoder: MatchingDecoder,
    /// The column each edge of the graph stands for.
    column_of_edge: Vec<u32>,
    cols: usize,
    /// Parity of each edge along the matched paths.
    parity: Vec<u8>,
    /// The checks that fired (capacity: every check).
    fired: Vec<u32>,
}

impl CheckMatching {
    /// The decoder of `h` (checks × columns).
    pub fn new(h: &BitMatrix, name: &str) -> Result<CheckMatching, ChecksError> {
        let mut raw = Vec::new();
        let mut column_of_edge = Vec::new();
        let mut seen = std::collections::HashMap::new();
        for j in 0..h.cols() {
            let rows: Vec<u32> = (0..h.rows())
                .filter(|&i| h.get(i, j))
                .map(|i| i as u32)
                .collect();
            let key = match rows[..] {
                [] => continue,
                [a] => (a, BOUNDARY),
                [a, b] => (a, b),
                _ => {
                    return Err(ChecksError::Hyperedge {
                        column: j,
                        checks: rows.len(),
                    });
                }
            };
            if seen.insert(key, j).is_none() {
                raw.push((key.0, key.1, 1.0, 0u64));
                column_of_edge.push(j as u32);
            }
        }
        if raw.is_empty() {
            return Err(ChecksError::Empty);
        }
        let graph = MatchingGraph::from_weights(name, h.rows(), 0, &raw);
        Ok(CheckMatching {
            parity: vec![0; raw.len()],
            fired: Vec::with_capacity(h.rows()),
            decoder: MatchingDecoder::from_graph(Arc::new(graph)),
            column_of_edge,
            cols: h.cols(),
        })
    }

    /// Checks (syndrome bits).
    pub fn checks(&self) -> usize {
        self.decoder.num_detectors()
    }

    /// Columns (correction bits).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Decodes `syndrome` (0/1 per check, any non-zero byte is 1) into `correction` (0/1 per
    /// column): the columns on the paths of a minimum-weight matching of the checks that fired.
    /// Returns the number of columns flipped. Lengths must match ([`MatchFault::Length`]).
    pub fn decode(&mut self, syndrome: &[u8], correction: &mut [u8]) -> Result<usize, MatchFault> {
        let m = self.checks();
        if syndrome.len() != m || correction.len() != self.cols {
            return Err(MatchFault::Length {
                what: if syndrome.len() != m {
                    "syndrome"
                } else {
                    "correction"
                },
                expected: if syndrome.len() != m { m } else { self.cols } as u32,
                found: if syndrome.len() != m {
                    syndrome.len()
                } else {
                    correction.len()
                } as u32,
            });
        }
        self.fired.clear();
        self.fired
            .extend((0..m as u32).filter(|&i| syndrome[i as usize] != 0));
        self.decoder
            .decode_to_edges(&self.fired, &mut self.parity)?;
        correction.fill(0);
        let mut flipped = 0;
        for (k, p) in self.parity.iter_mut().enumerate() {
            if *p != 0 {
                correction[self.column_of_edge[k] as usize] = 1;
                flipped += 1;
                *p = 0;
            }
        }
        Ok(flipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::CssCode;

    #[test]
    fn surface_codes_correct_every_single_and_most_double_errors() {
        for d in [3, 5, 7] {
            let code = CssCode::rotated_surface(d).unwrap();
            let mut m = CheckMatching::new(&code.hz, "hz").unwrap();
            let n = code.n();
            let mut syn = vec![0u8; code.hz.rows()];
            let mut corr = vec![0u8; n];
            let mut check = vec![0u8; code.hz.rows()];
            for q in 0..n {
                let mut e = vec![0u8; n];
                e[q] = 1;
                code.hz.mul_bytes(&e, &mut syn);
                m.decode(&syn, &mut corr).unwrap();
                code.hz.mul_bytes(&corr, &mut check);
                assert_eq!(check, syn, "d {d} qubit {q}");
                let residual: Vec<u8> = e.iter().zip(&corr).map(|(a, b)| a ^ b).collect();
                assert!(!code.is_logical_x_error(&residual), "d {d} qubit {q}");
            }
            // Random double errors: the correction always reproduces the syndrome.
            let mut state = 9u64;
            for _ in 0..200 {
                let mut e = vec![0u8; n];
                for _ in 0..2 {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    e[(state >> 33) as usize % n] ^= 1;
                }
                code.hz.mul_bytes(&e, &mut syn);
                m.decode(&syn, &mut corr).unwrap();
                code.hz.mul_bytes(&corr, &mut check);
                assert_eq!(check, syn);
                if d >= 5 {
                    let residual: Vec<u8> = e.iter().zip(&corr).map(|(a, b)| a ^ b).collect();
                    assert!(!code.is_logical_x_error(&residual), "d {d}: {e:?}");
                }
            }
        }
        let e = CheckMatching::new(&CssCode::bb72().hz, "bb72").unwrap_err();
        assert!(
            e.to_string()
                .contains("checks; matching needs every column in at most two")
        );
        let mut m = CheckMatching::new(&CssCode::steane().hz, "s");
        assert!(m.is_err());
        m = CheckMatching::new(&CssCode::rotated_surface(3).unwrap().hx, "hx");
        let mut m = m.unwrap();
        assert!(matches!(
            m.decode(&[0; 3], &mut [0; 9]),
            Err(MatchFault::Length { .. })
        ));
    }
}
