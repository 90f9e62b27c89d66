//! The tables a BP+OSD kernel decodes from: built on the host from a check matrix and
//! `backline-decoders`'s settings, with every number computed exactly as the CPU decoder
//! computes it (priors, OSD weights, the min-sum factor per iteration), so the kernel only
//! repeats the CPU's arithmetic.

use backline_decoders::{BitMatrix, BpMethod, BpOsdConfig, BpOsdDecoder, OsdMethod, Schedule};

use crate::abi::{self, BlBposd};
use crate::{Error, Result};

/// Checks an allocation size before it is asked for, so a code too large for memory is an
/// error, not an abort.
const MAX_TABLE_BYTES: usize = 1 << 30;

/// A BP+OSD decoder's device image: the header (device addresses filled in by
/// [`BposdImage::header_at`]) and the bytes of its tables and scratch.
pub(crate) struct BposdImage {
    header: BlBposd,
    /// Byte offsets of the arrays, in the order of the header's address fields.
    offsets: Vec<usize>,
    /// Tables, then zeroed scratch.
    pub bytes: Vec<u8>,
}

struct Layout {
    bytes: Vec<u8>,
    offsets: Vec<usize>,
}

impl Layout {
    fn push(&mut self, data: &[u8]) {
        let off = self.bytes.len().next_multiple_of(64);
        self.bytes.resize(off, 0);
        self.bytes.extend_from_slice(data);
        self.offsets.push(off);
    }
    fn u32s(&mut self, v: &[u32]) {
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.push(&b);
    }
    fn f64s(&mut self, v: &[f64]) {
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.push(&b);
    }
    fn scratch(&mut self, bytes: usize) {
        let off = self.bytes.len().next_multiple_of(64);
        self.bytes.resize(off + bytes.max(8), 0);
        self.offsets.push(off);
    }
}

impl BposdImage {
    /// The image for checks `h` with `config`. Refuses what the CPU decoder refuses (with its
    /// error), the serial schedule, and sizes beyond [`MAX_TABLE_BYTES`].
    pub(crate) fn new(h: &BitMatrix, config: &BpOsdConfig) -> Result<BposdImage> {
        if config.schedule == Schedule::Serial {
            return Err(Error::Unsupported(
                "the GPU BP+OSD decoder runs the parallel (flooding) schedule; \
                 schedule=serial is CPU-only"
                    .into(),
            ));
        }
        let (m, n) = (h.rows(), h.cols());
        let edges = h.count_ones();
        let wpr = (n + 1).div_ceil(64);
        // Scratch: 3 f64 per edge + tables of ~12 words per bit and row + the dense matrix.
        let estimate = edges
            .saturating_mul(3 * 8 + 12)
            .saturating_add(n.saturating_add(m).saturating_mul(64))
            .saturating_add(m.saturating_mul(wpr).saturating_mul(8));
        if estimate > MAX_TABLE_BYTES || edges >= u32::MAX as usize || n >= u32::MAX as usize {
            return Err(Error::Unsupported(format!(
                "a {m} × {n} check matrix with {edges} ones needs about {estimate} bytes of \
                 GPU tables, more than the {MAX_TABLE_BYTES} allowed"
            )));
        }
        // The CPU decoder validates the settings (error rates, scaling factor, OSD order) and
        // gives the values in force.
        let cpu = BpOsdDecoder::new(h, config)?;
        let bp = cpu.bp();
        let max_iter = bp.max_iter();
        let channel = bp.channel();
        let rank = backline_decoders::gf2::rank(h);
        let order = match config.osd_method {
            OsdMethod::OsdCs => config.osd_order.min(n - rank),
            _ => 0,
        };
        let ms = config.ms_scaling_factor;
        let alpha: Vec<f64> = (0..max_iter + 2)
            .map(|it| {
                if ms == 0.0 {
                    1.0 - 2f64.powf(-(it as f64))
                } else {
                    ms
                }
            })
            .collect();
        let prior: Vec<f64> = channel.iter().map(|&p| ((1.0 - p) / p).ln()).collect();
        let weight: Vec<f64> = channel.iter().map(|&p| (1.0 / p).ln()).collect();
        let uniform = channel.iter().all(|&p| p.to_bits() == channel[0].to_bits());

        // Edges column by column (rows ascending), and each row's edges by column.
        let t = h.transpose();
        let (mut col_start, mut edge_row, mut edge_col) = (vec![0u32], vec![], vec![]);
        let mut row_lists: Vec<Vec<u32>> = vec![Vec::new(); m];
        for c in 0..n {
            for r in t.row_ones(c) {
                row_lists[r].push(edge_row.len() as u32);
                edge_row.push(r as u32);
                edge_col.push(c as u32);
            }
            col_start.push(edge_row.len() as u32);
        }
        let mut row_start = vec![0u32];
        let mut row_edges = Vec::with_capacity(edges);
        for l in &row_lists {
            row_edges.extend_from_slice(l);
            row_start.push(row_edges.len() as u32);
        }

        let mut lay = Layout {
            bytes: Vec::new(),
            offsets: Vec::new(),
        };
        lay.u32s(&col_start);
        lay.u32s(&edge_row);
        lay.u32s(&edge_col);
        lay.u32s(&row_start);
        lay.u32s(&row_edges);
        lay.f64s(&prior);
        lay.f64s(&weight);
        lay.f64s(&alpha);
        for bytes in [
            8 * edges,   // b2c
            8 * edges,   // c2b
            8 * edges,   // edge_tmp
            8 * n,       // llr
            4 * m,       // syndrome
            4 * m,       // parity
            4 * n,       // decision
            8 * m * wpr, // a
            4 * n,       // perm
            4 * n,       // pos
            4 * m,       // pivots
            4 * n,       // pivot_row
            4 * n,       // free_pos
            16 * n,      // sort_buf
            16 * n,      // sort_tmp
        ] {
            lay.scratch(bytes);
        }
        let header = BlBposd {
            m: m as u32,
            n: n as u32,
            edges: edges as u32,
            method: match config.bp_method {
                BpMethod::MinimumSum => abi::BP_MIN_SUM,
                BpMethod::ProductSum => abi::BP_PRODUCT_SUM,
            },
            max_iter: max_iter as u32,
            fixed_point: (ms != 0.0) as u32,
            osd: match config.osd_method {
                OsdMethod::Off => abi::OSD_OFF,
                OsdMethod::Osd0 => abi::OSD_0,
                OsdMethod::OsdCs => abi::OSD_CS,
            },
            order: order as u32,
            rank: rank as u32,
            uniform: uniform as u32,
            wpr: wpr as u32,
            in_bytes: m.div_ceil(8) as u32,
            out_bytes: n.div_ceil(8) as u32,
            ..BlBposd::default()
        };
        Ok(BposdImage {
            header,
            offsets: lay.offsets,
            bytes: lay.bytes,
        })
    }

