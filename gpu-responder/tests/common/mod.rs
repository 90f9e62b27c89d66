//! The kernel checks shared by the host emulation (`tests/emulation.rs`) and a real GPU
//! (`tests/device.rs`): the same source, rings, launcher and assertions; only the backend
//! differs.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use backline_decoders::codes::CssCode;
use backline_decoders::{BpMethod, BpOsdConfig, CssDecoder, OsdMethod};
use backline_gpu::{GpuCoprocessor, GpuFloor, GpuFunction, GpuOptions};
use backline_ring::{RingServer, WaitPolicy};
use backline_wire::{Geometry, Kind, Seq, Status};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The configurations the per-code checks decode with.
pub fn configs(code: &str) -> Vec<(BpOsdConfig, usize, bool)> {
    let base = min_sum_cs7();
    match code {
        "hgp13" => vec![
            (base.clone(), 10_000, true),
            (
                BpOsdConfig {
                    bp_method: BpMethod::ProductSum,
                    osd_method: OsdMethod::Osd0,
                    ..base
                },
                2_000,
                false,
            ),
        ],
        "surface5" => vec![
            (base.clone(), 10_000, true),
            (
                BpOsdConfig {
                    ms_scaling_factor: 0.0,
                    osd_method: OsdMethod::Osd0,
                    max_iter: 0,
                    ..base
                },
                2_000,
                true,
            ),
        ],
        "bb72" => vec![(base, 10_000, true)],
        "bb144" => {
            let mut weighted = base.clone();
            weighted.error_channel = Some((0..144).map(|i| 0.02 + 0.0005 * i as f64).collect());
            vec![
                (base.clone(), 10_000, true),
                (weighted, 1_000, true),
                (
                    BpOsdConfig {
                        osd_method: OsdMethod::Off,
                        ..base
                    },
                    1_000,
                    true,
                ),
            ]
        }
        _ => unreachable!(),
    }
}

/// The library code of a name.
pub fn code(name: &str) -> CssCode {
    match name {
        "surface5" => CssCode::rotated_surface(5).unwrap(),
        n => CssCode::by_name(n).unwrap(),
    }
}

pub fn spin() -> WaitPolicy {
    WaitPolicy::from_micros(-1).unwrap()
}

/// Echo and Steane answer; an unknown id gets an error reply from the kernel.
pub fn echo_and_steane(o: impl Fn(u32) -> GpuOptions) {
    let gpu = GpuCoprocessor::launch(
        "t",
        o(1),
        vec![(0, GpuFunction::Echo), (7, GpuFunction::Steane)],
    )
    .unwrap();
    let mut out = [0u8; 48];
    for len in [0usize, 1, 15, 16, 17, 33, 48] {
        let input: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37) ^ 0x5A).collect();
        let (s, n) = gpu.call(0, &input, &mut out, &spin()).unwrap();
        assert_eq!(
            (s, &out[..n]),
            (Status::Ok, &input[..]),
            "echo of {len} bytes"
        );
    }
    for syn in 0u8..8 {
        let (s, n) = gpu.call(7, &[syn, 0xFF], &mut out, &spin()).unwrap();
        assert_eq!(s, Status::Ok);
        assert_eq!(&out[..n], &[backline_decoders::steane::decode(syn)]);
    }
    assert_eq!(
        gpu.call(7, &[], &mut out, &spin()).unwrap(),
        (Status::BadLength, 0)
    );
    assert_eq!(
        gpu.call(3, b"x", &mut out, &spin()).unwrap(),
        (Status::UnknownDecoder, 0)
    );
    // Still serving; counters published by the kernel.
    assert_eq!(
        gpu.call(0, b"ok", &mut out, &spin()).unwrap(),
        (Status::Ok, 2)
    );
    assert_eq!(gpu.served(), (7 + 8 + 3, 2));
    // A payload that outgrows the proxy's slot resizes it (a reset of the kernel).
    let big = vec![0xA5u8; 3000];
    let mut out = vec![0u8; 4096];
    let (s, n) = gpu.call(0, &big, &mut out, &spin()).unwrap();
    assert_eq!((s, &out[..n]), (Status::Ok, &big[..]));
    gpu.stop().unwrap();
    assert!(gpu.call(0, b"x", &mut [0u8; 8], &spin()).is_err());
}

