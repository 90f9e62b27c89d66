//! Real syndromes for decoder rounds: seeded code-capacity errors on a CSS code, each round's
//! syndrome as the request, and a check of each reply.
//!
//! A [`SyndromeSampler`] serves one half of a code — the X checks `hx` (which see Z errors) or
//! the Z checks `hz` (which see X errors), the two halves of a `bposd:` coprocessor function.
//! For round `r` it draws an error `e` (i.i.d. flips at the error rate, from `xoshiro256++`
//! seeded once), sends `H·e` bit-packed LSB-first (`⌈m/8⌉` bytes, padding bits zero: the
//! payload is sized by the code, not by the user), and keeps `e` until the reply of round `r`
//! comes back. A reply is *right* when it is `⌈n/8⌉` bytes and the correction `c` reproduces
//! the syndrome (`H·c = H·e`); it is a *logical failure* when it is right but `e + c`
//! anticommutes with a logical of the other type. Logical failures are decoding outcomes, not
//! transport faults, and are counted apart.

use backline_decoders::BitMatrix;
use backline_decoders::codes::CssCode;
use backline_decoders::noise::CodeCapacity;

/// Which checks of a CSS code a sampler serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    /// `hx` (decoder id 0 of a `bposd:` function): Z errors, Z corrections.
    XChecks,
    /// `hz` (decoder id 1): X errors, X corrections.
    ZChecks,
}

/// What a reply was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The correction reproduces the syndrome and leaves no logical error.
    Right,
    /// The correction reproduces the syndrome but leaves a logical error.
    LogicalFailure,
    /// The wrong length, or a correction that does not reproduce the syndrome.
    Wrong,
}

/// Seeded errors, their syndromes as requests, and the check of each reply.
#[derive(Debug, Clone)]
pub struct SyndromeSampler {
    h: BitMatrix,
    logicals: BitMatrix,
    noise: CodeCapacity,
    /// The errors of the rounds in flight, by round modulo their number.
    errors: Vec<Vec<u8>>,
    syndrome: Vec<u8>,
    check: Vec<u8>,
    correction: Vec<u8>,
    logical_failures: u64,
}

impl SyndromeSampler {
    /// A sampler for `half` of `code` at error rate `p` (in [0, 1]) with `seed`, for up to
    /// `in_flight` rounds outstanding at once.
    pub fn new(code: &CssCode, half: Half, p: f64, seed: u64, in_flight: usize) -> SyndromeSampler {
        let (h, logicals) = match half {
            Half::XChecks => (code.hx.clone(), code.lx.clone()),
            Half::ZChecks => (code.hz.clone(), code.lz.clone()),
        };
        let n = h.cols();
        SyndromeSampler {
            syndrome: vec![0; h.rows()],
            check: vec![0; h.rows()],
            correction: vec![0; n],
            errors: vec![vec![0; n]; in_flight.max(1)],
            h,
            logicals,
            noise: CodeCapacity::new(p, seed),
            logical_failures: 0,
        }
    }

    /// Request bytes: `⌈m/8⌉`.
    pub fn request_bytes(&self) -> usize {
        self.h.rows().div_ceil(8)
    }

    /// Reply bytes: `⌈n/8⌉`.
    pub fn reply_bytes(&self) -> usize {
        self.h.cols().div_ceil(8)
    }

    /// Logical failures among the replies checked so far.
    pub fn logical_failures(&self) -> u64 {
        self.logical_failures
    }

    /// Draws round `round`'s error and writes its syndrome into `buf` (`request_bytes()`
    /// long).
    pub fn fill(&mut self, round: u64, buf: &mut [u8]) {
        let k = (round % self.errors.len() as u64) as usize;
        let e = &mut self.errors[k];
        self.noise.sample(e);
        self.h.mul_bytes(e, &mut self.syndrome);
        pack(&self.syndrome, buf);
    }