    /// The header with every array at `base + offset` (the image uploaded at `base`).
    pub(crate) fn header_at(&self, base: u64) -> BlBposd {
        let mut h = self.header;
        let a = |i: usize| base + self.offsets[i] as u64;
        let fields: [&mut u64; 23] = [
            &mut h.col_start,
            &mut h.edge_row,
            &mut h.edge_col,
            &mut h.row_start,
            &mut h.row_edges,
            &mut h.prior,
            &mut h.weight,
            &mut h.alpha,
            &mut h.b2c,
            &mut h.c2b,
            &mut h.edge_tmp,
            &mut h.llr,
            &mut h.syndrome,
            &mut h.parity,
            &mut h.decision,
            &mut h.a,
            &mut h.perm,
            &mut h.pos,
            &mut h.pivots,
            &mut h.pivot_row,
            &mut h.free_pos,
            &mut h.sort_buf,
            &mut h.sort_tmp,
        ];
        for (i, f) in fields.into_iter().enumerate() {
            *f = a(i);
        }
        h
    }

    /// Request and reply payload lengths.
    pub(crate) fn payload_bytes(&self) -> (usize, usize) {
        (
            self.header.in_bytes as usize,
            self.header.out_bytes as usize,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_lists_edges_both_ways_and_repeats_the_cpu_numbers() {
        let h = BitMatrix::from_picture("11.\n.11").unwrap();
        let config = BpOsdConfig {
            error_rate: 0.1,
            ms_scaling_factor: 0.0,
            max_iter: 3,
            osd_method: OsdMethod::OsdCs,
            osd_order: 9,
            ..BpOsdConfig::default()
        };
        let img = BposdImage::new(&h, &config).unwrap_or_else(|e| {
            // An order above n − rank is refused by a CPU decoder that does not clamp it.
            assert!(e.to_string().contains("order"), "{e}");
            BposdImage::new(
                &h,
                &BpOsdConfig {
                    osd_order: 1,
                    ..config.clone()
                },
            )
            .unwrap()
        });
        let hd = img.header_at(0);
        assert_eq!((hd.m, hd.n, hd.edges, hd.rank, hd.order), (2, 3, 4, 2, 1));
        assert_eq!((hd.in_bytes, hd.out_bytes, hd.wpr), (1, 1, 1));
        let u32s = |off: u64, n: usize| -> Vec<u32> {
            (0..n)
                .map(|i| {
                    let o = off as usize + 4 * i;
                    u32::from_le_bytes(img.bytes[o..o + 4].try_into().unwrap())
                })
                .collect()
        };
        assert_eq!(u32s(hd.col_start, 4), [0, 1, 3, 4]);
        assert_eq!(u32s(hd.edge_row, 4), [0, 0, 1, 1]);
        assert_eq!(u32s(hd.row_start, 3), [0, 2, 4]);
        assert_eq!(u32s(hd.row_edges, 4), [0, 1, 2, 3]);
        let f64_at = |off: u64, i: usize| {
            let o = off as usize + 8 * i;
            f64::from_le_bytes(img.bytes[o..o + 8].try_into().unwrap())
        };
        assert_eq!(f64_at(hd.prior, 1), (0.9f64 / 0.1).ln());
        assert_eq!(f64_at(hd.alpha, 2), 0.75, "adaptive factor 1 − 2^−2");
        assert_eq!(hd.fixed_point, 0);
        assert!(
            BposdImage::new(
                &h,
                &BpOsdConfig {
                    schedule: Schedule::Serial,
                    ..BpOsdConfig::default()
                }
            )
            .is_err()
        );
    }
}
