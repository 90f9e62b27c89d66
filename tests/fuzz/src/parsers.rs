//! Targets for the parsers of bytes and text: the wire, the handshake, ring memory, pacer
//! settings, matrix and syndrome files.

use std::ptr::NonNull;

use backline_pacer::{Cadence, Pacer, PacerConfig, parse_setting};
use backline_ring::RingView;
use backline_wire::{
    Geometry, HANDSHAKE_BYTES, HEADER_BYTES, Handshake, SLOT_ALIGN, Seq, SlotHeader,
    decode_message, encode_message, seal_handshake,
};

use crate::Bytes;

/// A message image: whatever decodes re-encodes to the same bytes; the header alone always
/// round-trips.
pub fn wire_message(data: &[u8]) {
    if let Ok((header, payload)) = decode_message(data) {
        assert_eq!(payload.len() + HEADER_BYTES, data.len());
        assert_eq!(header.payload_len as usize, payload.len());
        let mut out = vec![0u8; data.len()];
        encode_message(&mut out, &header, payload);
        assert_eq!(out, data, "a decoded message re-encodes to its bytes");
    }
    if let Some(h) = data.first_chunk::<HEADER_BYTES>() {
        assert_eq!(&SlotHeader::from_bytes(h).to_bytes(), h);
    }
}

/// A handshake record: whatever decodes (magic, checksum, version, kind, reason all valid)
/// re-encodes to the same 68 bytes. An input of 69 bytes whose first is odd is a record with
/// its checksum recomputed, so the fields behind the checksum are fuzzed too.
pub fn handshake(data: &[u8]) {
    let mut sealed = [0u8; HANDSHAKE_BYTES];
    let record = match data.split_first() {
        Some((&flag, rest)) if flag & 1 == 1 && rest.len() == HANDSHAKE_BYTES => {
            sealed.copy_from_slice(rest);
            seal_handshake(&mut sealed);
            &sealed[..]
        }
        _ => data,
    };
    if let Ok(h) = Handshake::decode(record) {
        assert_eq!(
            &h.encode()[..],
            record,
            "a decoded handshake re-encodes to its bytes"
        );
    }
}

/// A ring whose memory a corrupt or hostile peer wrote: every poll either finds nothing or a
/// message whose payload lies inside its slot and within the slot's capacity.
pub fn ring_slots(data: &[u8]) {
    let mut b = Bytes::new(data);
    let depth = 1u32 << (b.u8() % 4);
    let slot_bytes = 64u32 << (b.u8() % 4);
    let geometry = Geometry { depth, slot_bytes };
    let Ok(geometry) = geometry.validate() else {
        return;
    };
    // 64-byte aligned ring memory, filled with the input's remaining bytes (repeated).
    let mut aligned = AlignedRing::new(geometry.ring_bytes());
    let fill = b.rest();
    if !fill.is_empty() {
        for (i, byte) in aligned.bytes_mut().iter_mut().enumerate() {
            *byte = fill[i % fill.len()];
        }
    }
    let lo = aligned.ptr() as usize;
    let hi = lo + geometry.ring_bytes();
    // SAFETY: `aligned` is 64-byte aligned, holds `ring_bytes` bytes and lives past the view;
    // this thread is the only one touching it.
    let view =
        unsafe { RingView::new(aligned.non_null(), geometry, None) }.expect("valid geometry");
    for round in 0..2 * depth as u64 {
        let seq = Seq::of_round(round);
        if let Some(m) = view.poll(seq) {
            let p = m.payload.as_ptr() as usize;
            assert!(
                p >= lo && p + m.payload.len() <= hi,
                "payload outside the ring"
            );
            assert!(m.payload.len() <= geometry.payload_capacity());
            let (off, _) = geometry.message_range(seq, 0);
            let slot_lo = lo + off + HEADER_BYTES - slot_bytes as usize;
            assert!(p >= slot_lo, "payload outside its slot");
        }
    }
}

/// 64-byte aligned heap memory for [`ring_slots`].
struct AlignedRing {
    blocks: Vec<Block>,
    len: usize,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u8; SLOT_ALIGN]);