/// Syndromes that exercise every path: code-capacity errors (BP converges, or OSD runs), and
/// arbitrary bit patterns (often outside the column space: OSD-0 of the consistent part).
pub fn syndromes(h: &backline_decoders::BitMatrix, count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (m, n) = (h.rows(), h.cols());
    (0..count)
        .map(|i| {
            let mut bits = vec![0u8; m];
            if i % 5 == 4 {
                bits.iter_mut()
                    .for_each(|b| *b = rng.random_bool(0.3) as u8);
            } else {
                let p = [0.02, 0.06, 0.12, 0.2][i % 4];
                let e: Vec<u8> = (0..n).map(|_| rng.random_bool(p) as u8).collect();
                h.mul_bytes(&e, &mut bits);
            }
            let mut packed = vec![0u8; m.div_ceil(8)];
            for (r, &b) in bits.iter().enumerate() {
                packed[r / 8] |= b << (r % 8);
            }
            packed
        })
        .collect()
}

/// Decodes `count` syndromes of each check type of `code` on the emulated GPU and on the CPU
/// decoder; every correction must be the same bytes.
/// Decodes `count` syndromes of each check type of `code` on the GPU and on the CPU decoder;
/// every correction must be the same bytes, or (`exact` false: product-sum on a GPU, whose
/// tanh and log are not glibc's) all but a small fraction.
pub fn assert_bit_identical(
    o: impl Fn(u32) -> GpuOptions,
    code: &CssCode,
    config: &BpOsdConfig,
    count: usize,
    threads: u32,
    exact: bool,
) {
    let mut cpu = CssDecoder::from_code(code, config).unwrap();
    let gpu = GpuCoprocessor::launch(
        &code.name,
        o(threads),
        vec![
            (
                0,
                GpuFunction::BpOsd {
                    checks: code.hx.clone(),
                    config: config.clone(),
                },
            ),
            (
                1,
                GpuFunction::BpOsd {
                    checks: code.hz.clone(),
                    config: config.clone(),
                },
            ),
        ],
    )
    .unwrap();
    let out_bytes = code.n().div_ceil(8);
    let (mut want, mut got) = (vec![0u8; out_bytes], vec![0u8; 48.max(out_bytes)]);
    let (mut osd, mut differ) = (0usize, 0usize);
    for (id, h) in [(0u32, &code.hx), (1, &code.hz)] {
        for (i, s) in syndromes(h, count, 17 + id as u64).iter().enumerate() {
            let n = cpu.respond(id, s, &mut want).unwrap();
            osd += cpu.last_info().osd_used as usize;
            let (status, len) = gpu.call(id, s, &mut got, &spin()).unwrap();
            assert_eq!(status, Status::Ok);
            if exact {
                assert_eq!(
                    &got[..len],
                    &want[..n],
                    "{} decoder {id} syndrome #{i} {s:02x?} with {config:?}",
                    code.name
                );
            } else if got[..len] != want[..n] {
                differ += 1;
            }
        }
    }
    if !exact {
        eprintln!(
            "{}: {differ} of {} corrections differ from the CPU's ({config:?})",
            code.name,
            2 * count
        );
        assert!(differ * 100 <= 2 * count, "{differ} of {}", 2 * count);
    }
    // The comparison covered OSD, not only converged BP.
    if config.osd_method != OsdMethod::Off {
        assert!(osd > count / 20, "{}: OSD ran {osd} times", code.name);
    }
}

/// Min-sum, α = 0.625, 10 iterations, OSD-CS of order 7.
pub fn min_sum_cs7() -> BpOsdConfig {
    BpOsdConfig {
        error_rate: 0.05,
        max_iter: 10,
        ms_scaling_factor: 0.625,
        osd_method: OsdMethod::OsdCs,
        osd_order: 7,
        ..BpOsdConfig::default()
    }
}

