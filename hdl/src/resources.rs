//! A yosys `synth_xilinx` resource estimate of the generated engine, set against the figures
//! of the reference engine (SPEC §6, Vivado on an XCVP1202). The trace memory is left out (it
//! is a black box here; on the board it maps to URAM/BRAM), as the reference's own split does.
//!
//! yosys 0.23 targets 7-series primitives by default; LUT and FF counts of one design are
//! comparable across Xilinx families to within the usual tool-to-tool spread, not exactly.

use std::path::Path;
use std::process::Command;

/// The reference engine's LUTs (HWHS, Vivado).
pub const REFERENCE_LUTS: u64 = 4_147;
/// The reference engine's flip-flops.
pub const REFERENCE_FFS: u64 = 6_368;
/// The trace memory's module name in the generated Verilog.
pub const TRACE_MEM_MODULE: &str = "top$trace$mem";

/// What yosys counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Estimate {
    /// LUT1..LUT6 (INV counts as a LUT1).
    pub luts: u64,
    /// FDRE/FDSE/FDCE/FDPE.
    pub ffs: u64,
    /// RAMB18E1 + 2 × RAMB36E1, in 18 Kb units.
    pub bram18: u64,
    /// Distributed-RAM primitives (RAM32M, RAM64M, RAM*X1*).
    pub lutram_cells: u64,
    /// CARRY4 cells.
    pub carry4: u64,
    /// MUXF7/MUXF8 cells.
    pub muxf: u64,
}

impl Estimate {
    /// Parses the `stat` section of a yosys log (the last `=== top ===` block).
    pub fn parse(log: &str) -> Estimate {
        let start = log.rfind("=== top ===").unwrap_or(0);
        let mut e = Estimate::default();
        for line in log[start..].lines() {
            let mut w = line.split_whitespace();
            let (Some(cell), Some(n)) = (w.next(), w.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match cell {
                "LUT1" | "LUT2" | "LUT3" | "LUT4" | "LUT5" | "LUT6" | "INV" => e.luts += n,
                "FDRE" | "FDSE" | "FDCE" | "FDPE" => e.ffs += n,
                "RAMB18E1" => e.bram18 += n,
                "RAMB36E1" => e.bram18 += 2 * n,
                "CARRY4" => e.carry4 += n,
                "MUXF7" | "MUXF8" => e.muxf += n,
                c if c.starts_with("RAM32")
                    || c.starts_with("RAM64")
                    || c.starts_with("RAM128")
                    || c.starts_with("RAM256") =>
                {
                    e.lutram_cells += n
                }
                _ => {}
            }
        }
        e
    }

    /// The report printed by `backline-hdl resources`.
    pub fn report(&self) -> String {
        let pct = |a: u64, b: u64| 100.0 * a as f64 / b as f64;
        format!(
            "HWHS engine, yosys synth_xilinx estimate (trace memory excluded)\n\
             {:<10} {:>8} {:>10} {:>8}\n\
             {:<10} {:>8} {:>10} {:>7.1}%\n\
             {:<10} {:>8} {:>10} {:>7.1}%\n\
             {:<10} {:>8} {:>10} {:>8}\n\
             {:<10} {:>8} {:>10} {:>8}\n",
            "resource",
            "ours",
            "reference",
            "ratio",
            "LUTs",
            self.luts,
            REFERENCE_LUTS,
            pct(self.luts, REFERENCE_LUTS),
            "FFs",
            self.ffs,
            REFERENCE_FFS,
            pct(self.ffs, REFERENCE_FFS),
            "BRAM18",
            self.bram18,
            "7 BRAM",
            "-",
            "LUTRAM",
            self.lutram_cells,
            "-",
            "-",
        )
    }

    /// True when the estimate fits the reference budget.
    pub fn within_reference(&self) -> bool {
        self.luts <= REFERENCE_LUTS && self.ffs <= REFERENCE_FFS
    }
}

/// Why an estimate could not be made.
#[derive(Debug)]
pub struct YosysError(pub String);

impl std::fmt::Display for YosysError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for YosysError {}

/// The yosys script of the estimate.
pub fn script(verilog: &Path) -> String {
    format!(
        "read_verilog {}; blackbox {TRACE_MEM_MODULE}; hierarchy -check -top top; \
         synth_xilinx -flatten -top top; stat",
        verilog.display()
    )
}

/// Runs yosys on `verilog` and parses its statistics.
pub fn estimate(verilog: &Path) -> Result<Estimate, YosysError> {
    let out = Command::new("yosys")
        .arg("-p")
        .arg(script(verilog))
        .output()
        .map_err(|e| {
            YosysError(format!(
                "cannot run yosys ({e}); install it (apt install yosys)"
            ))
        })?;
    let log = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let tail: Vec<&str> = log.lines().rev().take(15).collect();
        return Err(YosysError(format!(
            "yosys failed ({}):\n{}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )));
    }
    let e = Estimate::parse(&log);
    if e.luts == 0 || e.ffs == 0 {
        return Err(YosysError("yosys printed no cell statistics".into()));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_last_stat_block() {
        let log = "=== top ===\n LUT6 1\n=== other ===\n=== top ===\n     FDRE  10\n     FDSE 1\n     \
                   LUT2 3\n     LUT6 4\n     INV 1\n     RAMB36E1 1\n     RAMB18E1 2\n     CARRY4 5\n";
        let e = Estimate::parse(log);
        assert_eq!(
            e,
            Estimate {
                luts: 8,
                ffs: 11,
                bram18: 4,
                lutram_cells: 0,
                carry4: 5,
                muxf: 0
            }
        );
        assert!(e.within_reference());
        assert!(e.report().contains("LUTs"));
    }
}