impl AlignedRing {
    fn new(len: usize) -> AlignedRing {
        AlignedRing {
            blocks: vec![Block([0; SLOT_ALIGN]); len.div_ceil(SLOT_ALIGN)],
            len,
        }
    }
    fn ptr(&self) -> *const u8 {
        self.blocks.as_ptr().cast()
    }
    fn non_null(&mut self) -> NonNull<u8> {
        NonNull::new(self.blocks.as_mut_ptr().cast()).expect("a Vec's pointer is non-null")
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        // SAFETY: the blocks are `len.div_ceil(64) * 64 ≥ len` contiguous initialised bytes,
        // borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.blocks.as_mut_ptr().cast(), len) }
    }
}

/// Pacer settings as the command line and board files give them: a cadence name and three
/// numbers in text. A configuration that validates yields intervals in `freq..=freq + span`.
pub fn pacer(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut fields = text.split('\n');
    let cadence = fields.next().unwrap_or("").parse::<Cadence>();
    let mut number = || fields.next().map(parse_setting);
    let (freq, span, seed) = (number(), number(), number());
    let opt = |v: Option<Result<u32, _>>| v.and_then(Result::ok);
    let Ok(cadence) = cadence else { return };
    let seed = opt(seed).unwrap_or(1);
    if let Ok(cfg) = cadence.config(opt(freq), opt(span), seed, (1_000, 0xFF)) {
        check_pacer(cfg);
    }
    let cfg = PacerConfig {
        freq: opt(freq).unwrap_or(0),
        span: opt(span).unwrap_or(0),
        seed,
    };
    if let Ok(p) = Pacer::new(cfg) {
        check_pacer(p.config());
    }
}

fn check_pacer(cfg: PacerConfig) {
    let mut p = Pacer::new(cfg).expect("a validated configuration makes a pacer");
    assert!(cfg.expected_mean_cycles().is_finite());
    for _ in 0..64 {
        let i = p.next_interval_cycles();
        assert!(i >= cfg.freq && (i - cfg.freq) <= cfg.span);
    }
}

/// Matrix and syndrome files: alist, dense, and lines of bits. A matrix that parses writes
/// back to text that parses to the same matrix.
pub fn matrix(data: &[u8]) {
    use backline_decoders::io;
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match which % 3 {
        0 => {
            if let Ok(m) = io::read_alist(&text, "fuzz.alist") {
                let again = io::read_alist(&io::write_alist(&m), "again.alist")
                    .expect("written alist parses");
                assert!(again == m, "alist round trip");
            }
        }
        1 => {
            if let Ok(m) = io::read_dense(&text, "fuzz.txt") {
                let again = io::read_dense(&io::write_dense(&m), "again.txt")
                    .expect("written dense parses");
                assert!(again == m, "dense round trip");
            }
        }
        _ => {
            let expected = (which as usize >> 2).checked_sub(1);
            if let Ok(lines) = io::parse_bit_lines(&text, "fuzz.syndromes", expected) {
                let n = lines.first().map(|(_, b)| b.len());
                for (_, bits) in &lines {
                    assert!(bits.iter().all(|&b| b <= 1));
                    assert_eq!(Some(bits.len()), expected.or(n));
                }
            }
        }
    }
}

/// The bounds the `dem` and `dem-print` targets parse within: a sixty-fourth of the defaults, so
/// that the largest model an input may unroll to parses in a fraction of AFL's 2 s on a loaded
/// CI machine. At the defaults a 258-byte `repeat 666662 { … }` legitimately takes 2.4 s; at a
/// sixteenth, `dem-print` (two parses, two prints, a comparison) took 1.5 s on 150,000 distinct
/// mechanisms in the instrumented build, and CI's slower machine called such an input a hang.
const FUZZ_DEM_LIMITS: backline_decoders::dem::DemLimits = backline_decoders::dem::DemLimits {
    targets: 1 << 18,
    coords: 1 << 18,
    mechanisms: 1 << 16,
    // One index declares that many detectors (`error(0.125) D11100000`, 23 bytes), and the
    // checks below are linear in them: in the instrumented build `dem` took 2.5 s on that model
    // at the defaults (AFL's hang). The bound refuses it before anything is built.
    detectors: 1 << 16,
};

