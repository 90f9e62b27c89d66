//! The in-memory backend for unit tests: for the ERNIC block any [`ErnicRegs`] — plain
//! registers ([`PlainErnic`], the default) or the simulated board's rule-checking ERNIC model
//! (`backline_sim::board::ernic::ErnicModel`, which tests use to check the bring-up order) —,
//! a register file that follows `backline-regmap`'s access classes for the HWHS block, and a
//! log of every write (and of ERNIC reads) in order.
//!
//! The HWHS side has no engine behind it: registers read back what was written (read-only
//! ones read what a test [`FakeMmio::set_hwhs`] put there, else their reset value), and
//! waits only add up simulated time.

use std::collections::HashMap;
use std::time::Duration;

use backline_regmap as rm;

use backline_board::{ErnicRegs, PlainErnic, Refusal};

use super::{Access, Block, Mmio, MmioError, Op, check_offset};

/// Plain memory plus an ERNIC register file and a write log.
#[derive(Debug, Clone)]
pub struct FakeMmio<E: ErnicRegs = PlainErnic> {
    /// The ERNIC block.
    pub ernic: E,
    hwhs: HashMap<u32, u32>,
    log: Vec<Access>,
    waited: Duration,
    barriers: usize,
}

impl Default for FakeMmio {
    fn default() -> Self {
        FakeMmio::new(PlainErnic::default())
    }
}

impl<E: ErnicRegs> FakeMmio<E> {
    /// A fake board with `ernic` as its ERNIC block; HWHS registers at their reset values.
    pub fn new(ernic: E) -> FakeMmio<E> {
        FakeMmio {
            ernic,
            hwhs: rm::REGISTERS.iter().map(|r| (r.offset, r.reset)).collect(),
            log: Vec::new(),
            waited: Duration::ZERO,
            barriers: 0,
        }
    }

    /// Sets an HWHS register's value behind the bus (e.g. `STATUS` for a polling test).
    pub fn set_hwhs(&mut self, offset: u32, value: u32) {
        self.hwhs.insert(offset, value);
    }

    /// Every write so far (both blocks) and every ERNIC read, in order.
    pub fn log(&self) -> &[Access] {
        &self.log
    }

    /// Only the writes.
    pub fn writes(&self) -> Vec<Access> {
        self.log
            .iter()
            .copied()
            .filter(|a| a.op == Op::Write)
            .collect()
    }

    /// Forgets the log.
    pub fn clear_log(&mut self) {
        self.log.clear();
    }

    /// Device time waited so far.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Barriers issued so far.
    pub fn barriers(&self) -> usize {
        self.barriers
    }
}

/// Maps a model refusal onto the error a backend reports.
pub fn refusal_error(block: Block, offset: u32, op: Op, r: Refusal) -> MmioError {
    match r {
        Refusal::NoRegister => MmioError::Bus {
            block,
            offset,
            op,
            detail: "SLVERR (no register there)".into(),
        },
        Refusal::ReadOnly(s) => MmioError::Bus {
            block,
            offset,
            op,
            detail: format!("SLVERR ({s})"),
        },
        Refusal::Rule(reason) => MmioError::Refused {
            block,
            offset,
            op,
            reason,
        },
    }
}

impl<E: ErnicRegs> Mmio for FakeMmio<E> {
    fn read32(&mut self, block: Block, offset: u32) -> Result<u32, MmioError> {
        check_offset(block, offset, block.window_bytes())?;
        match block {
            Block::Ernic => {
                let v = ErnicRegs::read(&mut self.ernic, offset)
                    .map_err(|r| refusal_error(block, offset, Op::Read, r))?;
                self.log.push(Access {
                    op: Op::Read,
                    block,
                    offset,
                    value: v,
                });
                Ok(v)
            }
            Block::Hwhs => {
                let r = rm::lookup(offset).ok_or_else(|| MmioError::Bus {
                    block,
                    offset,
                    op: Op::Read,
                    detail: "SLVERR (no register there)".into(),
                })?;
                Ok(if r.access.readable() {
                    self.hwhs[&offset]
                } else {
                    0
                })
            }
        }
    }

    fn write32(&mut self, block: Block, offset: u32, value: u32) -> Result<(), MmioError> {
        check_offset(block, offset, block.window_bytes())?;
        match block {
            Block::Ernic => {
                ErnicRegs::write(&mut self.ernic, offset, value)
                    .map_err(|r| refusal_error(block, offset, Op::Write, r))?;
            }
            Block::Hwhs => {
                let r = rm::lookup(offset).ok_or_else(|| MmioError::Bus {
                    block,
                    offset,
                    op: Op::Write,
                    detail: "SLVERR (no register there)".into(),
                })?;
                if !r.access.writable() {
                    return Err(MmioError::Bus {
                        block,
                        offset,
                        op: Op::Write,
                        detail: format!("SLVERR ({} is {})", r.name, r.access.short()),
                    });
                }
                if r.access.readable() {
                    self.hwhs.insert(offset, value);
                }
            }
        }
        self.log.push(Access::write(block, offset, value));
        Ok(())
    }

    fn barrier(&mut self) {
        self.barriers += 1;
    }

    fn wait(&mut self, d: Duration) -> Result<(), MmioError> {
        self.waited += d;
        Ok(())
    }

    fn describe(&self) -> String {
        "fake".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hwhs_side_follows_the_access_classes() {
        let mut f = FakeMmio::default();
        assert_eq!(
            f.read32(Block::Hwhs, rm::VERSION).unwrap(),
            rm::VERSION_VALUE
        );
        f.write32(Block::Hwhs, rm::PAY_LEN, 8).unwrap();
        assert_eq!(f.read32(Block::Hwhs, rm::PAY_LEN).unwrap(), 8);
        f.write32(Block::Hwhs, rm::CTRL, 4).unwrap();
        assert_eq!(f.read32(Block::Hwhs, rm::CTRL).unwrap(), 0);
        let e = f.write32(Block::Hwhs, rm::STATUS, 1).unwrap_err();
        assert!(e.to_string().contains("STATUS is RO-pure"), "{e}");
        let e = f.read32(Block::Hwhs, 0x5C).unwrap_err();
        assert!(e.to_string().contains("no register there"), "{e}");
        assert!(matches!(
            f.read32(Block::Hwhs, 0x100),
            Err(MmioError::OutOfWindow { .. })
        ));
        assert_eq!(f.writes().len(), 2);
    }
}
