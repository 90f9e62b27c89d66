//! From an annotated colour-code model to the Möbius matching graph: each detector's colour
//! and basis, the model's *atomic* errors (one detector; two of one basis; a rainbow triplet
//! of one basis), every error split into atoms, and each atom's edges in the graph of two
//! nodes per detector.

use std::collections::BTreeMap;

use super::error::MobiusError;
use crate::dem::DetectorErrorModel;

/// No detector: the empty places of an atom's three.
pub(crate) const NONE: u32 = u32::MAX;

/// A charge: the neutral one (0) or a colour (red 1, green 2, blue 3). Charges add by XOR:
/// red + green = blue, a colour twice is neutral.
pub(crate) type Charge = u8;

/// The neutral charge.
pub(crate) const NEUTRAL: Charge = 0;

/// The colour after `c` (red → green → blue → red).
#[inline]
pub(crate) fn next_colour(c: Charge) -> Charge {
    c % 3 + 1
}

/// A detector's annotation, from the 4th coordinate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A colour (1, 2, 3) and a basis (`false` X, `true` Z).
    Coloured { colour: Charge, z: bool },
    /// `-1`: the decoder drops its events.
    Ignored,
    /// No `detector` instruction gave it four coordinates (an error if an error flips it).
    Unannotated,
}

/// Each detector's role, and whether the model is read as one colour.
///
/// A model whose 4th coordinates name at least two colours is a colour code: every detector
/// an error flips must then have one, an integer in −1..=5, or it is refused, naming it. Any
/// other model (no 4th coordinates, or all of one colour — sinter uses the 4th coordinate for
/// post-selection) is read as a matchable code of one colour, every detector red X and none
/// ignored: the Möbius graph is then two copies of the matching graph, and the decoder
/// matches as matching does.
pub(crate) fn roles(dem: &DetectorErrorModel) -> Result<(Vec<Role>, bool), MobiusError> {
    let n = dem.num_detectors();
    let colour_of = |d: usize| {
        dem.detector_coords(d)
            .filter(|c| c.len() > 3 && (0.0..=5.0).contains(&c[3]) && c[3].fract() == 0.0)
            .map(|c| c[3] as u8 % 3)
    };
    let mut seen = [false; 3];
    for d in 0..n {
        if let Some(c) = colour_of(d) {
            seen[c as usize] = true;
        }
    }
    if seen.iter().filter(|&&s| s).count() < 2 {
        let one = Role::Coloured {
            colour: 1,
            z: false,
        };
        return Ok((vec![one; n], true));
    }
    let roles = (0..n)
        .map(|d| match dem.detector_coords(d) {
            Some(c) if c.len() > 3 => {
                let v = c[3];
                if v == -1.0 {
                    Ok(Role::Ignored)
                } else if (0.0..=5.0).contains(&v) && v.fract() == 0.0 {
                    let v = v as u8;
                    Ok(Role::Coloured {
                        colour: v % 3 + 1,
                        z: v >= 3,
                    })
                } else {
                    Err(MobiusError::annotation(d, Some(c)))
                }
            }
            _ => Ok(Role::Unannotated),
        })
        .collect::<Result<_, _>>()?;
    Ok((roles, false))
}

/// An atom: up to three detectors, ascending, [`NONE`] filling the rest (so that a sort puts
/// atoms in the order Chromobius's map keeps them).
pub(crate) type Atom = [u32; 3];

/// How many detectors `a` has.
#[inline]
pub(crate) fn weight(a: &Atom) -> usize {
    a.iter().filter(|&&d| d != NONE).count()
}

/// The atom of a graphlike edge `(a, b)` (`b` [`NONE`] for the boundary).
fn edge_atom((a, b): (u32, u32)) -> Atom {
    if b == NONE {
        [a, NONE, NONE]
    } else {
        atom_of(&[a, b])
    }
}

/// The atom of `dets` (at most three).
pub(crate) fn atom_of(dets: &[u32]) -> Atom {
    let mut a = [NONE; 3];
    a[..dets.len()].copy_from_slice(dets);
    a.sort_unstable();
    a
}

