//! A yosys `synth_xilinx` resource estimate of the generated engine and of the ERNIC adapter,
//! set against the figures of the reference engine (SPEC §6, Vivado on an XCVP1202): the
//! engine and the adapter together must fit the reference engine's LUTs and FFs (the
//! reference's HWHS talked to ERNIC too). The trace memory is left out (it is a black box
//! here; on the board it maps to URAM/BRAM), as the reference's own split does.
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
/// The engine's top module.
pub const ENGINE_TOP: &str = "top";

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
        Estimate::parse_module(log, ENGINE_TOP)
    }

    /// Parses the last `=== MODULE ===` block of a yosys log.
    pub fn parse_module(log: &str, module: &str) -> Estimate {
        let start = log.rfind(&format!("=== {module} ===")).unwrap_or(0);
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

    /// The sum of two estimates (the engine and the adapter in one design).
    pub fn plus(&self, o: &Estimate) -> Estimate {
        Estimate {
            luts: self.luts + o.luts,
            ffs: self.ffs + o.ffs,
            bram18: self.bram18 + o.bram18,
            lutram_cells: self.lutram_cells + o.lutram_cells,
            carry4: self.carry4 + o.carry4,
            muxf: self.muxf + o.muxf,
        }
    }

    /// The report of the engine alone (the form of the issues before the adapter).
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

/// The estimates of the engine and of the ERNIC adapter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Design {
    /// The engine (`top`, trace memory excluded).
    pub engine: Estimate,
    /// The adapter (`hwhs_ernic_adapter`).
    pub adapter: Estimate,
}

impl Design {
    /// The two together.
    pub fn total(&self) -> Estimate {
        self.engine.plus(&self.adapter)
    }

    /// True when the engine and the adapter together fit the reference engine's budget.
    pub fn within_reference(&self) -> bool {
        self.total().within_reference()
    }

    /// The report printed by `backline-hdl resources`.
    pub fn report(&self) -> String {
        let t = self.total();
        let pct = |a: u64, b: u64| 100.0 * a as f64 / b as f64;
        let mut s = String::from(
            "HWHS engine and ERNIC adapter, yosys synth_xilinx estimate (trace memory excluded)\n",
        );
        s += &format!(
            "{:<10} {:>8} {:>8} {:>8} {:>10} {:>8}\n",
            "resource", "engine", "adapter", "total", "reference", "ratio"
        );
        for (name, e, a, tt, r) in [
            (
                "LUTs",
                self.engine.luts,
                self.adapter.luts,
                t.luts,
                REFERENCE_LUTS,
            ),
            (
                "FFs",
                self.engine.ffs,
                self.adapter.ffs,
                t.ffs,
                REFERENCE_FFS,
            ),
        ] {
            s += &format!(
                "{name:<10} {e:>8} {a:>8} {tt:>8} {r:>10} {:>7.1}%\n",
                pct(tt, r)
            );
        }
        s += &format!(
            "{:<10} {:>8} {:>8} {:>8} {:>10} {:>8}\n",
            "BRAM18", self.engine.bram18, self.adapter.bram18, t.bram18, "7 BRAM", "-"
        );
        s += &format!(
            "{:<10} {:>8} {:>8} {:>8} {:>10} {:>8}\n",
            "LUTRAM", self.engine.lutram_cells, self.adapter.lutram_cells, t.lutram_cells, "-", "-"
        );
        s
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

/// The yosys script of the engine's estimate.
pub fn script(verilog: &Path) -> String {
    script_for(verilog, ENGINE_TOP)
}

/// The yosys script of the estimate of module `top` of `verilog` (the trace memory a black
/// box where there is one).
pub fn script_for(verilog: &Path, top: &str) -> String {
    let blackbox = if top == ENGINE_TOP {
        format!("blackbox {TRACE_MEM_MODULE}; ")
    } else {
        String::new()
    };
    format!(
        "read_verilog {}; {blackbox}hierarchy -check -top {top}; \
         synth_xilinx -flatten -top {top}; stat",
        verilog.display()
    )
}

/// Runs yosys on the engine's `verilog` and parses its statistics.
pub fn estimate(verilog: &Path) -> Result<Estimate, YosysError> {
    estimate_module(verilog, ENGINE_TOP)
}

/// The engine's and the adapter's estimates.
pub fn estimate_design(engine: &Path, adapter: &Path) -> Result<Design, YosysError> {
    Ok(Design {
        engine: estimate_module(engine, ENGINE_TOP)?,
        adapter: estimate_module(adapter, crate::adapter::MODULE)?,
    })
}

/// Runs yosys on module `top` of `verilog` and parses its statistics.
pub fn estimate_module(verilog: &Path, top: &str) -> Result<Estimate, YosysError> {
    let out = Command::new("yosys")
        .arg("-p")
        .arg(script_for(verilog, top))
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
    let e = Estimate::parse_module(&log, top);
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
        let a = Estimate::parse_module(
            "=== hwhs_ernic_adapter ===\n FDRE 5000\n LUT4 2000\n",
            crate::adapter::MODULE,
        );
        let d = Design {
            engine: e.clone(),
            adapter: a,
        };
        assert_eq!((d.total().luts, d.total().ffs), (2008, 5011));
        assert!(d.within_reference());
        assert!(d.report().contains("adapter"), "{}", d.report());
        let big = Design {
            engine: Estimate { luts: 3000, ..e },
            adapter: d.adapter.clone(),
        };
        assert!(!big.within_reference());
    }
}
