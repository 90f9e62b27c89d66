//! The structures the host and the kernels share, defined once here.
//!
//! Each `#[repr(C)]` struct below is also written out as a C `typedef` into
//! `kernels/backline_gpu.h` by [`write_header`], together with the slot layout of
//! `backline-wire` (header size, field offsets, kinds, statuses). The kernels include that
//! header and nothing else that describes memory shared with the host, so no offset is ever
//! written twice; a test fails when the checked-in header is stale
//! (`BACKLINE_BLESS=1 cargo test -p backline-gpu` rewrites it).
//!
//! Device addresses are `u64` fields (a CUDA `CUdeviceptr`, a HIP device pointer, or a host
//! pointer under emulation); every field is 4 or 8 bytes and naturally aligned, so the C and
//! Rust layouts agree without packing, which the `const` assertions pin.

use std::fmt::{self, Write};

use backline_wire::{HEADER_BYTES, Kind, SEQ_OFFSET_IN_HEADER, SLOT_ALIGN, Status, WIRE_VERSION};

/// Writes one C typedef per struct, in declaration order.
macro_rules! shared_structs {
    ($(
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ident ),* $(,)?
        }
    )*) => {
        $(
            $(#[$meta])*
            #[repr(C)]
            #[derive(Debug, Clone, Copy, Default, PartialEq)]
            pub struct $name {
                $( $(#[$fmeta])* pub $field: $ty ),*
            }
        )*

        /// Writes the C declarations of every shared struct.
        fn write_structs(out: &mut dyn Write) -> fmt::Result {
            $(
                writeln!(out, "typedef struct {} {{", stringify!($name))?;
                $( writeln!(out, "    {} {};", c_type(stringify!($ty)), stringify!($field))?; )*
                writeln!(out, "}} {};", stringify!($name))?;
                writeln!(
                    out,
                    "BL_STATIC_ASSERT(sizeof({}) == {}, \"{} layout\");",
                    stringify!($name),
                    std::mem::size_of::<$name>(),
                    stringify!($name)
                )?;
                writeln!(out)?;
            )*
            Ok(())
        }
    };
}

fn c_type(rust: &str) -> &'static str {
    match rust {
        "u32" => "bl_u32",
        "u64" => "bl_u64",
        "i32" => "bl_i32",
        other => panic!("no C type for {other}"),
    }
}

shared_structs! {
    /// What a persistent kernel is launched with (one per coprocessor), in device memory.
    pub struct BlLaunch {
        /// Request ring (controller writes, kernel reads): device address, `depth × slot_bytes`.
        pub req: u64,
        /// Reply ring (kernel writes, controller reads).
        pub rep: u64,
        /// The [`BlControl`] block (mapped host memory).
        pub ctl: u64,
        /// `n_fns` [`BlFunction`] entries (device memory).
        pub fns: u64,
        /// Device scratch of `slot_bytes` bytes: the request slot's tail as read.
        pub stage_in: u64,
        /// Device scratch of `slot_bytes` bytes: the reply payload before it is written out.
        pub stage_out: u64,
        /// Entries of `fns`.
        pub n_fns: u32,
        /// Polls of the request between two looks at the control block.
        pub poll_batch: u32,
        /// Bytes of each ring's memory (the largest `depth × slot_bytes` allowed).
        pub ring_capacity: u32,
        /// Bytes of `stage_in` and `stage_out` (the largest slot allowed).
        pub stage_bytes: u32,
    }

    /// The control block between the host and a running kernel, in mapped host memory. The
    /// host writes `stop`, `pause`, `resume` and the geometry; the kernel writes the rest.
    /// Every access on either side is atomic (acquire/release at system scope).
    pub struct BlControl {
        /// Host → kernel: ring depth (a power of two), read at start and at every resume.
        pub depth: u32,
        /// Host → kernel: bytes per slot (a power of two ≥ 64), read with `depth`.
        pub slot_bytes: u32,
        /// Host → kernel: non-zero asks the kernel to return.
        pub stop: u32,
        /// Host → kernel: a pause request numbered `pause` (a new controller attaches).
        pub pause: u32,
        /// Kernel → host: the last pause request acknowledged; the kernel then polls only this
        /// block until `resume` reaches the same number.
        pub paused: u32,
        /// Host → kernel: rings are zeroed, start again at round 0.
        pub resume: u32,
        /// Kernel → host: 1 once the kernel polls its ring.
        pub running: u32,
        /// Kernel → host: 1 just before the kernel returns.
        pub exited: u32,
        /// Kernel → host: requests answered (wraps).
        pub served: u32,
        /// Kernel → host: requests answered with a status other than ok (wraps).
        pub failed: u32,
    }

    /// One coprocessor function of a kernel, selected by the request's `decoder_id`.
    pub struct BlFunction {
        /// The `decoder_id` it serves.
        pub decoder_id: u32,
        /// `BL_FN_*`.
        pub kind: u32,
        /// Kind-specific data: a device address of a [`BlBposd`] for `BL_FN_BPOSD`, 0 else.
        pub data: u64,
    }

    /// A BP+OSD decoder for one check matrix (device memory): sizes, settings, read-only
    /// tables and the scratch of one decode. Arrays are device addresses.
    pub struct BlBposd {
        /// Checks (syndrome bits).
        pub m: u32,
        /// Bits (correction length).
        pub n: u32,
        /// Edges of the Tanner graph (ones of the matrix).
        pub edges: u32,
        /// `BL_BP_MIN_SUM` or `BL_BP_PRODUCT_SUM`.
        pub method: u32,
        /// Iterations (`max_iter`, or `n` when it was 0).
        pub max_iter: u32,
        /// Non-zero: a decode may stop early at an exact fixed point (fixed `α`).
        pub fixed_point: u32,
        /// `BL_OSD_OFF`, `BL_OSD_0` or `BL_OSD_CS`.
        pub osd: u32,
        /// Combination-sweep order in force (0 for OSD-0).
        pub order: u32,
        /// Rank of the checks over GF(2).
        pub rank: u32,
        /// Non-zero when every bit has the same error rate (Hamming-weight sweep).
        pub uniform: u32,
        /// 64-bit words per row of the augmented matrix (`n + 1` columns).
        pub wpr: u32,
        /// Request bytes: `⌈m/8⌉`.
        pub in_bytes: u32,
        /// Reply bytes: `⌈n/8⌉`.
        pub out_bytes: u32,
        /// Padding to 8 bytes.
        pub reserved: u32,
        /// `u32[n + 1]`: each column's first edge; edges are numbered column by column.
        pub col_start: u64,
        /// `u32[edges]`: the row of each edge (ascending within a column).
        pub edge_row: u64,
        /// `u32[edges]`: the column of each edge.
        pub edge_col: u64,
        /// `u32[m + 1]`: each row's first entry of `row_edges`.
        pub row_start: u64,
        /// `u32[edges]`: each row's edges in ascending column order.
        pub row_edges: u64,
        /// `f64[n]`: channel log-likelihood ratios `ln((1 − p)/p)`.
        pub prior: u64,
        /// `f64[n]`: OSD weights `ln(1/p)`.
        pub weight: u64,
        /// `f64[max_iter + 2]`: the min-sum factor of iteration `it` at index `it`.
        pub alpha: u64,
        /// Scratch `f64[edges]`: bit-to-check messages.
        pub b2c: u64,
        /// Scratch `f64[edges]`: check-to-bit messages.
        pub c2b: u64,
        /// Scratch `f64[edges]`: product-sum `tanh` terms in the check pass, forward partial
        /// sums in the bit pass.
        pub edge_tmp: u64,
        /// Scratch `f64[n]`: soft output.
        pub llr: u64,
        /// Scratch `u32[m]`: syndrome bits.
        pub syndrome: u64,
        /// Scratch `u32[m]`: parity of the hard decision on each check.
        pub parity: u64,
        /// Scratch `u32[n]`: hard decision, then the correction.
        pub decision: u64,
        /// Scratch `u64[m × wpr]`: the augmented, column-permuted checks.
        pub a: u64,
        /// Scratch `u32[n]`: position → column.
        pub perm: u64,
        /// Scratch `u32[n]`: column → position.
        pub pos: u64,
        /// Scratch `u32[m]`: pivot position of each reduced row.
        pub pivots: u64,
        /// Scratch `u32[n]`: pivot row of each position, or `BL_NONE`.
        pub pivot_row: u64,
        /// Scratch `u32[n]`: free positions in order.
        pub free_pos: u64,
        /// Scratch `u64[2n]`: the `(soft output, column)` pairs of the NaN-tolerant sort.
        pub sort_buf: u64,
        /// Scratch `u64[2n]`: its merge buffer.
        pub sort_tmp: u64,
    }

    /// The bare floor kernel's arguments: one word of mapped host memory bounced between
    /// the host (odd values) and the kernel (even values).
    pub struct BlFloor {
        /// The bounced word (mapped host memory).
        pub word: u64,
        /// The [`BlControl`] block.
        pub ctl: u64,
    }
}

const _: () = {
    assert!(std::mem::size_of::<BlLaunch>() == 64);
    assert!(std::mem::size_of::<BlControl>() == 40);
    assert!(std::mem::size_of::<BlFunction>() == 16);
    assert!(std::mem::offset_of!(BlBposd, col_start) == 56);
    assert!(std::mem::size_of::<BlBposd>() == 56 + 23 * 8);
    assert!(std::mem::size_of::<BlFloor>() == 16);
};

/// Function kinds of [`BlFunction::kind`].
pub const FN_ECHO: u32 = 1;
/// The Steane lookup.
pub const FN_STEANE: u32 = 2;
/// BP+OSD ([`BlBposd`]).
pub const FN_BPOSD: u32 = 3;
/// The user device function compiled into the template.
pub const FN_USER: u32 = 4;

/// BP methods of [`BlBposd::method`].
pub const BP_MIN_SUM: u32 = 0;
/// Product-sum.
pub const BP_PRODUCT_SUM: u32 = 1;
/// OSD methods of [`BlBposd::osd`].
pub const OSD_OFF: u32 = 0;
/// OSD-0.
pub const OSD_0: u32 = 1;
/// OSD-CS.
pub const OSD_CS: u32 = 2;

/// The user function's "failed" return value.
pub const USER_FAILED: u32 = u32::MAX;

/// Threads per block of the persistent kernel unless set otherwise: one warp, so every
/// barrier of a decode stays inside it.
pub const DEFAULT_THREADS: u32 = 32;

/// Bytes of block-shared scratch every launch provides (the kernel's `BlShared` must fit).
pub const SHARED_BYTES: u32 = 256;

/// Writes `kernels/backline_gpu.h`.
pub fn write_header(out: &mut dyn Write) -> fmt::Result {
    writeln!(
        out,
        "// backline GPU ABI: the slot layout of backline-wire and the structs shared with the\n\
         // host. Generated by backline-gpu (src/abi.rs); do not edit."
    )?;
    writeln!(out, "#ifndef BACKLINE_GPU_H")?;
    writeln!(out, "#define BACKLINE_GPU_H")?;
    writeln!(out)?;
    writeln!(out, "// Wire format v{WIRE_VERSION} (backline-wire).")?;
    writeln!(out, "#define BL_WIRE_VERSION {WIRE_VERSION}u")?;
    writeln!(out, "#define BL_SLOT_ALIGN {SLOT_ALIGN}u")?;
    writeln!(out, "#define BL_HEADER_BYTES {HEADER_BYTES}u")?;
    let fields = [
        (
            "PAYLOAD_LEN",
            std::mem::offset_of!(backline_wire::SlotHeader, payload_len),
        ),
        (
            "DECODER_ID",
            std::mem::offset_of!(backline_wire::SlotHeader, decoder_id),
        ),
        (
            "STATUS",
            std::mem::offset_of!(backline_wire::SlotHeader, status),
        ),
        (
            "KIND",
            std::mem::offset_of!(backline_wire::SlotHeader, kind),
        ),
        (
            "VERSION",
            std::mem::offset_of!(backline_wire::SlotHeader, version),
        ),
        ("SEQ", SEQ_OFFSET_IN_HEADER),
    ];
    for (name, off) in fields {
        writeln!(out, "#define BL_HDR_{name} {off}u")?;
    }
    writeln!(out, "#define BL_KIND_REQUEST {}u", Kind::Request as u8)?;
    writeln!(out, "#define BL_KIND_REPLY {}u", Kind::Reply as u8)?;
    for s in [
        Status::Ok,
        Status::UnknownDecoder,
        Status::BadLength,
        Status::DecoderFailed,
    ] {
        writeln!(
            out,
            "#define BL_STATUS_{} {}u",
            s.name().to_ascii_uppercase(),
            s as u16
        )?;
    }
    let table: Vec<String> = backline_decoders::steane::TABLE
        .iter()
        .map(|q| q.to_string())
        .collect();
    writeln!(
        out,
        "// The Steane lookup (backline-decoders): syndrome -> qubit, 15 = none."
    )?;
    writeln!(out, "#define BL_STEANE_TABLE {{{}}}", table.join(", "))?;
    writeln!(out)?;
    writeln!(out, "// Function kinds, BP and OSD methods (src/abi.rs).")?;
    for (name, v) in [
        ("FN_ECHO", FN_ECHO),
        ("FN_STEANE", FN_STEANE),
        ("FN_BPOSD", FN_BPOSD),
        ("FN_USER", FN_USER),
        ("BP_MIN_SUM", BP_MIN_SUM),
        ("BP_PRODUCT_SUM", BP_PRODUCT_SUM),
        ("OSD_OFF", OSD_OFF),
        ("OSD_0", OSD_0),
        ("OSD_CS", OSD_CS),
        ("USER_FAILED", USER_FAILED),
        ("NONE", u32::MAX),
        ("SHARED_BYTES", SHARED_BYTES),
    ] {
        writeln!(out, "#define BL_{name} {v}u")?;
    }
    writeln!(out)?;
    write_structs(out)?;
    writeln!(out, "#endif")
}

/// The header as a string.
pub fn header() -> String {
    let mut s = String::new();
    write_header(&mut s).expect("writing to a String");
    s
}

/// Views a shared struct as bytes, for uploads.
pub(crate) fn bytes_of<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: every shared struct is `repr(C)` of u32/u64 fields with no padding (pinned by
    // the size assertions), so all its bytes are initialised.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_declares_the_wire_layout_and_every_struct() {
        let h = header();
        assert!(h.contains("#define BL_HEADER_BYTES 16u"), "{h}");
        assert!(h.contains("#define BL_HDR_SEQ 12u"));
        assert!(h.contains("#define BL_STATUS_DECODER_FAILED 3u"));
        assert!(h.contains("typedef struct BlBposd {"));
        assert!(h.contains("    bl_u64 sort_tmp;"));
        assert!(h.contains("BL_STATIC_ASSERT(sizeof(BlLaunch) == 64"));
    }

    #[test]
    fn checked_in_header_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/backline_gpu.h");
        let text = header();
        if std::env::var_os("BACKLINE_BLESS").is_some() {
            std::fs::write(path, &text).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == text,
            "gpu-responder/kernels/backline_gpu.h is stale: run `BACKLINE_BLESS=1 cargo test -p backline-gpu`"
        );
    }
}