/// The model as the builder needs it: roles, atoms and, per error, its atoms.
pub(crate) struct Split {
    /// Each detector's colour (0 when not coloured) and basis.
    pub(crate) colour: Vec<Charge>,
    pub(crate) z: Vec<bool>,
    pub(crate) ignored: Vec<bool>,
    /// The atomic errors and the observables each flips (the last error of that shape wins).
    pub(crate) atoms: BTreeMap<Atom, u64>,
    /// Each usable error: its probability and its atoms (a decomposition).
    pub(crate) errors: Vec<(f64, Vec<Atom>)>,
    /// Errors whose atoms are already among `errors` (stim's decomposition, read as one
    /// colour), kept for the correlated pass's pairs only.
    pub(crate) correlated_only: Vec<(f64, Vec<Atom>)>,
    /// No detector was annotated: the model is read as one colour.
    pub(crate) one_colour: bool,
}

impl Split {
    /// The net charge of an atom.
    pub(crate) fn charge(&self, a: &Atom) -> Charge {
        a.iter()
            .filter(|&&d| d != NONE)
            .fold(NEUTRAL, |c, &d| c ^ self.colour[d as usize])
    }
}

/// The coloured detectors an error flips (ignored ones dropped), ascending, and its
/// observables; an unannotated detector is refused.
fn error_parts(
    dem: &DetectorErrorModel,
    roles: &[Role],
    k: usize,
    dets: &mut Vec<u32>,
) -> Result<u64, MobiusError> {
    let m = dem.mechanism(k);
    dets.clear();
    for &d in m.detectors {
        match roles[d as usize] {
            Role::Coloured { .. } => dets.push(d),
            Role::Ignored => {}
            Role::Unannotated => {
                return Err(MobiusError::annotation(
                    d as usize,
                    dem.detector_coords(d as usize),
                ));
            }
        }
    }
    let mut obs = 0u64;
    for &l in m.observables {
        if l >= 64 {
            return Err(MobiusError::TooManyObservables {
                line: m.line,
                observable: l,
            });
        }
        obs ^= 1 << l;
    }
    Ok(obs)
}

/// Reads the roles and atoms of `dem` and splits every error with `p > 0` into atoms.
pub(crate) fn split(dem: &DetectorErrorModel) -> Result<Split, MobiusError> {
    let (roles, one_colour) = roles(dem)?;
    let n = roles.len();
    let mut s = Split {
        colour: vec![NEUTRAL; n],
        z: vec![false; n],
        ignored: vec![false; n],
        atoms: BTreeMap::new(),
        errors: Vec::new(),
        correlated_only: Vec::new(),
        one_colour,
    };
    for (d, r) in roles.iter().enumerate() {
        match *r {
            Role::Coloured { colour, z } => (s.colour[d], s.z[d]) = (colour, z),
            Role::Ignored => s.ignored[d] = true,
            Role::Unannotated => {}
        }
    }
    if one_colour
        && dem.first_hyperedge().is_none()
        && dem.decomposed_errors().undetectable_part().is_none()
    {
        s.graphlike(dem)?;
        return Ok(s);
    }
    let mut dets = Vec::new();
    // The atoms first: every error that is one by itself.
    for k in 0..dem.num_mechanisms() {
        let p = dem.mechanism(k).p;
        if p <= 0.0 {
            continue;
        }
        if p >= 1.0 {
            return Err(MobiusError::Certain {
                line: dem.mechanism(k).line,
            });
        }
        let obs = error_parts(dem, &roles, k, &mut dets)?;
        if let Some(a) = s.as_atom(&dets) {
            s.atoms.insert(a, obs);
        }
    }
    // Then every error as atoms of the model.
    let (mut x, mut z) = (Vec::new(), Vec::new());
    for k in 0..dem.num_mechanisms() {
        let m = dem.mechanism(k);
        if m.p <= 0.0 {
            continue;
        }
        let obs = error_parts(dem, &roles, k, &mut dets)?;
        if dets.is_empty() {
            continue;
        }
        x.clear();
        z.clear();
        for &d in &dets {
            if s.z[d as usize] { &mut z } else { &mut x }.push(d);
        }
        if let Some(parts) = s.decompose(&mut x, &mut z, obs, m.line)? {
            s.errors.push((m.p, parts));
        }
    }
    Ok(s)
}