/// A stim detector error model: one that parses has matrices of its declared sizes, finite
/// priors in (0, 1] and finite detector times, and a window over all of it is itself.
pub fn dem(data: &[u8]) {
    use backline_decoders::dem::DetectorErrorModel;
    let text = String::from_utf8_lossy(data);
    let Ok(dem) = DetectorErrorModel::parse_with(&text, "fuzz.dem", &FUZZ_DEM_LIMITS) else {
        return;
    };
    assert!(dem.num_detectors() as u64 <= FUZZ_DEM_LIMITS.detectors);
    let (d, o, m) = (
        dem.num_detectors(),
        dem.num_observables(),
        dem.num_mechanisms(),
    );
    assert_eq!(dem.check_matrix().rows(), d);
    assert_eq!(dem.check_matrix().cols(), m);
    assert_eq!(dem.observable_matrix().rows(), o);
    assert_eq!(dem.priors().len(), m);
    assert!(
        dem.priors()
            .iter()
            .all(|p| p.is_finite() && *p >= 0.0 && *p <= 1.0)
    );
    for k in 0..d {
        assert!(dem.detector_time(k).is_none_or(f64::is_finite));
    }
    let w = dem.window(0..d);
    assert_eq!(w.model.num_detectors(), d);
}

/// The Möbius decoder on any model that parses (small bounds): building it answers with the
/// decoder or a typed error (a bad annotation, an error that does not split, `p = 1`), never a
/// panic; a built decoder answers shots drawn from the input's last bytes with observables or
/// a typed error (unexplained events, a cycle no charge closes), and its weights are finite.
pub fn mobius(data: &[u8]) {
    use backline_decoders::dem::DetectorErrorModel;
    use backline_decoders::mobius::MobiusDecoder;
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let Ok(dem) = DetectorErrorModel::parse_with(&text, "fuzz.dem", &FUZZ_DEM_LIMITS) else {
        return;
    };
    if dem.num_detectors() > 4096 || dem.num_mechanisms() > 4096 {
        return;
    }
    let built = if flags & 1 == 1 {
        MobiusDecoder::new_correlated(&dem)
    } else {
        MobiusDecoder::new(&dem)
    };
    let Ok(mut dec) = built else {
        return;
    };
    let width = dem.num_detectors().div_ceil(8);
    let mut shot = vec![0u8; width];
    for k in 0..4usize {
        // Shot k: the input's bytes from the end, rotated by k (padding bits too: ignored).
        for (i, b) in shot.iter_mut().enumerate() {
            *b = data[(data.len() - 1 - (i + k) % data.len()) % data.len()];
        }
        if let Ok((obs, weight)) = dec.decode_weighted(&shot) {
            assert!(weight.is_finite(), "weight {weight}");
            let k = dem.num_observables();
            assert!(
                k >= 64 || obs >> k == 0,
                "observable past the model's {k}: {obs:#b}"
            );
        }
    }
}

/// The longest error message any parser may give: errors quote at most an excerpt of their
/// input (`backline_decoders::io::excerpt`), whatever its length.
const MAX_ERROR_BYTES: usize = 1024;

