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

/// Registers that read back what was written: offsets of [`ernic::locate`] only; read-only
/// registers read what [`PlainErnic::set`] put there (else 0) and refuse writes; reserved
/// words read 0 (or what `set` put there, to rehearse a failed identification).
#[derive(Debug, Clone, Default)]
pub struct PlainErnic {
    regs: HashMap<u32, u32>,
}

impl PlainErnic {
    /// Every register at its reset value.
    pub fn new() -> PlainErnic {
        PlainErnic::default()
    }

    /// Sets a register (or a reserved word) behind the bus.
    pub fn set(&mut self, offset: u32, value: u32) {
        self.regs.insert(offset, value);
    }
}

impl ErnicRegs for PlainErnic {
    fn read(&mut self, offset: u32) -> Result<u32, Refusal> {
        if ernic::locate(offset).is_none() && !ernic::IDENT_PROBES.contains(&offset) {
            return Err(Refusal::NoRegister);
        }
        Ok(self
            .regs
            .get(&offset)
            .copied()
            .unwrap_or(ernic::RESET_VALUE))
    }

    fn write(&mut self, offset: u32, value: u32) -> Result<(), Refusal> {
        let loc = ernic::locate(offset).ok_or(Refusal::NoRegister)?;
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
