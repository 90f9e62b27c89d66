//! Writes a code's checks and logicals and a set of seeded code-capacity X-error shots, for the
//! `ldpc` comparison (`scripts/dev/compare_ldpc.py`) and for making test data.
//!
//! ```text
//! cargo run --release -p backline-decoders --example css_shots -- \
//!     --code bb72 --p 0.05 --shots 2000 --seed 1 --out DIR
//! ```
//!
//! Writes into DIR: `hz.alist` and `hz.txt` (the Z checks, which see X errors), `lz.txt` (the Z
//! logicals), `errors.txt` (one X error per line) and `syndromes.txt` (`hz · error`, one per
//! line), all dense 0/1 text except the alist. Prints one JSON line describing the code.

use std::path::PathBuf;
use std::process::ExitCode;

use backline_decoders::codes::CssCode;
use backline_decoders::gf2;
use backline_decoders::io::{self as dio, MatrixFormat};
use backline_decoders::noise::CodeCapacity;

struct Opts {
    code: String,
    p: f64,
    shots: usize,
    seed: u64,
    out: PathBuf,
}

fn parse() -> Result<Opts, String> {
    let mut code = None;
    let mut p = None;
    let mut shots = 1000usize;
    let mut seed = 1u64;
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--code" => code = Some(value()?),
            "--p" => p = Some(value()?.parse().map_err(|e| format!("--p: {e}"))?),
            "--shots" => shots = value()?.parse().map_err(|e| format!("--shots: {e}"))?,
            "--seed" => seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--out" => out = Some(PathBuf::from(value()?)),
            f => return Err(format!("unknown flag {f}")),
        }
    }
    Ok(Opts {
        code: code.ok_or("--code is required")?,
        p: p.ok_or("--p is required")?,
        shots,
        seed,
        out: out.ok_or("--out is required")?,
    })
}

fn run() -> Result<(), String> {
    let o = parse()?;
    let code = CssCode::by_name(&o.code).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let save = |name: &str, m: &backline_decoders::BitMatrix, f: MatrixFormat| {
        dio::save_matrix(&o.out.join(name), m, f).map_err(|e| e.to_string())
    };
    save("hz.alist", &code.hz, MatrixFormat::Alist)?;
    save("hz.txt", &code.hz, MatrixFormat::Dense)?;
    save("lz.txt", &code.lz, MatrixFormat::Dense)?;
    let n = code.n();
    let mut noise = CodeCapacity::new(o.p, o.seed);
    let mut e = vec![0u8; n];
    let mut s = vec![0u8; code.hz.rows()];
    let mut errors = String::with_capacity(o.shots * (n + 1));
    let mut syndromes = String::with_capacity(o.shots * (s.len() + 1));
    for _ in 0..o.shots {
        noise.sample(&mut e);
        code.hz.mul_bytes(&e, &mut s);
        errors.extend(e.iter().map(|&b| (b'0' + b) as char));
        errors.push('\n');
        syndromes.extend(s.iter().map(|&b| (b'0' + b) as char));
        syndromes.push('\n');
    }
    let write = |name: &str, text: &str| {
        std::fs::write(o.out.join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    write("errors.txt", &errors)?;
    write("syndromes.txt", &syndromes)?;
    println!(
        "{{\"code\":\"{}\",\"n\":{},\"k\":{},\"mz\":{},\"rank_hz\":{},\"p\":{},\"shots\":{},\"seed\":{}}}",
        code.name,
        n,
        code.k(),
        code.hz.rows(),
        gf2::rank(&code.hz),
        o.p,
        o.shots,
        o.seed
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("css_shots: error: {e}");
            ExitCode::from(2)
        }
    }
}
