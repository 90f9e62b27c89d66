//! A stabilizer tableau with destabilizers (the CHP algorithm), rows bit-packed in `u64`
//! words so that multiplying two rows is word-parallel.
//!
//! Rows `0..n` are destabilizers, rows `n..2n` stabilizers, row `2n` is scratch for
//! deterministic measurements. Row `i` holds the Pauli string `(-1)^r_i · Π X^x_ij Z^z_ij`.
//! Words are padded: qubits beyond `n` in the last word stay zero, so whole-word operations
//! need no tail case.

/// A Pauli on one qubit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pauli {
    /// X.
    X,
    /// Y.
    Y,
    /// Z.
    Z,
}

/// The state of `n` qubits as a stabilizer tableau.
#[derive(Debug, Clone)]
pub struct Tableau {
    n: usize,
    words: usize,
    /// `(2n + 1) × words` X bits.
    x: Vec<u64>,
    /// `(2n + 1) × words` Z bits.
    z: Vec<u64>,
    /// `2n + 1` signs.
    r: Vec<bool>,
}

impl Tableau {
    /// `n` qubits in |0…0⟩.
    pub fn new(n: usize) -> Tableau {
        let words = n.div_ceil(64).max(1);
        let mut t = Tableau {
            n,
            words,
            x: vec![0; (2 * n + 1) * words],
            z: vec![0; (2 * n + 1) * words],
            r: vec![false; 2 * n + 1],
        };
        t.reset_all();
        t
    }

    /// Number of qubits.
    pub fn qubits(&self) -> usize {
        self.n
    }

    /// Back to |0…0⟩ without reallocating.
    pub fn reset_all(&mut self) {
        self.x.fill(0);
        self.z.fill(0);
        self.r.fill(false);
        for i in 0..self.n {
            // Destabilizer i = X_i, stabilizer i = Z_i.
            self.x[i * self.words + i / 64] |= 1 << (i % 64);
            self.z[(self.n + i) * self.words + i / 64] |= 1 << (i % 64);
        }
    }

    #[inline]
    fn bit(v: &[u64], words: usize, row: usize, q: usize) -> bool {
        v[row * words + q / 64] >> (q % 64) & 1 == 1
    }

    #[inline]
    fn xb(&self, row: usize, q: usize) -> bool {
        Self::bit(&self.x, self.words, row, q)
    }

    #[inline]
    fn zb(&self, row: usize, q: usize) -> bool {
        Self::bit(&self.z, self.words, row, q)
    }

    /// Applies `f(x, z) -> (x', z', sign flip)` to column `q` of every row.
    #[inline]
    fn column(&mut self, q: usize, f: impl Fn(bool, bool) -> (bool, bool, bool)) {
        let (w, m) = (q / 64, 1u64 << (q % 64));
        for row in 0..2 * self.n {
            let i = row * self.words + w;
            let (x, z) = (self.x[i] & m != 0, self.z[i] & m != 0);
            let (nx, nz, flip) = f(x, z);
            self.x[i] = if nx { self.x[i] | m } else { self.x[i] & !m };
            self.z[i] = if nz { self.z[i] | m } else { self.z[i] & !m };
            self.r[row] ^= flip;
        }
    }

    /// Hadamard.
    pub fn h(&mut self, q: usize) {
        self.column(q, |x, z| (z, x, x && z));
    }

    /// Phase gate S.
    pub fn s(&mut self, q: usize) {
        self.column(q, |x, z| (x, z ^ x, x && z));
    }

    /// S†.
    pub fn sdg(&mut self, q: usize) {
        // S† X S = -Y: with Y = iXZ the sign flips when x && !z.
        self.column(q, |x, z| (x, z ^ x, x && !z));
    }

    /// A Pauli gate.
    pub fn pauli(&mut self, p: Pauli, q: usize) {
        match p {
            Pauli::X => self.column(q, |x, z| (x, z, z)),
            Pauli::Z => self.column(q, |x, z| (x, z, x)),
            Pauli::Y => self.column(q, |x, z| (x, z, x ^ z)),
        }
    }

