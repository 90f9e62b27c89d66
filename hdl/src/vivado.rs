//! The Vivado block design (`bitstreams/vivado/vpk120_hwhs.tcl`) checked without Vivado: the
//! script is read by a small interpreter of the Tcl it uses (`set`, `switch`, `foreach`,
//! `incr`, variable and `[get_bd_*]` substitution; the block-design commands are recorded,
//! not run), once for each ERNIC layout it can build, and what it would build is checked
//! against the definitions it must agree with:
//!
//! * every IP's VLNV is well formed, and ERNIC's names a version whose register layout the
//!   firmware programs (`backline_board::ernic::Layout::ip_versions`), the default one the
//!   layout the firmware assumes by default;
//! * every address assigned is a window of `backline_regmap::pl` with its base and range
//!   (ERNIC's register range the layout's window), and every ERNIC master reaches the
//!   adapter's memory and DDR;
//! * every port of the engine and of the adapter (read from their generated Verilog) is
//!   connected exactly once — an AXI port through its interface, the engine's ERNIC-side
//!   ports each to the adapter's port of the same name — or is an engine output the script
//!   declares open;
//! * the script stops, saying why, when the adapter's RTL is missing.

use std::collections::HashMap;

use backline_board::ernic::Layout;
use backline_regmap::pl;

/// Path of the script, relative to the repository root.
pub const SCRIPT_PATH: &str = "bitstreams/vivado/vpk120_hwhs.tcl";

/// One word of a command: its text, and whether it was braced (no substitution).
#[derive(Debug, Clone)]
struct Word {
    text: String,
    braced: bool,
}

