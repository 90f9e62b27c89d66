//! Helpers shared by the test modules.

use std::path::PathBuf;

use backline_apu::Config;

/// The example config shipped for the simulator.
pub fn example() -> Config {
    Config::load(&example_path()).unwrap()
}

/// Its path.
pub fn example_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/sim-board.toml")
}

/// A fresh scratch directory for one test.
#[cfg(feature = "sim")]
pub fn scratch(name: &str) -> PathBuf {
    // Under the build's own scratch folder (`target/tmp`), not the system's: what a run
    // leaves goes with the build.
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("backline-apu-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// True (after saying why) when the simulator is not in this build.
#[cfg(feature = "sim")]
pub fn no_verilator() -> bool {
    if !backline_sim::AVAILABLE {
        eprintln!("skipped: backline-sim was built without Verilator");
        return true;
    }
    false
}

/// A simulated board in this process, and the example config pointed at its peer.
#[cfg(feature = "sim")]
pub fn sim_board(
    name: &str,
    tweak: impl FnOnce(&mut backline_sim::board::SimBoardOptions),
) -> Option<(backline_sim::board::SimBoard, Config)> {
    use backline_sim::board::{SimBoard, SimBoardOptions};
    if no_verilator() {
        return None;
    }
    let mut o = SimBoardOptions::new(scratch(name).join("board.sock"));
    tweak(&mut o);
    let b = SimBoard::spawn(o).unwrap();
    let mut cfg = example();
    cfg.peer.address = b.peer_address().unwrap().to_string();
    Some((b, cfg))
}

/// A client connection to a simulated board (the `sim:` backend).
#[cfg(feature = "sim")]
pub fn connect(sim: &backline_sim::board::SimBoard) -> backline_apu::mmio::sim::SimMmio {
    backline_apu::mmio::sim::SimMmio::connect(sim.socket().to_str().unwrap()).unwrap()
}