    /// CNOT with control `a`, target `b`.
    pub fn cx(&mut self, a: usize, b: usize) {
        assert_ne!(a, b, "CNOT needs two distinct qubits");
        let (wa, ma) = (a / 64, 1u64 << (a % 64));
        let (wb, mb) = (b / 64, 1u64 << (b % 64));
        for row in 0..2 * self.n {
            let base = row * self.words;
            let xa = self.x[base + wa] & ma != 0;
            let za = self.z[base + wa] & ma != 0;
            let xb = self.x[base + wb] & mb != 0;
            let zb = self.z[base + wb] & mb != 0;
            self.r[row] ^= xa && zb && (xb == za);
            if xa {
                self.x[base + wb] ^= mb;
            }
            if zb {
                self.z[base + wa] ^= ma;
            }
        }
    }

    /// CZ.
    pub fn cz(&mut self, a: usize, b: usize) {
        self.h(b);
        self.cx(a, b);
        self.h(b);
    }

    /// SWAP.
    pub fn swap(&mut self, a: usize, b: usize) {
        self.cx(a, b);
        self.cx(b, a);
        self.cx(a, b);
    }

    /// The phase exponent (mod 4, as a power of i) of multiplying row `src` into row `dst`.
    fn product_phase(&self, dst: usize, src: usize) -> u32 {
        let (w, d, s) = (self.words, dst * self.words, src * self.words);
        let mut plus = 0u32;
        let mut minus = 0u32;
        for k in 0..w {
            let (x1, z1, x2, z2) = (self.x[s + k], self.z[s + k], self.x[d + k], self.z[d + k]);
            // Anticommuting pairs: XY, YZ, ZX give +i; YX, ZY, XZ give −i (src · dst order).
            let p = (x1 & !z1 & x2 & z2) | (x1 & z1 & !x2 & z2) | (!x1 & z1 & x2 & !z2);
            let m = (x1 & z1 & x2 & !z2) | (!x1 & z1 & x2 & z2) | (x1 & !z1 & !x2 & z2);
            plus += p.count_ones();
            minus += m.count_ones();
        }
        let signs = 2 * (self.r[dst] as u32 + self.r[src] as u32);
        (plus + 4 * w as u32 * 64 - minus + signs) % 4
    }

    /// Row `dst` ← row `src` · row `dst`.
    fn rowsum(&mut self, dst: usize, src: usize) {
        let phase = self.product_phase(dst, src);
        debug_assert!(phase.is_multiple_of(2), "rowsum of anticommuting rows");
        self.r[dst] = phase == 2;
        let w = self.words;
        for k in 0..w {
            self.x[dst * w + k] ^= self.x[src * w + k];
            self.z[dst * w + k] ^= self.z[src * w + k];
        }
    }

    fn copy_row(&mut self, dst: usize, src: usize) {
        let w = self.words;
        self.x.copy_within(src * w..src * w + w, dst * w);
        self.z.copy_within(src * w..src * w + w, dst * w);
        self.r[dst] = self.r[src];
    }

    /// Measures qubit `q` in the Z basis. `coin` gives the outcome when it is random.
    /// Returns (outcome, whether it was random).
    pub fn measure(&mut self, q: usize, coin: impl FnOnce() -> bool) -> (bool, bool) {
        let n = self.n;
        if let Some(p) = (n..2 * n).find(|&i| self.xb(i, q)) {
            for i in 0..2 * n {
                if i != p && self.xb(i, q) {
                    self.rowsum(i, p);
                }
            }
            self.copy_row(p - n, p);
            let w = self.words;
            self.x[p * w..p * w + w].fill(0);
            self.z[p * w..p * w + w].fill(0);
            self.z[p * w + q / 64] |= 1 << (q % 64);
            let outcome = coin();
            self.r[p] = outcome;
            (outcome, true)
        } else {
            let scratch = 2 * n;
            let w = self.words;
            self.x[scratch * w..scratch * w + w].fill(0);
            self.z[scratch * w..scratch * w + w].fill(0);
            self.r[scratch] = false;
            for i in 0..n {
                if self.xb(i, q) {
                    self.rowsum(scratch, i + n);
                }
            }
            (self.r[scratch], false)
        }
    }

    /// Resets qubit `q` to |0⟩.
    pub fn reset(&mut self, q: usize, coin: impl FnOnce() -> bool) {
        if self.measure(q, coin).0 {
            self.pauli(Pauli::X, q);
        }
    }

