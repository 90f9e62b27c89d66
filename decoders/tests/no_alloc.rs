//! The decode paths do not allocate once a decoder is built: an allocation-counting global
//! allocator counts this thread's allocations around thousands of decodes, through every BP
//! method and schedule, OSD-0, OSD-CS (Hamming and weighted paths), the lookup table and the
//! coprocessor function.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use backline_decoders::codes::CssCode;
use backline_decoders::noise::CodeCapacity;
use backline_decoders::{
    BpMethod, BpOsdConfig, BpOsdDecoder, CssDecoder, LookupDecoder, OsdInit, OsdMethod, Precision,
    Schedule,
};

thread_local! {
    /// Allocations made by this thread (const-initialised, so reading it never allocates).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: every method forwards to the system allocator with the caller's arguments; the
// counter is a const-initialised thread-local `Cell`, which needs no allocation and no lock.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: `ptr` came from this allocator, which is `System` underneath.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, which is `System` underneath.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

/// Syndromes of seeded shots on `code`'s Z checks.
fn shots(code: &CssCode, p: f64, count: usize) -> Vec<Vec<u8>> {
    let mut noise = CodeCapacity::new(p, 99);
    let mut e = vec![0u8; code.n()];
    (0..count)
        .map(|_| {
            noise.sample(&mut e);
            let mut s = vec![0u8; code.hz.rows()];
            code.hz.mul_bytes(&e, &mut s);
            s
        })
        .collect()
}

#[test]
fn decoders_do_not_allocate_after_construction() {
    // The counter sees this thread's allocations.
    let before = allocations();
    let probe = std::hint::black_box(vec![1u8; 10]);
    assert_eq!(allocations(), before + 1);
    drop(probe);

    let code = CssCode::bb72();
    let syndromes = shots(&code, 0.08, 60);
    let mut corr = vec![0u8; code.n()];
    let mut channel = vec![0.08; code.n()];
    channel[5] = 0.05;
    let mut osd_runs = 0;
    for bp_method in [BpMethod::MinimumSum, BpMethod::ProductSum] {
        for schedule in [Schedule::Parallel, Schedule::Serial] {
            for (osd_method, osd_order) in [(OsdMethod::Osd0, 0), (OsdMethod::OsdCs, 7)] {
                for (k, error_channel) in [None, Some(channel.clone())].into_iter().enumerate() {
                    // Both OSD orderings and both policies, alternating with the channel.
                    let (osd_init, osd_on_converged) = if k == 0 {
                        (OsdInit::Soft, false)
                    } else {
                        (OsdInit::MinLlr, true)
                    };
                    let config = BpOsdConfig {
                        error_rate: 0.08,
                        error_channel,
                        bp_method,
                        schedule,
                        osd_method,
                        osd_order,
                        max_iter: 12,
                        ms_scaling_factor: 0.625,
                        osd_init,
                        osd_on_converged,
                        // The f32 kernel with the second of each pair.
                        precision: if k == 0 {
                            Precision::F64
                        } else {
                            Precision::F32
                        },
                    };
                    let mut dec = BpOsdDecoder::new(&code.hz, &config).unwrap();
                    let before = allocations();
                    for s in &syndromes {
                        osd_runs += dec.decode(s, &mut corr).unwrap().osd_used as u32;
                    }
                    assert_eq!(allocations(), before, "{config:?}");
                }
            }
        }
    }
    assert!(osd_runs > 50, "OSD ran only {osd_runs} times");

    // The lookup table and the coprocessor function.
    let small = CssCode::hgp13();
    let lookup = LookupDecoder::new(&small.hz).unwrap();
    let small_syndromes = shots(&small, 0.1, 200);
    let mut small_corr = vec![0u8; small.n()];
    let config = BpOsdConfig {
        error_rate: 0.1,
        max_iter: 10,
        osd_method: OsdMethod::OsdCs,
        osd_order: 4,
        ..BpOsdConfig::default()
    };
    let mut css = CssDecoder::from_code(&code, &config).unwrap();
    let packed: Vec<Vec<u8>> = syndromes
        .iter()
        .map(|s| {
            let mut p = vec![0u8; s.len().div_ceil(8)];
            for (i, &b) in s.iter().enumerate() {
                p[i / 8] |= b << (i % 8);
            }
            p
        })
        .collect();
    let mut out = [0u8; 16];
    let before = allocations();
    for s in &small_syndromes {
        lookup.decode(s, &mut small_corr).unwrap();
    }
    for (k, p) in packed.iter().enumerate() {
        css.respond(1, p, &mut out).unwrap();
        // Errors are allocation-free too.
        assert!(css.respond(7, p, &mut out).is_err());
        assert!(css.respond(k as u32 % 2, &p[1..], &mut out).is_err());
    }
    assert_eq!(allocations(), before, "lookup or respond allocated");
}

#[test]
fn dem_decoders_do_not_allocate_after_construction() {
    use backline_decoders::dem::DetectorErrorModel;
    use backline_decoders::dem_decoder::{DemDecoder, DemDecoderSettings};
    use backline_decoders::relay::RelayConfig;
    use backline_decoders::shots::{ShotFormat, ShotTable};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/dem/");
    let text = std::fs::read_to_string(format!("{dir}surface_d3_r8_p0.01.dem")).unwrap();
    let dem = DetectorErrorModel::parse(&text, "fixture.dem").unwrap();
    let bytes = std::fs::read(format!("{dir}surface_d3_r8_p0.01.dets.b8")).unwrap();
    let dets = ShotTable::read(&bytes, ShotFormat::B8, 64, "dets.b8").unwrap();
    let mut out = [0u8; 1];
    let mut unpacked = vec![0u8; 64];
    for settings in [
        DemDecoderSettings::from(BpOsdConfig {
            max_iter: 20,
            ms_scaling_factor: 0.625,
            osd_method: OsdMethod::OsdCs,
            osd_order: 7,
            ..BpOsdConfig::default()
        }),
        DemDecoderSettings::from(BpOsdConfig {
            bp_method: BpMethod::ProductSum,
            max_iter: 10,
            ..BpOsdConfig::default()
        }),
        DemDecoderSettings::from(RelayConfig {
            stop_nconv: 3,
            alpha: Some(0.0),
            ..RelayConfig::default()
        }),
    ] {
        let mut dec = DemDecoder::new(&dem, &settings).unwrap();
        let (mut unconverged, mut legs) = (0, 0);
        let before = allocations();
        for s in 0..150 {
            let info = dec.decode_packed(dets.row(s), &mut out).unwrap();
            unconverged += !info.converged as u32;
            legs += info.legs;
            backline_decoders::shots::unpack_into(dets.row(s), &mut unpacked);
            dec.decode(&unpacked, &mut out).unwrap();
            // A refused call allocates nothing either.
            assert!(dec.decode_packed(&dets.row(s)[1..], &mut out).is_err());
        }
        assert_eq!(allocations(), before, "{settings:?}");
        // The shots exercise the slow paths: OSD, relay legs.
        assert!(unconverged > 0 || legs > 150, "{settings:?}");
    }
}

#[test]
fn streaming_decoders_do_not_allocate_after_construction() {
    streaming_does_not_allocate(backline_decoders::dem_decoder::DemDecoderSettings::from(
        BpOsdConfig {
            max_iter: 20,
            osd_method: OsdMethod::OsdCs,
            osd_order: 7,
            ..BpOsdConfig::default()
        },
    ));
    streaming_does_not_allocate(backline_decoders::dem_decoder::DemDecoderSettings::from(
        backline_decoders::matching::MatchingConfig::default(),
    ));
    streaming_does_not_allocate(backline_decoders::dem_decoder::DemDecoderSettings::from(
        backline_decoders::matching::MatchingConfig { correlations: true },
    ));
}

fn streaming_does_not_allocate(decoder: backline_decoders::dem_decoder::DemDecoderSettings) {
    use backline_decoders::dem::DetectorErrorModel;
    use backline_decoders::shots::{ShotFormat, ShotTable};
    use backline_decoders::stream::{StreamDecoder, StreamSettings};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/dem/");
    let text = std::fs::read_to_string(format!("{dir}surface_d3_r8_p0.01.dem")).unwrap();
    let dem = DetectorErrorModel::parse(&text, "fixture.dem").unwrap();
    let bytes = std::fs::read(format!("{dir}surface_d3_r8_p0.01.dets.b8")).unwrap();
    let dets = ShotTable::read(&bytes, ShotFormat::B8, 64, "dets.b8").unwrap();
    let settings = StreamSettings {
        window: Some(4),
        commit: Some(2),
        decoder,
        ..StreamSettings::default()
    };
    // A clone (as the CUQR server takes one) keeps its room too.
    let mut s = StreamDecoder::new(&dem, &settings).unwrap().clone();
    let mut events = vec![0u8; 64];
    let mut packed = [0u8; 8];
    let mut out = [0u8; 1];
    let mut decoded = 0;
    let before = allocations();
    for shot in 0..150 {
        backline_decoders::shots::unpack_into(dets.row(shot), &mut events);
        s.reset();
        for r in 0..s.rounds() {
            let d = s.round_detectors(r);
            let n = d.len().div_ceil(8);
            backline_decoders::shots::pack_into(&events[d], &mut packed[..n]);
            if s.push_round(r as u32, &packed[..n]).unwrap() {
                decoded += s.decode_ready().unwrap() as u32;
            }
            // Refused: the same round again, which allocates nothing either.
            assert!(s.push_round(r as u32, &packed[..n]).is_err());
        }
        decoded += s.finish().unwrap() as u32;
        s.observables_packed(&mut out);
    }
    assert_eq!(allocations(), before);
    assert!(decoded > 150, "{decoded}");
}

#[test]
fn matching_does_not_allocate_after_construction() {
    use backline_decoders::dem::DetectorErrorModel;
    use backline_decoders::dem_decoder::{DemDecoder, DemDecoderSettings};
    use backline_decoders::matching::{MatchFault, MatchingDecoder};
    use backline_decoders::shots::{ShotFormat, ShotTable};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/dem/");
    let text = std::fs::read_to_string(format!("{dir}surface_d3_r8_p0.01.dem")).unwrap();
    let dem = DetectorErrorModel::parse(&text, "fixture.dem").unwrap();
    let bytes = std::fs::read(format!("{dir}surface_d3_r8_p0.01.dets.b8")).unwrap();
    let dets = ShotTable::read(&bytes, ShotFormat::B8, 64, "dets.b8").unwrap();
    // Clones (one per thread in a batch) keep their scratch's room.
    let mut m = MatchingDecoder::new(&dem).unwrap().clone();
    let mut corr = MatchingDecoder::new_correlated(&dem).unwrap().clone();
    let mut corr_weight = 0i64;
    let mut dec = DemDecoder::new(
        &dem,
        &DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
    )
    .unwrap()
    .clone();
    // A model with a negative edge (the toggling path) and a boundary-less ring (the
    // no-matching fault).
    let neg = DetectorErrorModel::parse(
        "error(0.9) D0 D1\nerror(0.1) D0\nerror(0.1) D1 D2\nerror(0.2) D2\n\
         error(0.1) D3 D4\nerror(0.1) D4 D5\nerror(0.1) D5 D3\n",
        "neg.dem",
    )
    .unwrap();
    let mut n = MatchingDecoder::new(&neg).unwrap();
    let mut out = [0u8; 1];
    let mut unpacked = vec![0u8; 64];
    let mut weight = 0i64;
    let before = allocations();
    for s in 0..dets.shots() {
        weight += m.decode_mask(dets.row(s)).unwrap().weight;
        corr_weight += corr.decode_mask(dets.row(s)).unwrap().weight;
        dec.decode_packed(dets.row(s), &mut out).unwrap();
        backline_decoders::shots::unpack_into(dets.row(s), &mut unpacked);
        dec.decode(&unpacked, &mut out).unwrap();
        assert!(dec.decode_packed(&dets.row(s)[1..], &mut out).is_err());
        n.decode_mask(&[(s % 8) as u8]).unwrap();
        assert!(matches!(
            n.decode_events(&[3, 4, 5]),
            Err(MatchFault::NoPerfectMatching(_))
        ));
        n.decode_events(&[2, 0, 2, 1]).unwrap();
    }
    assert_eq!(allocations(), before);
    assert!(weight > 0 && dets.shots() >= 150);
    // The second pass matched on lowered weights.
    assert!(corr_weight < weight, "{corr_weight} against {weight}");
}