impl Split {
    /// A matchable model read as one colour whose errors stim decomposed into parts of one or
    /// two detectors: the atoms are those parts (merged as matching merges them: the graph
    /// is then exactly two copies of matching's), each its own error; the errors split into
    /// several parts are kept for the correlated pass only.
    fn graphlike(&mut self, dem: &DetectorErrorModel) -> Result<(), MobiusError> {
        let edges = dem.graphlike_edges();
        for e in edges {
            if e.p >= 1.0 {
                return Err(MobiusError::Certain { line: e.line });
            }
            let mut obs = 0u64;
            for &l in &e.observables {
                if l >= 64 {
                    return Err(MobiusError::TooManyObservables {
                        line: e.line,
                        observable: l,
                    });
                }
                obs ^= 1 << l;
            }
            let atom = edge_atom(e.detectors);
            self.atoms.insert(atom, obs);
            if e.p > 0.0 {
                self.errors.push((e.p, vec![atom]));
            }
        }
        for (p, parts) in dem.decomposed_errors().iter() {
            let atoms = parts
                .iter()
                .map(|&k| edge_atom(edges[k as usize].detectors))
                .collect();
            self.correlated_only.push((p, atoms));
        }
        Ok(())
    }

    /// `dets` as an atom when it is one: one detector, two of one basis, or three of one
    /// basis whose colours are all different.
    fn as_atom(&self, dets: &[u32]) -> Option<Atom> {
        let same_basis = || {
            dets.iter()
                .all(|&d| self.z[d as usize] == self.z[dets[0] as usize])
        };
        let ok = match dets.len() {
            1 => true,
            2 => same_basis(),
            3 => same_basis() && self.charge(&atom_of(dets)) == NEUTRAL,
            _ => false,
        };
        ok.then(|| atom_of(dets))
    }

    /// An error's detectors (split by basis) as atoms of the model: in two passes over the
    /// bases, the best atom of each (a whole atom; else a part that is an atom and leaves an
    /// atom, the larger part preferred), then what is left as one last atom. `None` when the
    /// error needed a piece that is not an atom of the model (Chromobius drops such errors
    /// from the graph); an error whose last piece is not even an atom's shape is refused.
    fn decompose(
        &self,
        x: &mut Vec<u32>,
        z: &mut Vec<u32>,
        obs: u64,
        line: u32,
    ) -> Result<Option<Vec<Atom>>, MobiusError> {
        let mut parts = Vec::new();
        let mut remnant = false;
        for pass in 0..3 {
            for dets in [&mut *x, &mut *z] {
                if dets.is_empty() {
                    continue;
                }
                let chosen = if pass == 2 {
                    let a = self.as_atom(dets);
                    remnant |= a.is_some_and(|a| !self.atoms.contains_key(&a));
                    a
                } else {
                    self.best_piece(dets)
                };
                let Some(a) = chosen else { continue };
                for &d in a.iter().filter(|&&d| d != NONE) {
                    if let Some(i) = dets.iter().position(|&e| e == d) {
                        dets.swap_remove(i);
                    }
                }
                parts.push(a);
            }
        }
        if !x.is_empty() || !z.is_empty() {
            return Err(MobiusError::Decomposition {
                line,
                x: x.clone(),
                z: z.clone(),
                obs,
                one_colour: self.one_colour,
            });
        }
        Ok((!remnant).then_some(parts))
    }