/// A stim detector error model parsed with small resource bounds (the first eight input bytes
/// pick them: targets, coordinates, mechanisms and detectors, each up to 2^16): any text, however far its
/// `repeat` blocks unroll, parses within the bounds or is refused with a short error naming
/// its line — so the expansion's memory and time stay bounded for every input.
pub fn dem_limits(data: &[u8]) {
    use backline_decoders::dem::{DemErrorKind, DemLimits, DetectorErrorModel};
    let mut b = Bytes::new(data);
    let limits = DemLimits {
        targets: u64::from(b.u16()) + 1,
        coords: u64::from(b.u16()) + 1,
        mechanisms: u64::from(b.u16()) + 1,
        detectors: u64::from(b.u16()) + 1,
    };
    let text = String::from_utf8_lossy(b.rest());
    match DetectorErrorModel::parse_with(&text, "fuzz.dem", &limits) {
        Ok(dem) => {
            assert!(dem.num_mechanisms() as u64 <= limits.mechanisms);
            assert!(dem.num_detectors() as u64 <= limits.detectors);
            let entries = dem.check_matrix().nnz() + dem.observable_matrix().nnz();
            assert!(
                entries as u64 <= limits.targets,
                "{entries} entries past {limits:?}"
            );
            let coords: usize = (0..dem.num_detectors())
                .map(|d| dem.detector_coords(d).map_or(0, <[f64]>::len))
                .sum();
            assert!(
                coords as u64 <= limits.coords,
                "{coords} coordinates past {limits:?}"
            );
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.len() <= MAX_ERROR_BYTES, "{} bytes", msg.len());
            if let DemErrorKind::Limit { limit, .. } = e.kind {
                assert!(e.line > 0, "a bound is crossed at a line: {msg}");
                let bounds = [limits.targets, limits.coords, limits.mechanisms];
                assert!(bounds.contains(&limit) || limit == limits.detectors);
            }
        }
    }
}

/// A stim detector error model printed back: any text that parses prints (`Display`) to text
/// that parses within the same bounds to the same model — the same instruction tree, mechanisms,
/// matrices, priors, coordinates and graphlike edges, line numbers apart — and that model
/// prints to the same text again.
pub fn dem_print(data: &[u8]) {
    use backline_decoders::dem::DetectorErrorModel;
    let text = String::from_utf8_lossy(data);
    let Ok(dem) = DetectorErrorModel::parse_with(&text, "fuzz.dem", &FUZZ_DEM_LIMITS) else {
        return;
    };
    assert!(dem.num_detectors() as u64 <= FUZZ_DEM_LIMITS.detectors);
    // A model of no instruction (empty, or comments only) is a model too: it prints as nothing.
    assert!(!dem.instructions().is_empty() || dem.num_mechanisms() == 0);
    let printed = dem.to_string();
    let again = DetectorErrorModel::parse_with(&printed, "fuzz.dem", &FUZZ_DEM_LIMITS)
        .unwrap_or_else(|e| panic!("the print does not parse: {e}\n{printed}"));
    assert!(
        again.without_lines() == dem.without_lines(),
        "the print reads back to another model:\n{printed}"
    );
    assert_eq!(again.to_string(), printed, "printing is not stable");
}

/// The settings of a `stream:` spec (the first line is the decoder, `bposd` or `relay-bp`; the
/// rest the `key=value;…` settings): a spec that parses has every bound kept — windows,
/// iterations, OSD order, streams — and builds a streaming decoder of a small model (or is a
/// short error) that runs a shot of zero rounds; a spec that does not is a short error.
pub fn stream_settings(data: &[u8]) {
    use backline_decoders::bp::MAX_ITER;
    use backline_decoders::stream::{MAX_WINDOW, StreamDecoder};
    let text = String::from_utf8_lossy(data);
    let (decoder, set) = text.split_once('\n').unwrap_or(("bposd", &text));
    let spec = format!("stream:fuzz.dem:{decoder}:{set}");
    let s = match backline_responder::stream::parse_stream_spec(&spec) {
        Ok(s) => s,
        Err(e) => {
            assert!(
                e.to_string().len() <= MAX_ERROR_BYTES,
                "{} bytes",
                e.to_string().len()
            );
            return;
        }
    };
    assert!((1..=4096).contains(&s.streams));
    let st = &s.settings;
    for w in [st.window, st.commit].into_iter().flatten() {
        assert!((1..=MAX_WINDOW).contains(&w), "{w}");
    }
    if let Some(c) = st.decoder.config::<backline_decoders::BpOsdConfig>() {
        assert!(c.max_iter <= MAX_ITER && c.osd_order <= backline_decoders::osd::MAX_OSD_ORDER);
    }
    let dem = stream_model();
    match StreamDecoder::new(&dem, st) {
        Ok(mut d) => {
            // Relay-BP's legs are bounded together when its decoders are built.
            if let Some(c) = st.decoder.config::<backline_decoders::relay::RelayConfig>() {
                assert!(
                    c.pre_iter + c.num_sets * c.set_max_iter <= MAX_ITER,
                    "{c:?}"
                );
            }
            let rounds = d.rounds();
            for r in 0..rounds {
                let width = d.round_detectors(r).len().div_ceil(8);
                let ready = d
                    .push_round(r as u32, &vec![0u8; width])
                    .expect("a round in order");
                if ready {
                    d.decode_ready().expect("a ready window decodes");
                }
            }
            d.finish().expect("every round is in");
            assert_eq!(d.observables(), &[0]);
        }
        Err(e) => assert!(e.to_string().len() <= MAX_ERROR_BYTES),
    }
}