/// Bad lengths get the CPU decoder's statuses.
pub fn bad_lengths(o: impl Fn(u32) -> GpuOptions) {
    let code = CssCode::hgp13();
    let gpu = GpuCoprocessor::launch(
        "t",
        o(1),
        vec![(
            0,
            GpuFunction::BpOsd {
                checks: code.hx.clone(),
                config: min_sum_cs7(),
            },
        )],
    )
    .unwrap();
    let m = code.hx.rows();
    let mut out = [0u8; 48];
    // A syndrome too short, or followed by a set byte, is refused; followed by zero bytes (a
    // fixed-size message) it is decoded, as by the CPU decoder.
    assert_eq!(
        gpu.call(0, &vec![0u8; m.div_ceil(8) - 1], &mut out, &spin())
            .unwrap(),
        (Status::BadLength, 0)
    );
    let mut long = vec![0u8; m.div_ceil(8) + 1];
    *long.last_mut().unwrap() = 1;
    assert_eq!(
        gpu.call(0, &long, &mut out, &spin()).unwrap(),
        (Status::BadLength, 0)
    );
    assert_eq!(
        gpu.call(0, &vec![0u8; m.div_ceil(8) + 1], &mut out, &spin())
            .unwrap()
            .0,
        Status::Ok
    );
    if !m.is_multiple_of(8) {
        let mut s = vec![0u8; m.div_ceil(8)];
        *s.last_mut().unwrap() = 0x80;
        assert_eq!(
            gpu.call(0, &s, &mut out, &spin()).unwrap(),
            (Status::BadLength, 0)
        );
    }
    // A reply buffer too small for the correction.
    let mut tiny = [0u8; 1];
    let (status, _) = gpu
        .call(0, &vec![1u8; m.div_ceil(8)], &mut tiny, &spin())
        .unwrap();
    assert_ne!(status, Status::Ok);
}

/// A controller attaches to the rings (several geometries), the proxy resumes after.
pub fn attach_and_resume(o: impl Fn(u32) -> GpuOptions) {
    let gpu = Arc::new(GpuCoprocessor::launch("t", o(2), vec![(0, GpuFunction::Echo)]).unwrap());
    let mut out = [0u8; 48];
    assert_eq!(gpu.call(0, b"before", &mut out, &spin()).unwrap().1, 6);
    for geometry in [
        Geometry {
            depth: 4,
            slot_bytes: 128,
        },
        Geometry {
            depth: 1,
            slot_bytes: 64,
        },
    ] {
        let rings = gpu.attach(geometry).unwrap();
        assert!(gpu.attach(geometry).is_err(), "one controller at a time");
        assert!(
            gpu.call(0, b"x", &mut out, &spin()).is_err(),
            "proxy refused meanwhile"
        );
        // Rounds in flight up to the depth, replies in order.
        let depth = geometry.depth as u64;
        for start in (0..64u64).step_by(depth as usize) {
            for r in start..start + depth {
                let p = r.to_le_bytes();
                rings
                    .req
                    .publish(Seq::of_round(r), Kind::Request, 0, 0, &p)
                    .unwrap();
            }
            for r in start..start + depth {
                let m = rings
                    .rep
                    .wait(Seq::of_round(r), &spin(), Duration::from_secs(5), None)
                    .unwrap();
                assert_eq!(m.payload, &r.to_le_bytes());
                assert_eq!(m.header.kind, Kind::Reply as u8);
            }
        }
        gpu.detach();
    }
    assert_eq!(
        gpu.call(0, b"after", &mut out, &spin()).unwrap(),
        (Status::Ok, 5)
    );
    // A geometry beyond the ring capacity is refused.
    let huge = Geometry {
        depth: 1 << 16,
        slot_bytes: 1 << 16,
    };
    assert!(
        gpu.attach(huge)
            .unwrap_err()
            .to_string()
            .contains("capacity")
    );
}