    /// Checks round `round`'s reply against the error drawn for it.
    pub fn check(&mut self, round: u64, reply: &[u8]) -> Verdict {
        if reply.len() != self.reply_bytes() {
            return Verdict::Wrong;
        }
        let k = (round % self.errors.len() as u64) as usize;
        for (i, c) in self.correction.iter_mut().enumerate() {
            *c = reply[i / 8] >> (i % 8) & 1;
        }
        let e = &self.errors[k];
        self.h.mul_bytes(e, &mut self.syndrome);
        self.h.mul_bytes(&self.correction, &mut self.check);
        if self.check != self.syndrome {
            return Verdict::Wrong;
        }
        for (c, &x) in self.correction.iter_mut().zip(e) {
            *c ^= x;
        }
        let logical = (0..self.logicals.rows()).any(|l| {
            self.logicals
                .row_ones(l)
                .fold(false, |acc, q| acc ^ (self.correction[q] == 1))
        });
        if logical {
            self.logical_failures += 1;
            Verdict::LogicalFailure
        } else {
            Verdict::Right
        }
    }
}

/// Packs 0/1 bytes LSB-first into `out` (which it overwrites).
fn pack(bits: &[u8], out: &mut [u8]) {
    out.fill(0);
    for (i, &b) in bits.iter().enumerate() {
        out[i / 8] |= b << (i % 8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backline_decoders::{BpOsdConfig, CssDecoder};

    #[test]
    fn syndromes_are_sized_by_the_code_and_replies_checked() {
        // The rotated surface code of distance 21: 220 Z checks (not a multiple of 8) and 441
        // qubits; and the [[144,12,12]] code: 72 checks.
        for (name, half) in [("surface21", Half::ZChecks), ("bb144", Half::XChecks)] {
            let code = CssCode::by_name(name).unwrap();
            let mut s = SyndromeSampler::new(&code, half, 0.01, 7, 2);
            let mut dec = CssDecoder::from_code(
                &code,
                &BpOsdConfig {
                    error_rate: 0.01,
                    max_iter: 20,
                    ..BpOsdConfig::default()
                },
            )
            .unwrap();
            let id = match half {
                Half::XChecks => 0,
                Half::ZChecks => 1,
            };
            let mut req = vec![0u8; s.request_bytes()];
            let mut out = vec![0u8; s.reply_bytes()];
            let (mut right, mut nonzero) = (0, 0);
            for round in 0..200 {
                s.fill(round, &mut req);
                nonzero += req.iter().any(|&b| b != 0) as u32;
                let len = dec.respond(id, &req, &mut out).unwrap();
                match s.check(round, &out[..len]) {
                    Verdict::Right => right += 1,
                    Verdict::LogicalFailure => {}
                    Verdict::Wrong => panic!("{name}: round {round} wrong"),
                }
            }
            assert!(nonzero > 100 && right > 190, "{name}: {nonzero} {right}");
            // A correction that does not reproduce the syndrome, and a short reply.
            s.fill(500, &mut req);
            let len = dec.respond(id, &req, &mut out).unwrap();
            out[0] ^= 1;
            assert_eq!(s.check(500, &out[..len]), Verdict::Wrong);
            assert_eq!(s.check(500, &out[..len - 1]), Verdict::Wrong);
        }
        let code = CssCode::by_name("surface21").unwrap();
        assert_eq!(
            SyndromeSampler::new(&code, Half::ZChecks, 0.01, 1, 1).request_bytes(),
            28
        );
    }

    #[test]
    fn a_logical_operator_is_a_logical_failure() {
        let code = CssCode::steane();
        let mut s = SyndromeSampler::new(&code, Half::ZChecks, 0.0, 1, 1);
        let mut req = [0u8; 1];
        s.fill(0, &mut req);
        assert_eq!(req, [0]);
        // The zero error answered with an X logical: syndrome reproduced, logical failure.
        let mut reply = [0u8; 1];
        for q in code.lx.row_ones(0) {
            reply[0] |= 1 << q;
        }
        assert_eq!(s.check(0, &reply), Verdict::LogicalFailure);
        assert_eq!(s.check(0, &[0]), Verdict::Right);
        assert_eq!(s.logical_failures(), 1);
    }
}
