//! The bare floors that benchmarks compare against: a sequence number bounced through one
//! cache line (memcpy, shm), and raw UDP request/reply (udp, in `udp.rs`). No session, no
//! header, no dispatch: what the hardware and the OS cost by themselves between the same two
//! threads.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use backline_ring::CachePadded;

use crate::{Error, Result, os};

/// Polls without PAUSE before the spin loop settles into PAUSEd polling, exactly as the
/// session's waits do (`backline-ring`'s first burst), so floor and session detect alike.
const FIRST_BURST: u32 = 64;

/// The client half of the bounce: for each round writes an odd value and spins until the
/// server answers with the next even one. Returns each round's round-trip time in ns, timed
/// with the same clock as session rounds.
pub fn bounce_client(line: &AtomicU32, rounds: u64, timeout: Duration) -> Result<Vec<f64>> {
    let mut rtts = Vec::with_capacity(rounds as usize);
    for i in 0..rounds {
        let ask = (2 * i + 1) as u32;
        let want = ask.wrapping_add(1);
        let t0 = Instant::now();
        // Release/Acquire: the value itself is the whole message.
        line.store(ask, Ordering::Release);
        let mut polls = 0u32;
        while line.load(Ordering::Acquire) != want {
            if polls >= FIRST_BURST {
                core::hint::spin_loop();
            }
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(1024) && t0.elapsed() > timeout {
                return Err(Error::Timeout {
                    what: format!("the floor bounce partner at round {i}"),
                    waited: t0.elapsed(),
                });
            }
        }
        rtts.push(t0.elapsed().as_nanos() as f64);
    }
    Ok(rtts)
}

/// The server half: answers `rounds` odd values with the next even ones. Gives up if the
/// client goes quiet for `timeout`.
pub fn bounce_server(line: &AtomicU32, rounds: u64, timeout: Duration) -> Result<()> {
    for i in 0..rounds {
        let want = (2 * i + 1) as u32;
        let t0 = Instant::now();
        let mut polls = 0u32;
        while line.load(Ordering::Acquire) != want {
            if polls >= FIRST_BURST {
                core::hint::spin_loop();
            }
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(1024) && t0.elapsed() > timeout {
                return Err(Error::Timeout {
                    what: format!("the floor bounce client at round {i}"),
                    waited: t0.elapsed(),
                });
            }
        }
        line.store(want.wrapping_add(1), Ordering::Release);
    }
    Ok(())
}

/// The memcpy floor: a partner thread (pinned to `partner_cpu` if given) bounces a sequence
/// number with the calling thread through one cache line, `rounds` times.
pub fn memcpy_floor(
    rounds: u64,
    partner_cpu: Option<usize>,
    timeout: Duration,
) -> Result<Vec<f64>> {
    let line = Arc::new(CachePadded(AtomicU32::new(0)));
    let l2 = line.clone();
    let partner = std::thread::Builder::new()
        .name("backline-floor".into())
        .spawn(move || -> Result<()> {
            if let Some(cpu) = partner_cpu {
                os::pin_current_thread(cpu)?;
            }
            bounce_server(&l2, rounds, timeout)
        })
        .map_err(Error::io("spawning the floor thread"))?;
    let rtts = bounce_client(&line, rounds, timeout);
    let served = partner
        .join()
        .map_err(|_| Error::Panicked { thread: "floor" })?;
    let rtts = rtts?;
    served?;
    Ok(rtts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcpy_floor_returns_one_time_per_round() {
        let r = memcpy_floor(1000, None, Duration::from_secs(10)).unwrap();
        assert_eq!(r.len(), 1000);
        assert!(r.iter().all(|&t| t > 0.0));
    }

    #[test]
    fn a_missing_partner_times_out() {
        let line = AtomicU32::new(0);
        let e = bounce_client(&line, 1, Duration::from_millis(20)).unwrap_err();
        assert!(e.is_timeout());
    }
}
