//! Register access with errors that name the register: reads, writes, lists of writes, and
//! status polls bounded in device time. Below [`crate::bringup`] and [`crate::hwhs`], which
//! both use them.

use std::time::Duration;

use backline_regmap as rm;

use crate::error::Error;
use crate::mmio::{Access, Block, Mmio, Op};

/// Reads a register, naming it in the error.
pub fn rd<M: Mmio + ?Sized>(m: &mut M, block: Block, offset: u32) -> Result<u32, Error> {
    m.read32(block, offset).map_err(|source| Error::Mmio {
        op: Op::Read,
        block,
        register: block.register_name(offset),
        value: None,
        source,
    })
}

/// Writes a register, naming it and the value in the error.
pub fn wr<M: Mmio + ?Sized>(m: &mut M, block: Block, offset: u32, value: u32) -> Result<(), Error> {
    m.write32(block, offset, value)
        .map_err(|source| Error::Mmio {
            op: Op::Write,
            block,
            register: block.register_name(offset),
            value: Some(value),
            source,
        })
}

/// Applies a list of writes in order.
pub fn apply<M: Mmio + ?Sized>(m: &mut M, writes: &[Access]) -> Result<(), Error> {
    for a in writes {
        debug_assert_eq!(a.op, Op::Write);
        wr(m, a.block, a.offset, a.value)?;
        log::trace!("{a}");
    }
    Ok(())
}

/// Lets device time pass (an error here is the backend's: a lost simulator connection).
pub fn wait<M: Mmio + ?Sized>(m: &mut M, d: Duration) -> Result<(), Error> {
    m.wait(d).map_err(|source| Error::Mmio {
        op: Op::Read,
        block: Block::Hwhs,
        register: "STATUS".into(),
        value: None,
        source,
    })
}

/// `c` engine cycles as a duration.
pub fn cycles(c: u64) -> Duration {
    Duration::from_nanos(rm::cycles_to_ns(c))
}

/// Decodes `STATUS` for messages: `state WAIT_RPL, busy, running`.
pub fn status_text(s: u32) -> String {
    let mut parts = vec![format!(
        "state {}",
        rm::STATES
            .get(rm::STATUS_STATE.get(s) as usize)
            .copied()
            .unwrap_or("?")
    )];
    for f in rm::by_name("STATUS").map(|r| r.fields).unwrap_or(&[]) {
        if f.width == 1 && f.get(s) == 1 {
            parts.push(f.name.to_string());
        }
    }
    parts.join(", ")
}

/// Polls HWHS `STATUS` until `done(status)` holds, waiting `poll` between reads (doubling
/// after 32 polls, up to 100 µs), for at most `budget` of device time.
pub fn poll_status<M: Mmio + ?Sized>(
    m: &mut M,
    what: &dyn Fn() -> String,
    poll: Duration,
    budget: Duration,
    done: &dyn Fn(u32) -> bool,
) -> Result<u32, Error> {
    poll_status_timed(m, what, poll, budget, done).map(|(s, _)| s)
}

/// [`poll_status`], also returning the device time waited.
pub fn poll_status_timed<M: Mmio + ?Sized>(
    m: &mut M,
    what: &dyn Fn() -> String,
    poll: Duration,
    budget: Duration,
    done: &dyn Fn(u32) -> bool,
) -> Result<(u32, Duration), Error> {
    let mut waited = Duration::ZERO;
    let mut interval = poll;
    let cap = poll.max(Duration::from_micros(100));
    let mut n = 0u32;
    loop {
        let s = rd(m, Block::Hwhs, rm::STATUS)?;
        if done(s) {
            return Ok((s, waited));
        }
        if waited > budget {
            return Err(Error::Timeout {
                what: format!("{} did not happen within {budget:?}", what()),
                register: "STATUS",
                value: s,
                detail: format!(" ({})", status_text(s)),
            });
        }
        wait(m, interval)?;
        waited += interval;
        n += 1;
        if n >= 32 {
            interval = (interval * 2).min(cap);
        }
    }
}

/// Waits until the HWHS is idle (not busy: a soft reset's reply-memory sweep takes 1,024
/// cycles).
pub fn wait_idle<M: Mmio + ?Sized>(m: &mut M, what: &str) -> Result<u32, Error> {
    poll_status(
        m,
        &|| format!("the HWHS going idle {what}"),
        Duration::from_micros(1),
        Duration::from_millis(10),
        &|s| rm::STATUS_BUSY.get(s) == 0 && rm::STATUS_RUNNING.get(s) == 0,
    )
}
