//! The AFL++ harness: `backline-fuzz TARGET` runs one target of `backline_fuzz::TARGETS` in
//! AFL's persistent mode. Built by `scripts/fuzz.sh` (`cargo afl build --features afl`).

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    if name == "--list" {
        for t in backline_fuzz::TARGETS {
            println!("{}", t.name);
        }
        return;
    }
    let Some(target) = backline_fuzz::target(&name) else {
        eprintln!("usage: backline-fuzz TARGET (one of:");
        for t in backline_fuzz::TARGETS {
            eprintln!("  {:14} {}", t.name, t.what);
        }
        eprintln!(")");
        std::process::exit(2);
    };
    afl::fuzz!(|data: &[u8]| (target.run)(data));
}