/// A model read for streaming (the first line `W C`, the window and commit; the rest the
/// model): one that reads has rounds that cover its detectors in order; its matching stream
/// builds or is a short error; and where the model expanded is within the fuzz bounds, a shot
/// of its noise is decoded by the stream as by the expanded model's stream, bit for bit.
pub fn rolled_stream(data: &[u8]) {
    use backline_decoders::dem::DetectorErrorModel;
    use backline_decoders::stream::{StreamDecoder, StreamModel, StreamSettings};
    let text = String::from_utf8_lossy(data);
    let (head, model) = text.split_once('\n').unwrap_or(("", &text));
    let mut nums = head
        .split_whitespace()
        .filter_map(|x| x.parse::<usize>().ok());
    let w = nums.next().unwrap_or(4).clamp(1, 64);
    let c = nums.next().unwrap_or(2).clamp(1, w);
    let m = match StreamModel::read(model, "fuzz.dem", &FUZZ_DEM_LIMITS) {
        Ok(m) => m,
        Err(e) => {
            assert!(e.to_string().len() <= MAX_ERROR_BYTES);
            return;
        }
    };
    let Ok(rounds) = m.round_layout() else {
        return;
    };
    let mut at = 0;
    for r in &rounds {
        assert_eq!(r.start, at, "rounds in order");
        at = r.end;
    }
    assert_eq!(at, m.num_detectors());
    let settings = StreamSettings {
        window: Some(w),
        commit: Some(c),
        decoder: backline_decoders::matching::MatchingConfig::default().into(),
        limits: FUZZ_DEM_LIMITS,
        ..StreamSettings::default()
    };
    let mut rolled = match StreamDecoder::of_model(&m, &settings) {
        Ok(d) => d,
        Err(e) => {
            assert!(e.to_string().len() <= MAX_ERROR_BYTES);
            return;
        }
    };
    if m.check_expanded(&FUZZ_DEM_LIMITS).is_err() {
        return;
    }
    let whole = m.expanded(&FUZZ_DEM_LIMITS).expect("checked");
    let Ok(mut expanded) = StreamDecoder::new(&whole, &settings) else {
        return;
    };
    let _: &DetectorErrorModel = &whole;
    let mut noise = m.noise(1);
    let (mut ev, mut obs) = (vec![0u8; m.num_detectors()], vec![0u8; m.num_observables()]);
    noise.sample(&mut ev, &mut obs);
    let (mut a, mut b) = (obs.clone(), obs.clone());
    let ra = rolled.decode_shot(&ev, &mut a);
    let rb = expanded.decode_shot(&ev, &mut b);
    assert_eq!(ra.is_ok(), rb.is_ok(), "{ra:?} against {rb:?}");
    if ra.is_ok() {
        assert_eq!(a, b, "the rolled stream decodes as the expanded one");
    }
}

/// A repetition code of 4 rounds (2 detectors each): the model [`stream_settings`] builds on.
fn stream_model() -> backline_decoders::dem::DetectorErrorModel {
    backline_decoders::dem::DetectorErrorModel::parse(
        "repeat 3 {\n error(0.05) D0 L0\n error(0.05) D0 D1\n error(0.05) D1\n \
         error(0.02) D0 D2\n error(0.02) D1 D3\n detector(0, 0) D0\n detector(1, 0) D1\n \
         shift_detectors(0, 1) 2\n}\nerror(0.05) D0 L0\nerror(0.05) D0 D1\nerror(0.05) D1\n\
         detector(0, 0) D0\ndetector(1, 0) D1\n",
        "fuzz.dem",
    )
    .expect("the fixed model parses")
}