/// Splits a script into commands of words (newlines and `;` end a command; `#` at a command's
/// start is a comment; braces, brackets and quotes group).
fn commands(src: &str) -> Vec<Vec<Word>> {
    let src = src.replace("\\\n", " ");
    let b = src.as_bytes();
    let (mut out, mut cur, mut i) = (Vec::new(), Vec::new(), 0);
    while i < b.len() {
        let c = b[i];
        if c == b'\n' || c == b';' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'#' && cur.is_empty() {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else {
            let (w, next) = word(&src, i);
            cur.push(w);
            i = next;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The word starting at `i`, and the index after it.
fn word(src: &str, i: usize) -> (Word, usize) {
    let b = src.as_bytes();
    if b[i] == b'{' || b[i] == b'"' {
        let (open, close) = if b[i] == b'{' {
            (b'{', b'}')
        } else {
            (0, b'"')
        };
        let (mut depth, mut j) = (1, i + 1);
        while j < b.len() && depth > 0 {
            if b[j] == close {
                depth -= 1;
            } else if b[j] == open {
                depth += 1;
            }
            j += 1;
        }
        let text = src[i + 1..j - 1].to_string();
        return (
            Word {
                text,
                braced: open == b'{',
            },
            j,
        );
    }
    let (mut depth, mut j) = (0i32, i);
    while j < b.len() && (depth > 0 || !(b[j].is_ascii_whitespace() || b[j] == b';')) {
        match b[j] {
            b'[' => depth += 1,
            b']' => depth -= 1,
            _ => {}
        }
        j += 1;
    }
    (
        Word {
            text: src[i..j].to_string(),
            braced: false,
        },
        j,
    )
}

/// One `assign_bd_address`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The master's address space (`cips/M_AXI_FPD`).
    pub space: String,
    /// The slave segment (`hwhs/axi/reg0`).
    pub segment: String,
    /// Base.
    pub offset: u64,
    /// Range in bytes.
    pub range: u64,
}

/// What the script would build, as far as the checks need it.
#[derive(Debug, Clone, Default)]
pub struct Design {
    /// Cell name → VLNV (IP) or module name (module reference, `module:NAME`).
    pub cells: HashMap<String, String>,
    /// Each `connect_bd_net`: its pins (`cell/pin`).
    pub nets: Vec<Vec<String>>,
    /// Each `connect_bd_intf_net`: its interface pins.
    pub intf_nets: Vec<Vec<String>>,
    /// Every address assignment.
    pub assignments: Vec<Assignment>,
    /// The script's variables at the end.
    pub vars: HashMap<String, String>,
    /// The script errors out, naming the adapter, when the adapter's RTL is missing.
    pub adapter_guard: bool,
}

/// `4K`, `2M`, `2G`, `0x1000` or a number, in bytes.
fn size(s: &str) -> Option<u64> {
    let t = s.trim();
    let (n, mul) = match t.as_bytes().last()? {
        b'K' => (&t[..t.len() - 1], 1u64 << 10),
        b'M' => (&t[..t.len() - 1], 1 << 20),
        b'G' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let v = match n.strip_prefix("0x").or_else(|| n.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => n.parse().ok()?,
    };
    v.checked_mul(mul)
}

impl Design {
    /// Runs `script` with the script's arguments `args` (`[build-dir, layout]`).
    pub fn interpret(script: &str, args: &[&str]) -> Design {
        let mut d = Design::default();
        d.vars.insert("argv".into(), args.join(" "));
        d.run(script);
        d
    }

    fn run(&mut self, script: &str) {
        for cmd in commands(script) {
            self.command(&cmd);
        }
    }

    /// Substitutes `$name`, `${name}` and `[…]` in an unbraced word.
    fn subst(&self, w: &Word) -> String {
        if w.braced {
            return w.text.clone();
        }
        let s = &w.text;
        let b = s.as_bytes();
        let (mut out, mut i) = (String::new(), 0);
        while i < b.len() {
            if b[i] == b'$' {
                let (name, next) = if b.get(i + 1) == Some(&b'{') {
                    let end = s[i..].find('}').map_or(s.len(), |e| i + e);
                    (&s[i + 2..end], end + 1)
                } else {
                    let mut j = i + 1;
                    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                        j += 1;
                    }
                    (&s[i + 1..j], j)
                };
                out += self.vars.get(name).map_or("", String::as_str);
                i = next;
            } else if b[i] == b'[' {
                let (mut depth, mut j) = (1, i + 1);
                while j < b.len() && depth > 0 {
                    match b[j] {
                        b'[' => depth += 1,
                        b']' => depth -= 1,
                        _ => {}
                    }
                    j += 1;
                }
                out += &self.bracket(&s[i + 1..j - 1]);
                i = j;
            } else {
                out.push(b[i] as char);
                i += 1;
            }
        }
        out
    }

    /// The value of a bracketed command: the objects of `get_bd_*`, a script argument with
    /// its default (`expr {[llength $argv] > K ? [lindex $argv K] : "D"}`), nothing otherwise.
    fn bracket(&self, inner: &str) -> String {
        if let Some(at) = inner.find("[lindex $argv ") {
            let k: usize = inner[at + 14..]
                .split(']')
                .next()
                .and_then(|k| k.trim().parse().ok())
                .unwrap_or(usize::MAX);
            let default = inner.rsplit('"').nth(1).unwrap_or_default();
            let argv = self.vars.get("argv").map_or("", String::as_str);
            return argv
                .split_whitespace()
                .nth(k)
                .unwrap_or(default)
                .to_string();
        }
        let cmd = commands(inner).into_iter().next().unwrap_or_default();
        let words: Vec<String> = cmd.iter().map(|w| self.subst(w)).collect();
        match words.first().map(String::as_str) {
            Some(
                "get_bd_pins" | "get_bd_intf_pins" | "get_bd_addr_spaces" | "get_bd_addr_segs"
                | "get_bd_cells",
            ) => words[1..].join(" "),
            _ => String::new(),
        }
    }

    fn command(&mut self, cmd: &[Word]) {
        let name = cmd[0].text.as_str();
        let arg = |k: usize| cmd.get(k).map(|w| self.subst(w)).unwrap_or_default();
        match name {
            "set" if cmd.len() == 3 => {
                let v = arg(2);
                self.vars.insert(cmd[1].text.clone(), v);
            }
            "incr" => {
                let v: i64 = self
                    .vars
                    .get(&cmd[1].text)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                self.vars.insert(cmd[1].text.clone(), (v + 1).to_string());
            }
            "foreach" if cmd.len() == 4 => {
                let list = arg(2);
                for item in list.split_whitespace() {
                    self.vars.insert(cmd[1].text.clone(), item.to_string());
                    self.run(&cmd[3].text);
                }
            }
            "switch" => {
                let value = arg(cmd.len() - 2);
                let arms: Vec<Word> = commands(&cmd[cmd.len() - 1].text).concat();
                let arm = arms
                    .chunks(2)
                    .find(|a| a[0].text == value || a[0].text == "default");
                if let Some(a) = arm
                    && a.len() == 2
                    && a[0].text == value
                {
                    self.run(&a[1].text);
                }
            }
            "if" => {
                // Not run; the adapter's guard is recognised.
                let body = cmd.get(2).map_or("", |w| w.text.as_str());
                if cmd[1].text.contains("adapter_rtl")
                    && body.trim_start().starts_with("error")
                    && body.contains("adapter")
                {
                    self.adapter_guard = true;
                }
            }
            "create_bd_cell" => self.cell(cmd),
            "connect_bd_net" | "connect_bd_intf_net" => {
                let pins: Vec<String> = (1..cmd.len())
                    .flat_map(|k| {
                        arg(k)
                            .split_whitespace()
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .collect();
                if name == "connect_bd_net" {
                    self.nets.push(pins);
                } else {
                    self.intf_nets.push(pins);
                }
            }
            "assign_bd_address" => self.assignment(cmd),
            _ => {}
        }
    }

    fn cell(&mut self, cmd: &[Word]) {
        let words: Vec<String> = cmd.iter().map(|w| self.subst(w)).collect();
        let after = |flag: &str| {
            words
                .iter()
                .position(|w| w == flag)
                .and_then(|p| words.get(p + 1))
                .cloned()
        };
        let what = after("-vlnv").or_else(|| after("-reference").map(|m| format!("module:{m}")));
        if let (Some(what), Some(name)) = (what, words.last()) {
            self.cells.insert(name.clone(), what);
        }
    }

    fn assignment(&mut self, cmd: &[Word]) {
        let words: Vec<String> = cmd.iter().map(|w| self.subst(w)).collect();
        let after = |flag: &str| {
            words
                .iter()
                .position(|w| w == flag)
                .and_then(|p| words.get(p + 1))
                .cloned()
                .unwrap_or_default()
        };
        self.assignments.push(Assignment {
            space: after("-target_address_space"),
            segment: words.last().cloned().unwrap_or_default(),
            offset: size(&after("-offset")).unwrap_or(u64::MAX),
            range: size(&after("-range")).unwrap_or(0),
        });
    }
}

/// The ports of a generated Verilog module: `(name, is_output)`.
pub fn ports(verilog: &str) -> Vec<(String, bool)> {
    let start = verilog.find("// Module arguments").unwrap_or(0);
    verilog[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(';');
            let out = l.starts_with("output");
            if !(out || l.starts_with("input")) {
                return None;
            }
            Some((l.split_whitespace().last()?.to_string(), out))
        })
        .collect()
}

/// The AXI interface a port belongs to (`axi`, `s_axi`, `m_axil`), if any.
fn interface(port: &str) -> Option<&'static str> {
    ["m_axil", "s_axi", "axi"]
        .into_iter()
        .find(|i| port.starts_with(&format!("{i}_")))
}

/// What is wrong with the design `script` builds for `layout`, given the engine's and the
/// adapter's generated Verilog; empty when nothing is.
pub fn check(script: &str, layout: Layout, engine_v: &str, adapter_v: &str) -> Vec<String> {
    let arg = match layout {
        Layout::V3 => "v3",
        Layout::V4 => "v4",
    };
    let args: &[&str] = if layout == Layout::DEFAULT {
        &["build"]
    } else {
        &["build", arg]
    };
    let d = Design::interpret(script, args);
    let mut bad = Vec::new();
    check_cells(&d, layout, &mut bad);
    check_addresses(&d, layout, &mut bad);
    check_ports(&d, "hwhs", engine_v, &mut bad);
    check_ports(&d, "adapter", adapter_v, &mut bad);
    for pair in d
        .nets
        .iter()
        .filter(|n| n.iter().any(|p| p.starts_with("adapter/")))
    {
        let engine: Vec<&String> = pair.iter().filter(|p| p.starts_with("hwhs/")).collect();
        for e in engine {
            let want = e.replacen("hwhs/", "adapter/", 1);
            if !pair.contains(&want) {
                bad.push(format!(
                    "net {pair:?} joins {e} to an adapter port of another name"
                ));
            }
        }
    }
    if !d.adapter_guard {
        bad.push("the script does not stop, naming the adapter, when its RTL is missing".into());
    }
    bad
}

fn check_cells(d: &Design, layout: Layout, bad: &mut Vec<String>) {
    for (cell, what) in &d.cells {
        if let Some(m) = what.strip_prefix("module:") {
            let want = match cell.as_str() {
                "hwhs" => "top",
                "adapter" => crate::adapter::MODULE,
                _ => "",
            };
            if m != want {
                bad.push(format!(
                    "cell {cell} references module {m}, expected {want}"
                ));
            }
            continue;
        }
        let parts: Vec<&str> = what.split(':').collect();
        let well_formed = parts.len() == 4
            && parts[0] == "xilinx.com"
            && parts[1] == "ip"
            && parts[3]
                .split('.')
                .all(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
        if !well_formed {
            bad.push(format!(
                "cell {cell}: VLNV `{what}` is not vendor:library:name:version"
            ));
            continue;
        }
        if parts[2] == "ernic" {
            match Layout::of_ip_version(parts[3]) {
                Some(l) if l == layout => {}
                Some(l) => bad.push(format!(
                    "cell {cell}: {what} has the {} register layout, the build asked for {}",
                    l.short(),
                    layout.short()
                )),
                None => bad.push(format!(
                    "cell {cell}: {what} is no ERNIC version the firmware programs ({} for \
                     v3.x, {} for v4.x)",
                    Layout::V3.ip_versions().join(", "),
                    Layout::V4.ip_versions().join(", ")
                )),
            }
        }
    }
    let ernics = d.cells.values().filter(|v| v.contains(":ernic:")).count();
    if ernics != 1 {
        bad.push(format!("{ernics} ERNIC cells, expected 1"));
    }
    for (cell, module) in [("hwhs", "top"), ("adapter", crate::adapter::MODULE)] {
        if !d.cells.contains_key(cell) {
            bad.push(format!("no cell {cell} (module {module})"));
        }
    }
}

fn check_addresses(d: &Design, layout: Layout, bad: &mut Vec<String>) {
    let masters: Vec<String> = d
        .vars
        .get("ERNIC_MASTERS")
        .map(|m| m.split_whitespace().map(|s| format!("ernic/{s}")).collect())
        .unwrap_or_default();
    let ernic_regs = (pl::ERNIC_REGS.base, u64::from(layout.window_bytes()));
    let mut want: Vec<(String, String, (u64, u64))> = vec![
        (
            "cips/M_AXI_FPD".into(),
            "hwhs/axi/reg0".into(),
            (pl::HWHS_REGS.base, pl::HWHS_REGS.bytes),
        ),
        (
            "cips/M_AXI_FPD".into(),
            "ernic/s_axi_lite/Reg".into(),
            ernic_regs,
        ),
        (
            "adapter/m_axil".into(),
            "ernic/s_axi_lite/Reg".into(),
            ernic_regs,
        ),
    ];
    for m in &masters {
        let mem = (pl::ADAPTER_MEM.base, pl::ADAPTER_MEM.bytes);
        want.push((m.clone(), "adapter/s_axi/reg0".into(), mem));
        want.push((
            m.clone(),
            "cips/S_AXI_FPD/*DDR_LOW0*".into(),
            (pl::DDR.base, pl::DDR.bytes),
        ));
    }
    if masters.len() != 5 {
        bad.push(format!(
            "ERNIC_MASTERS lists {} masters, ERNIC has 5",
            masters.len()
        ));
    }
    for (space, seg, (base, bytes)) in &want {
        match d
            .assignments
            .iter()
            .find(|a| &a.space == space && &a.segment == seg)
        {
            None => bad.push(format!("{seg} is not assigned in {space}")),
            Some(a) if (a.offset, a.range) != (*base, *bytes) => bad.push(format!(
                "{seg} in {space} at {:#x} + {:#x}, but backline-regmap's pl map (and the {} \
                 layout) put it at {base:#x} + {bytes:#x}",
                a.offset,
                a.range,
                layout.short()
            )),
            Some(_) => {}
        }
    }
    for a in &d.assignments {
        if !want
            .iter()
            .any(|(s, g, _)| s == &a.space && g == &a.segment)
        {
            bad.push(format!(
                "{} in {} is no window of the pl map",
                a.segment, a.space
            ));
        }
    }
}

fn check_ports(d: &Design, cell: &str, verilog: &str, bad: &mut Vec<String>) {
    let ports = ports(verilog);
    if ports.is_empty() {
        bad.push(format!("no ports read for {cell}"));
    }
    let open: Vec<&str> = if cell == "hwhs" {
        d.vars
            .get("ENGINE_OPEN_OUTPUTS")
            .map(|v| v.split_whitespace().collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let count = |nets: &[Vec<String>], pin: &str| {
        nets.iter().flatten().filter(|p| p.as_str() == pin).count()
    };
    let mut seen_intf = Vec::new();
    for (port, out) in &ports {
        if let Some(i) = interface(port) {
            if !seen_intf.contains(&i) {
                seen_intf.push(i);
                let n = count(&d.intf_nets, &format!("{cell}/{i}"));
                if n != 1 {
                    bad.push(format!(
                        "interface {cell}/{i} is connected {n} times, not once"
                    ));
                }
            }
            continue;
        }
        let n = count(&d.nets, &format!("{cell}/{port}"));
        let declared_open = open.contains(&port.as_str());
        if declared_open && !*out {
            bad.push(format!("{cell}/{port} is an input and cannot be left open"));
        }
        let times = n + usize::from(declared_open);
        if times != 1 {
            bad.push(format!(
                "{cell}/{port} is connected {n} times{}, not once",
                if declared_open {
                    " and declared open"
                } else {
                    ""
                }
            ));
        }
    }
    for pin in d.nets.iter().chain(&d.intf_nets).flatten() {
        if let Some(p) = pin.strip_prefix(&format!("{cell}/"))
            && !ports.iter().any(|(n, _)| n == p)
            && interface(&format!("{p}_x")).is_none()
        {
            bad.push(format!("{pin}: {cell} has no such port"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(rel: &str) -> String {
        std::fs::read_to_string(format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    fn files() -> (String, String, String) {
        (
            read(SCRIPT_PATH),
            read(crate::RTL_PATH),
            read(crate::adapter::RTL_PATH),
        )
    }

    #[test]
    fn the_block_design_agrees_with_the_firmware_the_map_and_the_rtl() {
        let (tcl, e, a) = files();
        for l in Layout::ALL {
            let bad = check(&tcl, l, &e, &a);
            assert!(bad.is_empty(), "{l}: {bad:#?}");
        }
        let d = Design::interpret(&tcl, &["build"]);
        assert_eq!(
            d.cells["ernic"],
            format!(
                "xilinx.com:ip:ernic:{}",
                Layout::DEFAULT.default_ip_version()
            )
        );
        let v3 = Design::interpret(&tcl, &["build", "v3"]);
        assert_eq!(
            v3.cells["ernic"],
            format!("xilinx.com:ip:ernic:{}", Layout::V3.default_ip_version())
        );
        // 14 engine <-> adapter nets, the clock, the reset, the tie-offs.
        assert!(d.nets.len() > 14 + 2);
        assert!(ports(&e).iter().any(|(p, out)| p == "ernic_err" && !out));
    }

    #[test]
    fn a_changed_address_version_or_connection_is_caught() {
        let (tcl, e, a) = files();
        let cases: [(&str, &str, Layout, &str); 7] = [
            (
                "ADAPTER_MEM_BASE 0xA4000000",
                "ADAPTER_MEM_BASE 0xA5000000",
                Layout::V4,
                "adapter/s_axi/reg0",
            ),
            (
                "HWHS_REGS_BASE 0xA0000000",
                "HWHS_REGS_BASE 0xA0001000",
                Layout::V4,
                "hwhs/axi/reg0",
            ),
            (
                "ERNIC_REGS_RANGE 256K",
                "ERNIC_REGS_RANGE 512K",
                Layout::V3,
                "ernic/s_axi_lite/Reg",
            ),
            (
                "ERNIC_REGS_RANGE 2M }",
                "ERNIC_REGS_RANGE 256K }",
                Layout::V4,
                "ernic/s_axi_lite/Reg",
            ),
            (
                "ernic:4.0",
                "ernic:5.0",
                Layout::V4,
                "no ERNIC version the firmware programs",
            ),
            (
                "ernic:3.1",
                "ernic:4.2",
                Layout::V3,
                "has the v4.x register layout",
            ),
            (
                "db_sq_pi db_addr cq_valid",
                "db_sq_pi cq_valid",
                Layout::V4,
                "hwhs/db_addr is connected 0 times",
            ),
        ];
        for (from, to, l, want) in cases {
            assert!(tcl.contains(from), "{from}");
            let bad = check(&tcl.replacen(from, to, 1), l, &e, &a);
            assert!(
                bad.iter().any(|b| b.contains(want)),
                "{from} -> {to}: {bad:#?}"
            );
        }
        // A port connected twice, an input declared open, no guard for a missing adapter.
        let twice = tcl.replacen(
            "set ENGINE_OPEN_OUTPUTS {tx_valid tx_data}",
            "set ENGINE_OPEN_OUTPUTS {tx_valid tx_data ernic_err}",
            1,
        );
        let bad = check(&twice, Layout::V4, &e, &a);
        assert!(
            bad.iter().any(|b| b.contains("hwhs/ernic_err is an input")),
            "{bad:#?}"
        );
        let unguarded = tcl.replacen("if {![file exists $adapter_rtl]}", "if {0}", 1);
        let bad = check(&unguarded, Layout::V4, &e, &a);
        assert!(bad.iter().any(|b| b.contains("missing")), "{bad:#?}");
    }

    #[test]
    fn the_interpreter_substitutes_and_loops() {
        let d = Design::interpret(
            "set A {x y}\nforeach p $A {\n  connect_bd_net [get_bd_pins a/$p] \\\n [get_bd_pins b/$p]\n}\n\
             # a comment\nset n 0; incr n; incr n",
            &[],
        );
        assert_eq!(
            d.nets,
            vec![
                vec!["a/x".to_string(), "b/x".to_string()],
                vec!["a/y".to_string(), "b/y".to_string()]
            ]
        );
        assert_eq!(d.vars["n"], "2");
        assert_eq!(size("2M"), Some(0x20_0000));
        assert_eq!(size("0xA4000000"), Some(0xA400_0000));
    }
}
