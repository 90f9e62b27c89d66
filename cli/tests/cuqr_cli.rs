//! `backline serve --protocol cuqr` against a client written from NVIDIA's published layout
//! and behaviour (cudaqx `decoder_rpc_wire_format.h`, `rpc_producer.cpp`; every frame packed
//! by hand here, not with backline's encoder): NVIDIA's server shape (`--ring`, one port per
//! decoder, its READY and ring lines), 1,000 shots of the surface code d = 5, r = 5 streamed
//! round by round in 256-byte datagrams with both counter conventions, and the logical error
//! rate against `backline decode --dem` on the same shots; the set-ups it refuses.

use std::io::{BufRead, BufReader, Read};
use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use backline_decoders::dem::DetectorErrorModel;
use backline_decoders::noise::DemNoise;
use backline_decoders::stream::round_layout;

const BIN: &str = env!("CARGO_BIN_EXE_backline");
const SLOT: usize = 256;
const SHOTS: usize = 1000;

fn model() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../decoders/tests/data/dem/surface_d5_r5_p0.001.dem"
    )
    .to_string()
}

fn scratch(tag: &str) -> std::path::PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cuqr-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A `backline serve` with its first two stdout lines (ours, NVIDIA's).
struct Served {
    child: Child,
    ready: String,
    nvidia: String,
    stdout: BufReader<std::process::ChildStdout>,
}

fn serve(args: &[&str]) -> Served {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (mut ready, mut nvidia) = (String::new(), String::new());
    stdout.read_line(&mut ready).unwrap();
    stdout.read_line(&mut nvidia).unwrap();
    if !ready.starts_with("ready ") {
        let mut err = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        panic!("serve did not start: {ready:?} {err}");
    }
    Served {
        child,
        ready: ready.trim().to_string(),
        nvidia: nvidia.trim().to_string(),
        stdout,
    }
}

impl Served {
    /// SIGTERM; the rest of stdout and all of stderr.
    fn stop(mut self) -> (String, String) {
        let st = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let mut out = String::new();
        self.stdout.read_to_string(&mut out).unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(self.child.wait().unwrap().success(), "{err}");
        (out, err)
    }
}

/// The value of `key=` in NVIDIA's READY line.
fn token(line: &str, key: &str) -> u16 {
    line.split_whitespace()
        .find_map(|t| t.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
        .parse()
        .unwrap()
}

/// NVIDIA's client, by hand: a request header (magic, FNV-1a id, arg_len, request id,
/// timestamp 0) and its unpadded arguments, in a zeroed 256-byte slot sent whole, as
/// NVIDIA's UDP channel sends its slots.
fn frame(function_id: u32, request_id: u32, args: &[u8]) -> [u8; SLOT] {
    let mut f = [0u8; SLOT];
    f[0..4].copy_from_slice(&0x4355_5152u32.to_le_bytes());
    f[4..8].copy_from_slice(&function_id.to_le_bytes());
    f[8..12].copy_from_slice(&(args.len() as u32).to_le_bytes());
    f[12..16].copy_from_slice(&request_id.to_le_bytes());
    f[24..24 + args.len()].copy_from_slice(args);
    f
}

const ENQUEUE: u32 = 0x7ED8_BE82;
const GET_CORRECTIONS: u32 = 0x882D_5BA1;

struct Nvidia {
    sock: UdpSocket,
    decoder: i64,
}

impl Nvidia {
    /// Sends `f` and waits for its answer: (status, result bytes), checking the response
    /// header (magic, echoed request id) as NVIDIA's producer does.
    fn call(&self, f: &[u8; SLOT]) -> (i32, Vec<u8>) {
        self.sock.send(f).unwrap();
        let mut r = [0u8; 2 * SLOT];
        let n = self.sock.recv(&mut r).expect("an answer");
        assert_eq!(n, SLOT, "one full slot");
        assert_eq!(&r[0..4], &0x4355_5153u32.to_le_bytes());
        assert_eq!(r[12..16], f[12..16], "request id echoed");
        let status = i32::from_le_bytes(r[4..8].try_into().unwrap());
        let len = u32::from_le_bytes(r[8..12].try_into().unwrap()) as usize;
        (status, r[24..24 + len].to_vec())
    }

    /// One round: 32 bytes of arguments, then ⌈n/8⌉ bytes of bits, no padding; the request
    /// id is the counter's low 32 bits, as NVIDIA's producer sets it.
    fn enqueue(&self, counter: i64, events: &[u8]) -> i32 {
        let mut a = Vec::new();
        for v in [self.decoder, counter, 0, events.len() as i64] {
            a.extend_from_slice(&v.to_le_bytes());
        }
        let mut bits = vec![0u8; events.len().div_ceil(8)];
        for (i, &e) in events.iter().enumerate() {
            bits[i / 8] |= (e & 1) << (i % 8);
        }
        a.extend_from_slice(&bits);
        self.call(&frame(ENQUEUE, counter as u32, &a)).0
    }

    /// 17 bytes: decoder id, return size, the reset byte.
    fn get_corrections(&self, request_id: u32, k: usize, reset: u8) -> (i32, Vec<u8>) {
        let mut a = Vec::new();
        a.extend_from_slice(&self.decoder.to_le_bytes());
        a.extend_from_slice(&(k as i64).to_le_bytes());
        a.push(reset);
        self.call(&frame(GET_CORRECTIONS, request_id, &a))
    }
}

/// Streams `SHOTS` shots (seed 23) through decoder `decoder` at `port`, with the counter 0
/// (`tagged` false) or `(shot << 16) | round`, and `get_corrections` with reset byte 2 at
/// each shot's end. Returns every shot's predicted observables (one byte per shot).
fn stream(port: u16, decoder: i64, tagged: bool, dem: &DetectorErrorModel) -> Vec<u8> {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let c = Nvidia { sock, decoder };
    let layout = round_layout(dem).unwrap();
    let k = dem.num_observables();
    let mut noise = DemNoise::new(dem, 23);
    let mut dets = vec![0u8; dem.num_detectors()];
    let mut obs = vec![0u8; k];
    let mut predictions = Vec::with_capacity(SHOTS);
    for shot in 0..SHOTS {
        noise.sample(&mut dets, &mut obs);
        for (round, r) in layout.iter().enumerate() {
            let counter = if tagged {
                ((shot as i64) << 16) | round as i64
            } else {
                0
            };
            assert_eq!(
                c.enqueue(counter, &dets[r.clone()]),
                0,
                "shot {shot} round {round}"
            );
        }
        let (status, result) = c.get_corrections(shot as u32 + 1, k, 2);
        assert_eq!(status, 0, "shot {shot}: get_corrections");
        assert_eq!(result.len(), k.div_ceil(8));
        predictions.push(result[0]);
    }
    predictions
}

/// The same shots as `stream` (seed 23), as stim's b8 files of detection events and
/// observables.
fn shot_files(dem: &DetectorErrorModel, dir: &std::path::Path) -> (String, String) {
    let mut noise = DemNoise::new(dem, 23);
    let mut dets = vec![0u8; dem.num_detectors()];
    let mut obs = vec![0u8; dem.num_observables()];
    let (mut d8, mut o8) = (Vec::new(), Vec::new());
    let pack = |bits: &[u8], out: &mut Vec<u8>| {
        let mut b = vec![0u8; bits.len().div_ceil(8)];
        for (i, &x) in bits.iter().enumerate() {
            b[i / 8] |= x << (i % 8);
        }
        out.extend_from_slice(&b);
    };
    for _ in 0..SHOTS {
        noise.sample(&mut dets, &mut obs);
        pack(&dets, &mut d8);
        pack(&obs, &mut o8);
    }
    let (dp, op) = (dir.join("dets.b8"), dir.join("obs.b8"));
    std::fs::write(&dp, d8).unwrap();
    std::fs::write(&op, o8).unwrap();
    (dp.display().to_string(), op.display().to_string())
}

#[test]
fn nvidias_client_streams_two_decoders_on_two_rings_like_backline_decoders() {
    let m = model();
    let dem = DetectorErrorModel::parse(&std::fs::read_to_string(&m).unwrap(), &m).unwrap();
    // The whole-history window: the answers are bit for bit `backline decode --dem`'s.
    let spec = format!("stream:{m}");
    let (f0, f1) = (format!("0={spec}:decode=worker"), format!("1={spec}"));
    let dir = scratch("ler");
    let shots_csv = dir.join("shots.csv");
    let s = serve(&[
        "--shot-csv",
        shots_csv.to_str().unwrap(),
        "--protocol",
        "cuqr",
        "--fn",
        &f0,
        "--fn",
        &f1,
        "--ring",
        "0=0",
        "--ring",
        "1=0",
    ]);
    // NVIDIA's READY line: port=<ring 0's> transport=udp ring0=<port> ring1=<port>, then
    // where each decoder decodes (a worker as asked, and inline: the real-time default of a
    // stream of one window).
    let (p0, p1) = (token(&s.nvidia, "ring0="), token(&s.nvidia, "ring1="));
    assert_ne!(p0, p1);
    assert_eq!(
        s.nvidia,
        format!(
            "QEC_DECODING_SERVER_READY port={p0} transport=udp ring0={p0} ring1={p1} \
             decode0=worker decode1=inline"
        )
    );
    assert_eq!(s.ready, format!("ready 127.0.0.1:{p0}"));
    // Both decoders at once: the counter 0 on ring 0, (shot << 16) | round on ring 1.
    let (zero, tagged) = std::thread::scope(|sc| {
        let a = sc.spawn(|| stream(p0, 0, false, &dem));
        let b = sc.spawn(|| stream(p1, 1, true, &dem));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(
        zero, tagged,
        "the counter and the decode mode change nothing"
    );
    let (out, err) = s.stop();
    let rounds = round_layout(&dem).unwrap().len();
    let per_ring = SHOTS * (rounds + 1);
    assert!(
        out.contains(&format!(
            "QEC_DECODING_SERVER_RING decoder=0 dispatched={per_ring}\n\
             QEC_DECODING_SERVER_RING decoder=1 dispatched={per_ring}"
        )),
        "{out}"
    );
    assert!(
        err.contains(&format!(
            "stopped after {} frames (ok={}); 0 frames dropped unanswered (none)",
            2 * per_ring,
            2 * per_ring
        )),
        "{err}"
    );
    assert!(err.contains(&format!("{SHOTS} shots finished")), "{err}");
    // Each decoder's last syndrome → corrections ready figure at shutdown, and per shot in
    // --shot-csv.
    for mode in ["worker", "inline"] {
        assert!(
            err.contains(&format!("decode {mode}")) && err.contains(&format!("({SHOTS} shots)")),
            "{err}"
        );
    }
    assert_eq!(
        err.matches("last syndrome → corrections ready: median")
            .count(),
        2,
        "{err}"
    );
    let csv = std::fs::read_to_string(&shots_csv).unwrap();
    let mut rows = csv.lines().filter(|l| !l.starts_with('#'));
    assert_eq!(
        rows.next(),
        Some("decoder_id,shot,last_syndrome_to_correction_ns")
    );
    let mut per = [0usize; 2];
    for r in rows {
        let f: Vec<u64> = r.split(',').map(|x| x.parse().unwrap()).collect();
        assert_eq!(f[1] as usize, per[f[0] as usize], "{r}");
        assert!(f[2] > 0, "{r}");
        per[f[0] as usize] += 1;
    }
    assert_eq!(per, [SHOTS, SHOTS]);

    // `backline decode --dem` on the same shots: the same predictions, so the same logical
    // error rate.
    let (dets, obs) = shot_files(&dem, &dir);
    let pred = dir.join("pred.b8");
    let o = Command::new(BIN)
        .args([
            "decode", "--dem", &m, "--dets", &dets, "--obs", &obs, "--json",
        ])
        .arg("--obs-out")
        .arg(&pred)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(std::fs::read(&pred).unwrap(), zero, "shot by shot");
    let truth = std::fs::read(&obs).unwrap();
    let streamed = zero.iter().zip(&truth).filter(|(p, t)| p != t).count() as u64;
    assert_eq!(v["logical_errors"].as_u64(), Some(streamed));
    assert_eq!(v["shots"].as_u64(), Some(SHOTS as u64));
    // The decoder had flips to find: the comparison is not of zeros alone.
    let flips = zero.iter().filter(|&&p| p != 0).count();
    assert!(flips > 0, "no shot's observable flipped");
    eprintln!(
        "logical errors: {streamed} of {SHOTS} shots, as backline decode --dem; {flips} shots \
         corrected"
    );
}

#[test]
fn serve_refuses_rings_and_slots_it_cannot_serve() {
    let spec = format!("0=stream:{}", model());
    let one = format!("1=stream:{}", model());
    for (args, want) in [
        (
            vec!["--ring", "0=0", "--ring", "0=1"],
            "decoder 0 has a ring already",
        ),
        (vec!["--ring", "0"], "expected ID=PORT"),
        (vec!["--ring", "0=70000"], "expected ID=PORT"),
        (vec!["--ring", "1=0"], "no decoder 1 to serve"),
        (vec!["--slot-size", "200"], "must be a power of two"),
        (vec!["--slot-size", "32"], "must be a power of two"),
        (vec!["--slot-bytes", "65536"], "must be a power of two"),
        (
            vec!["--slot-size", "256", "--slot-bytes", "512"],
            "name the same slot",
        ),
        (vec!["--num-slots", "0"], "--num-slots"),
        (vec!["--decode", "sometimes"], "--decode"),
        (
            vec!["--shot-csv", "/nonexistent-dir/shots.csv"],
            "--shot-csv /nonexistent-dir/shots.csv",
        ),
    ] {
        let o = Command::new(BIN)
            .args(["serve", "--protocol", "cuqr", "--fn", &spec])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let o = Command::new(BIN)
        .args(["serve", "--protocol", "cuqr", "--fn", &spec, "--fn", &one])
        .args(["--ring", "0=0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("decoder 1 has no --ring"), "{err}");
    for flag in [
        ["--ring", "0=0"],
        ["--decode", "inline"],
        ["--shot-csv", "x.csv"],
    ] {
        let o = Command::new(BIN)
            .args(["serve", "--transport", "udp"])
            .args(flag)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("add --protocol cuqr"), "{flag:?}: {err}");
    }
    // A stream spec's decode that is no mode.
    let o = Command::new(BIN)
        .args(["serve", "--protocol", "cuqr", "--fn"])
        .arg(format!("{spec}:decode=fast"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("decode: `fast` is not inline, worker or auto"),
        "{err}"
    );
}

/// `backline` with `BACKLINE_TOKEN_FILE` set to `env` (or unset): (exit status, stderr).
fn with_token_env(env: Option<&str>, args: &[&str]) -> (Option<i32>, String) {
    let mut c = Command::new(BIN);
    c.args(args).env_remove("BACKLINE_TOKEN_FILE");
    if let Some(e) = env {
        c.env("BACKLINE_TOKEN_FILE", e);
    }
    let o = c.output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// An explicit `--token-file` always wins over `BACKLINE_TOKEN_FILE`: the cuqr protocol has
/// no keyed hello, so an explicit one is refused whatever the variable names, and the
/// variable alone is passed over; where both are given and differ, stderr says which is used.
#[test]
fn an_explicit_token_file_wins_over_the_environment() {
    let dir = scratch("token-env");
    let key = dir.join("key").display().to_string();
    let o = Command::new(BIN).args(["token", &key]).output().unwrap();
    assert!(o.status.success() || std::path::Path::new(&key).exists());
    let missing = dir.join("missing").display().to_string();
    let spec = format!("0=stream:{}", model());
    let responder = format!("stream:{}", model());
    let serve = [
        "serve",
        "--protocol",
        "cuqr",
        "--fn",
        &spec,
        "--slot-size",
        "200",
    ];
    let bench = [
        "bench",
        "--protocol",
        "cuqr",
        "--peer",
        "127.0.0.1:9",
        "--responder",
        &responder,
        "--shots",
        "2",
        "--timeout-ms",
        "200",
        "--no-plots",
        "--quiet",
    ];
    for cmd in [&serve[..], &bench[..]] {
        for (flag, env) in [
            (Some(&key), Some(&key)),
            (Some(&key), Some(&missing)),
            (Some(&missing), Some(&key)),
            (Some(&key), None),
        ] {
            let mut args = cmd.to_vec();
            args.extend(["--token-file", flag.unwrap()]);
            let (code, err) = with_token_env(env.map(|s| s.as_str()), &args);
            assert_eq!(code, Some(2), "{args:?} {env:?}: {err}");
            let last = err.lines().last().unwrap_or_default();
            assert!(
                last.contains("--token-file admits backline controllers"),
                "{args:?} {env:?}: {err}"
            );
            let note = format!(
                "backline: --token-file {} is used; BACKLINE_TOKEN_FILE names",
                flag.unwrap()
            );
            let differ = env.is_some_and(|e| e != flag.unwrap());
            assert_eq!(err.matches(&note).count(), differ as usize, "{err}");
        }
        // The variable alone, valid or not, is not the cuqr protocol's: passed over (the
        // command goes on to fail for another reason).
        for env in [&key, &missing] {
            let (code, err) = with_token_env(Some(env), cmd);
            assert!(!err.contains("token"), "{cmd:?} {env}: {err}");
            assert_ne!(code, Some(0), "{err}");
        }
    }
    // Every setting with a flag and a variable: the flag's value is used, and said.
    let mut args = serve.to_vec();
    args.extend(["--spin-us", "5"]);
    let o = Command::new(BIN)
        .args(&args)
        .env("BACKLINE_SPIN_US", "7")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.matches("backline: --spin-us 5 is used; BACKLINE_SPIN_US names 7")
            .count(),
        1,
        "{err}"
    );
}