/// User kernels compile into the template; errors cite file:line.
pub fn user_kernels(o: impl Fn(u32) -> GpuOptions) {
    let dir = std::env::temp_dir().join(format!("backline-gpu-user-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("xor.cu");
    std::fs::write(
        &good,
        "// Replies with the request XORed with its decoder id.\n\
         BL_USER_FUNCTION bl_u32 xor_id(const bl_u8 *in, bl_u32 n, bl_u8 *out, bl_u32 cap, bl_u32 id) {\n\
             if (n > cap) return BL_USER_FAILED;\n\
             for (bl_u32 i = bl_tid(); i < n; i += bl_nthreads()) out[i] = in[i] ^ (bl_u8)id;\n\
             return n;\n\
         }\n",
    )
    .unwrap();
    let user = |id| {
        (
            id,
            GpuFunction::User {
                path: good.clone(),
                function: "xor_id".into(),
            },
        )
    };
    let gpu =
        GpuCoprocessor::launch("u", o(2), vec![user(5), user(6), (0, GpuFunction::Echo)]).unwrap();
    let mut out = [0u8; 48];
    assert_eq!(
        gpu.call(5, &[1, 2, 3], &mut out, &spin()).unwrap(),
        (Status::Ok, 3)
    );
    assert_eq!(&out[..3], &[4, 7, 6]);
    assert_eq!(
        gpu.call(6, &[1], &mut out, &spin()).unwrap(),
        (Status::Ok, 1)
    );
    assert_eq!(out[0], 7);
    assert_eq!(
        gpu.call(0, &[9], &mut out, &spin()).unwrap(),
        (Status::Ok, 1)
    );
    drop(gpu);

    let bad = dir.join("bad.cu");
    std::fs::write(
        &bad,
        "BL_USER_FUNCTION bl_u32 f(const bl_u8 *in, bl_u32 n, bl_u8 *out, bl_u32 cap, bl_u32 id) {\n\
             return no_such_thing;\n\
         }\n",
    )
    .unwrap();
    let e = GpuCoprocessor::launch(
        "u",
        o(1),
        vec![(
            0,
            GpuFunction::User {
                path: bad.clone(),
                function: "f".into(),
            },
        )],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains(&format!("{}:2", bad.display())), "{e}");
    assert!(e.contains("no_such_thing"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel that never returns: reply timeout, bounded stop, no hang.
pub fn hang(o: impl Fn(u32) -> GpuOptions) {
    let dir = std::env::temp_dir().join(format!("backline-gpu-hang-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hang.cu");
    std::fs::write(
        &path,
        "BL_USER_FUNCTION bl_u32 hang(const bl_u8 *in, bl_u32 n, bl_u8 *out, bl_u32 cap, bl_u32 id) {\n\
             volatile bl_u32 spin = 1;\n\
             while (spin) {\n\
         #if defined(BL_HOST)\n\
                 std::this_thread::sleep_for(std::chrono::milliseconds(1));\n\
         #endif\n\
             }\n\
             return 0;\n\
         }\n",
    )
    .unwrap();
    let options = GpuOptions {
        reply_timeout: Duration::from_millis(200),
        stop_timeout: Duration::from_millis(200),
        ..o(1)
    };
    let gpu = GpuCoprocessor::launch(
        "hang",
        options,
        vec![(
            0,
            GpuFunction::User {
                path,
                function: "hang".into(),
            },
        )],
    )
    .unwrap();
    let mut out = [0u8; 8];
    let t0 = Instant::now();
    let e = gpu.call(0, b"x", &mut out, &spin()).unwrap_err();
    assert!(matches!(e, backline_gpu::Error::Timeout(_)), "{e}");
    // Later calls fail at once instead of waiting again.
    assert!(gpu.call(0, b"x", &mut out, &spin()).is_err());
    assert!(!gpu.alive());
    // Stop is bounded: the kernel cannot be interrupted, so it is left running.
    assert!(gpu.stop().is_err());
    drop(gpu);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The floor kernel bounces and stops.
pub fn floor(o: impl Fn(u32) -> GpuOptions) {
    let mut floor = GpuFloor::launch(&o(1)).unwrap();
    for _ in 0..1000 {
        floor.bounce(Duration::from_secs(5)).unwrap();
    }
    drop(floor);
}

/// The same answers from blocks of odd sizes (stride and barrier mistakes show here), on
/// product-sum's scratch and on the weighted sweep too.
pub fn thread_count_independence(o: impl Fn(u32) -> GpuOptions + Copy, exact_product_sum: bool) {
    assert_bit_identical(o, &CssCode::hgp13(), &min_sum_cs7(), 300, 3, true);
    let ps = BpOsdConfig {
        bp_method: BpMethod::ProductSum,
        ..min_sum_cs7()
    };
    assert_bit_identical(
        o,
        &CssCode::rotated_surface(5).unwrap(),
        &ps,
        200,
        5,
        exact_product_sum,
    );
    let mut weighted = min_sum_cs7();
    weighted.error_channel = Some((0..72).map(|i| 0.03 + 0.0004 * i as f64).collect());
    assert_bit_identical(o, &CssCode::bb72(), &weighted, 100, 4, true);
}

/// Every configuration of [`configs`] for `name`, bit-identical where `exact` (and
/// `exact_product_sum` for product-sum).
pub fn code_checks(o: impl Fn(u32) -> GpuOptions + Copy, name: &str, exact_product_sum: bool) {
    let code = code(name);
    for (config, count, exact) in configs(name) {
        let exact = exact && (config.bp_method != BpMethod::ProductSum || exact_product_sum);
        assert_bit_identical(o, &code, &config, count, 1, exact);
    }
}