    /// The atom to take out of `dets` (one basis): `dets` itself when it is an atom of the
    /// model; else, of the ways to cut it in two parts of at most three, the first whose
    /// larger-index part (the rest) is an atom — else whose chosen part is — preferring a cut
    /// where both are.
    fn best_piece(&self, dets: &[u32]) -> Option<Atom> {
        let n = dets.len();
        if n <= 3 {
            let whole = atom_of(dets);
            if self.atoms.contains_key(&whole) {
                return Some(whole);
            }
        }
        // The sizes of the chosen part tried, by the number of detectors.
        let sizes: &[usize] = match n {
            2 => return self.single(dets[0]),
            3 => &[1],
            4 => &[2, 1],
            5 => &[2],
            6 => &[3],
            _ => return None,
        };
        let mut best: Option<Atom> = None;
        let mut best_score = 0;
        let mut chosen = [0usize; 3];
        let (mut part, mut rest) = ([NONE; 3], [NONE; 3]);
        for &size in sizes {
            let mut first = true;
            let mut row = usize::MAX;
            while next_subset(&mut chosen[..size], n, &mut first) {
                // Pairs and triplets stop at a new first index once a cut leaves an atom.
                if size > 1 && chosen[0] != row {
                    if best_score >= 2 {
                        break;
                    }
                    row = chosen[0];
                }
                let (mut p, mut r) = (0, 0);
                for (i, &d) in dets.iter().enumerate() {
                    if chosen[..size].contains(&i) {
                        part[p] = d;
                        p += 1;
                    } else {
                        rest[r] = d;
                        r += 1;
                    }
                }
                let (part, other) = (atom_of(&part[..p]), atom_of(&rest[..r]));
                let c1 = self.atoms.contains_key(&part);
                let c2 = self.atoms.contains_key(&other);
                let score = usize::from(c1) + 2 * usize::from(c2);
                if score <= best_score {
                    continue;
                }
                // A part taken alone must not leave a triplet that can never be an atom.
                if score == 1 && weight(&other) == 3 && self.charge(&other) != NEUTRAL {
                    continue;
                }
                if score == 2 && weight(&part) == 3 && self.charge(&part) != NEUTRAL {
                    continue;
                }
                best = Some(if c2 { other } else { part });
                best_score = score;
            }
        }
        best
    }

    /// The single-detector atom of `d`, when the model has it.
    fn single(&self, d: u32) -> Option<Atom> {
        let a = [d, NONE, NONE];
        self.atoms.contains_key(&a).then_some(a)
    }
}

/// Steps `idx` (ascending indices below `n`) to the next subset of its size in
/// lexicographic order; the first call (with `*first`) starts at `0, 1, …`. `false` when
/// there is none left.
fn next_subset(idx: &mut [usize], n: usize, first: &mut bool) -> bool {
    let k = idx.len();
    if *first {
        *first = false;
        for (i, v) in idx.iter_mut().enumerate() {
            *v = i;
        }
        return k <= n;
    }
    let mut i = k;
    while i > 0 {
        i -= 1;
        if idx[i] < n - k + i {
            idx[i] += 1;
            for j in i + 1..k {
                idx[j] = idx[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

/// The edges of atom `a` in the Möbius graph (node `2d + s` is detector `d`'s copy in the
/// `s`-th of the two restricted lattices its colour is in, the other colours in order:
/// red's are not-green then not-blue, green's not-red then not-blue, blue's not-red then
/// not-green): one detector joins its two copies; two join copy to copy (crossed when their
/// colours are red and blue); a rainbow triplet gives one edge in each restricted lattice.
pub(crate) fn atom_edges(colour: &[Charge], a: &Atom, out: &mut Vec<(u32, u32)>) {
    let [n1, n2, n3] = *a;
    if n1 == NONE {
        return;
    }
    if n2 == NONE {
        out.push((2 * n1, 2 * n1 + 1));
    } else if n3 == NONE {
        let crossed = u32::from(colour[n1 as usize] ^ colour[n2 as usize] == 2);
        out.push((2 * n1, (2 * n2) ^ crossed));
        out.push((2 * n1 + 1, (2 * n2 + 1) ^ crossed));
    } else {
        let mut rgb = [NONE; 3];
        for d in [n1, n2, n3] {
            rgb[colour[d as usize] as usize - 1] = d;
        }
        let [r, g, b] = rgb;
        // Red-green (not blue), green-blue (not red), red-blue (not green).
        out.push(sorted(2 * r + 1, 2 * g + 1));
        out.push(sorted(2 * g, 2 * b));
        out.push(sorted(2 * r, 2 * b + 1));
    }
}

fn sorted(a: u32, b: u32) -> (u32, u32) {
    if a <= b { (a, b) } else { (b, a) }
}
