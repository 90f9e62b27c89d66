//! The ERNIC register block behind a trait: [`ErnicRegs`] is what a backend without a real
//! ERNIC holds — [`PlainErnic`] (registers that read back what was written, by the access
//! classes of [`crate::ernic`]) here, or the simulated board's rule-checking model in
//! `backline-sim`.

use std::collections::HashMap;

use crate::ernic;

/// Why a register access was not performed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No register at this offset (a bus error on the real IP).
    NoRegister,
    /// A write to a read-only register (a bus error on the real IP).
    ReadOnly(String),
    /// A bring-up rule was broken (a model only: a real ERNIC accepts the write and
    /// misbehaves later); the text says which rule and how to fix it.
    Rule(String),
}

/// A register file of the ERNIC block.
pub trait ErnicRegs {
    /// A register read.
    fn read(&mut self, offset: u32) -> Result<u32, Refusal>;
    /// A register write.
    fn write(&mut self, offset: u32, value: u32) -> Result<(), Refusal>;
}

/// Registers that read back what was written, in one layout: offsets of
/// [`ernic::Layout::locate`] only; read-only registers read what [`PlainErnic::set`] put
/// there (else 0; v4.x's `XRNIC_VERSION` reads [`PlainErnic::V4_VERSION`]) and refuse writes;
/// the v3.x reserved words of [`ernic::V3_PROBES`] read 0 (or what `set` put there, to
/// rehearse a failed identification); other offsets are bus errors.
#[derive(Debug, Clone)]
pub struct PlainErnic {
    layout: ernic::Layout,
    regs: HashMap<u32, u32>,
}

impl Default for PlainErnic {
    fn default() -> Self {
        PlainErnic::new(ernic::Layout::DEFAULT)
    }
}

impl PlainErnic {
    /// What a fresh v4.x IP's version register reads here: 4.0.0.
    pub const V4_VERSION: u32 = 0x0004_0000;

    /// Every register of `layout` at its reset value.
    pub fn new(layout: ernic::Layout) -> PlainErnic {
        let mut regs = HashMap::new();
        if layout == ernic::Layout::V4 {
            regs.insert(ernic::VERSION_OFFSET, PlainErnic::V4_VERSION);
        }
        PlainErnic { layout, regs }
    }

    /// The layout.
    pub fn layout(&self) -> ernic::Layout {
        self.layout
    }

    /// Sets a register (or a reserved word) behind the bus.
    pub fn set(&mut self, offset: u32, value: u32) {
        self.regs.insert(offset, value);
    }
}

impl ErnicRegs for PlainErnic {
    fn read(&mut self, offset: u32) -> Result<u32, Refusal> {
        let v3_probe = self.layout == ernic::Layout::V3 && ernic::V3_PROBES.contains(&offset);
        if self.layout.locate(offset).is_none() && !v3_probe {
            return Err(Refusal::NoRegister);
        }
        Ok(self
            .regs
            .get(&offset)
            .copied()
            .unwrap_or(ernic::RESET_VALUE))
    }

    fn write(&mut self, offset: u32, value: u32) -> Result<(), Refusal> {
        let loc = self.layout.locate(offset).ok_or(Refusal::NoRegister)?;
        if !loc.reg.access.writable() {
            return Err(Refusal::ReadOnly(format!(
                "{loc} is read-only ({})",
                loc.reg.access.short()
            )));
        }
        self.regs.insert(offset, value);
        Ok(())
    }
}