/// Responder specs as `bench --responder` and `serve --fn` take them. `bposd:` specs are parsed
/// and their codes built (the library's codes up to a size that builds in milliseconds; a
/// spec naming files, `HX+HZ`, is left out: the fuzzer would read arbitrary paths); built-in
/// names are resolved. Specs that load C libraries (`LIB:SYMBOL`) or start GPU kernels are
/// not built here — loading a library runs its code.
pub fn responder_spec(data: &[u8]) {
    let spec = String::from_utf8_lossy(data);
    if let Some(rest) = spec.strip_prefix("bposd:") {
        // A bivariate-bicycle code's name holds ':' itself (`bb:L,M,A,B`).
        let code = if rest.starts_with("bb:") {
            rest
        } else {
            rest.split(':').next().unwrap_or("")
        };
        let small = match code {
            c if c.contains('+') || c.contains('/') => false,
            c if c.starts_with("surface") => c[7..].parse::<usize>().is_ok_and(|d| d <= 15),
            c if c.starts_with("bb:") => {
                // Saturating: `l·m` of hostile digits overflows `usize`.
                c.split(',')
                    .take(2)
                    .map(|v| {
                        v.trim_start_matches("bb:")
                            .trim()
                            .parse::<usize>()
                            .unwrap_or(0)
                    })
                    .fold(1usize, usize::saturating_mul)
                    <= 72
            }
            _ => true,
        };
        if small && let Ok((code, config)) = backline_responder::bposd_code(&spec) {
            assert_eq!(code.hx.cols(), code.hz.cols());
            assert!(config.error_rate.is_finite());
        }
    } else if (!spec.contains(':') || spec.starts_with("steane") || spec.starts_with("echo"))
        && let Ok(f) = backline_responder::functions_of(&spec, 0)
    {
        assert!(!f.is_empty());
    }
}

/// A CUQR frame (NVIDIA's realtime RPC, the `serve --protocol cuqr` datagram): a request that
/// parses re-encodes to a frame that parses to the same call; a response that parses has a
/// result of the length its header gives, within the frame.
pub fn cuqr_frame(data: &[u8]) {
    use backline_wire::cuqr::{encode_request, parse_request, parse_response};
    if let Ok(r) = parse_request(data) {
        let mut out = vec![0u8; 24 + r.call.arg_bytes()];
        let n = encode_request(&mut out, r.header.request_id, r.header.timestamp, &r.call)
            .expect("a parsed call re-encodes into its own size");
        let again = parse_request(&out[..n]).expect("a re-encoded request parses");
        assert_eq!(
            again.call, r.call,
            "a parsed request re-encodes to the same call"
        );
        assert_eq!(again.header.request_id, r.header.request_id);
    }
    if let Ok((h, result)) = parse_response(data) {
        assert_eq!(result.len(), h.result_len as usize);
        assert!(result.len() + 24 <= data.len());
    }
}

/// A stream payload (enqueue, get_corrections, reset and their replies, `docs/wire-format.md`
/// §6): whatever parses re-encodes to a payload that parses to the same request.
pub fn stream_op(data: &[u8]) {
    use backline_wire::stream::{encode_request, parse_reply, parse_request};
    if let Ok(r) = parse_request(data) {
        let mut out = vec![0u8; data.len().max(16)];
        let n = encode_request(&mut out, &r).expect("a parsed request re-encodes");
        assert_eq!(
            parse_request(&out[..n]),
            Ok(r),
            "a request re-encodes to itself"
        );
    }
    if let Ok((_, rest)) = parse_reply(data) {
        assert!(rest.len() <= data.len());
    }
}

/// The board's TOML configuration (`backline-apu setup --config`): any text is a parse or
/// validation error or a configuration that validates again and gives its derived settings.
pub fn board_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(c) = backline_apu::config::Config::from_toml(&text, "fuzz.toml") {
        assert_eq!(c.validate(), Ok(()));
        let _ = c.timeout_cycles();
    }
}