    /// The stabilizer generators as strings like `+XZI`, for tests.
    pub fn stabilizers(&self) -> Vec<String> {
        (self.n..2 * self.n)
            .map(|i| {
                let mut s = String::from(if self.r[i] { "-" } else { "+" });
                for q in 0..self.n {
                    s.push(match (self.xb(i, q), self.zb(i, q)) {
                        (false, false) => 'I',
                        (true, false) => 'X',
                        (false, true) => 'Z',
                        (true, true) => 'Y',
                    });
                }
                s
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(t: &mut Tableau, q: usize) -> bool {
        let (v, random) = t.measure(q, || panic!("outcome should be deterministic"));
        assert!(!random);
        v
    }

    #[test]
    fn paulis_and_clifford_identities() {
        let mut t = Tableau::new(2);
        assert!(!det(&mut t, 0));
        t.pauli(Pauli::X, 0);
        assert!(det(&mut t, 0));
        t.pauli(Pauli::Y, 0);
        assert!(!det(&mut t, 0));
        // HZH = X; S·S = Z; S·S† = I.
        t.h(1);
        t.pauli(Pauli::Z, 1);
        t.h(1);
        assert!(det(&mut t, 1));
        t.pauli(Pauli::X, 1);
        t.h(0);
        t.s(0);
        t.s(0);
        t.h(0);
        assert!(det(&mut t, 0), "HSSH = HZH = X");
        t.h(1);
        t.s(1);
        t.sdg(1);
        t.h(1);
        assert!(!det(&mut t, 1), "S S† = I");
    }

    #[test]
    fn bell_pairs_correlate_and_ghz_stabilizers() {
        let mut coin = false;
        for shot in 0..20 {
            let mut t = Tableau::new(3);
            t.h(0);
            t.cx(0, 1);
            t.cx(1, 2);
            assert_eq!(t.stabilizers().len(), 3);
            coin = !coin;
            let c = coin;
            let (a, random) = t.measure(0, || c);
            assert!(random, "shot {shot}");
            assert_eq!(det(&mut t, 1), a);
            assert_eq!(det(&mut t, 2), a);
        }
    }

    #[test]
    fn y_basis_phases_are_tracked() {
        // |+i⟩ = S H |0⟩; S† H measured... : S† then H maps |+i⟩ back to |0⟩.
        let mut t = Tableau::new(1);
        t.h(0);
        t.s(0);
        t.sdg(0);
        t.h(0);
        assert!(!det(&mut t, 0));
        let mut t = Tableau::new(1);
        t.h(0);
        t.s(0);
        t.s(0);
        t.s(0);
        t.s(0);
        t.h(0);
        assert!(!det(&mut t, 0), "S^4 = I");
        // Y eigenstate: S H |0> has stabilizer +Y; applying Z flips it to -Y, then S† H gives |1>.
        let mut t = Tableau::new(1);
        t.h(0);
        t.s(0);
        assert_eq!(t.stabilizers(), vec!["+Y"]);
        t.pauli(Pauli::Z, 0);
        assert_eq!(t.stabilizers(), vec!["-Y"]);
        t.sdg(0);
        t.h(0);
        assert!(det(&mut t, 0));
    }

    #[test]
    fn many_qubits_cross_word_boundaries() {
        let n = 130;
        let mut t = Tableau::new(n);
        t.h(0);
        for q in 1..n {
            t.cx(q - 1, q);
        }
        let (a, random) = t.measure(129, || true);
        assert!(random && a);
        for q in 0..n {
            assert_eq!(det(&mut t, q), a, "qubit {q}");
        }
        t.reset(64, || false);
        assert!(!det(&mut t, 64));
    }

    #[test]
    fn cz_and_swap() {
        let mut t = Tableau::new(2);
        t.pauli(Pauli::X, 0);
        t.swap(0, 1);
        assert!(!det(&mut t, 0));
        assert!(det(&mut t, 1));
        // CZ on |+>|1> gives |->|1>: H then measure gives 1.
        let mut t = Tableau::new(2);
        t.h(0);
        t.pauli(Pauli::X, 1);
        t.cz(0, 1);
        t.h(0);
        assert!(det(&mut t, 0));
    }
}
