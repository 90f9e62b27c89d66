//! The `backline serve` process a bench starts (shm, udp, rdma without `--peer`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use backline_transport::{TransportKind, os};

use super::BenchConfig;
use crate::cmd::common::{base_ids, is_gpu};

/// A `backline serve` child process, stopped when dropped.
pub(super) struct ServerProcess {
    child: Child,
    pub(super) peer: String,
    /// A cuqr server's `--shot-csv` (its per-shot figures, written when it stops).
    pub(super) shots: Option<std::path::PathBuf>,
    name: Option<String>,
    /// How long it may take to stop (writing hop probes takes a while).
    grace: Duration,
}

impl ServerProcess {
    /// Starts `backline serve` for the responders of `c` and waits for its `ready` line.
    pub(super) fn spawn(c: &BenchConfig) -> anyhow::Result<ServerProcess> {
        let (transport, responders) = (c.transport, &c.responders);
        let geometry = c.session.geometry;
        let hop_csv = c.server_hops.as_deref();
        let exe = std::env::current_exe().context("locating the backline executable")?;
        let name = format!("bench-{}", std::process::id());
        let mut cmd = Command::new(exe);
        cmd.arg("serve")
            .arg("--transport")
            .arg(transport.name())
            .arg("--protocol")
            .arg(c.protocol())
            .arg("--ring-depth")
            .arg(geometry.depth.to_string())
            .arg("--slot-bytes")
            .arg(geometry.slot_bytes.to_string())
            .arg("--payload-bytes")
            .arg(geometry.payload_capacity().to_string())
            .arg("--spin-us")
            .arg(c.ring.spin_us.to_string())
            .arg("--exit-with-parent");
        match transport {
            TransportKind::Shm => cmd.arg("--name").arg(&name),
            _ => cmd.arg("--bind").arg("127.0.0.1:0"),
        };
        if transport == TransportKind::Rdma {
            cmd.args(c.rdma.to_args());
        }
        if c.session.key.is_some() {
            cmd.args(c.admit.to_args());
        }
        if responders.iter().any(|r| is_gpu(r)) {
            cmd.args(c.gpu.to_args());
        }
        // A cuqr server writes every shot's last syndrome → corrections ready figure when it
        // stops, for the report.
        let shots = c.cuqr.then(|| {
            std::env::temp_dir().join(format!("backline-bench-{}.shots.csv", std::process::id()))
        });
        if let Some(p) = &shots {
            cmd.arg("--shot-csv").arg(p);
        }
        if let Some(p) = hop_csv {
            cmd.arg("--hop-csv")
                .arg(p)
                .arg("--hop-rounds")
                .arg(c.floor_rounds.to_string());
        }
        for (id, r) in base_ids(responders).into_iter().zip(responders) {
            cmd.arg("--fn").arg(format!("{id}={r}"));
        }
        if let Some((_, resp)) = c.pin {
            cmd.arg("--pin").arg(resp.to_string());
        }
        if c.ring.hold_dma_latency {
            cmd.arg("--hold-dma-latency");
        }
        // Its own process group: a Ctrl-C at the terminal is the bench's to handle (it stops
        // at a round boundary and then stops this server), not the server's.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().context("starting `backline serve`")?;
        let mut s = Self::wait_ready(child, transport, hop_csv.is_some())?;
        if shots.is_some() {
            s.grace = s.grace.max(Duration::from_secs(10));
        }
        s.shots = shots;
        Ok(s)
    }

    /// Reads the server's `ready PEER` line, or its last word when it exits instead.
    fn wait_ready(
        mut child: Child,
        transport: TransportKind,
        hops: bool,
    ) -> anyhow::Result<ServerProcess> {
        let name = format!("bench-{}", std::process::id());
        let stdout = child.stdout.take().expect("piped");
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let peer = match (read, line.strip_prefix("ready ")) {
            (Ok(_), Some(p)) => p.trim().to_string(),
            _ => {
                let _ = child.wait();
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                let last = err
                    .lines()
                    .last()
                    .unwrap_or("it exited without a word")
                    .to_string();
                bail!("`backline serve` did not start: {last}");
            }
        };
        // Keep draining its stderr so it never blocks on a full pipe.
        if let Some(mut e) = child.stderr.take() {
            let _ = std::thread::Builder::new()
                .name("bench-srv-err".into())
                .spawn(move || std::io::copy(&mut e, &mut std::io::sink()));
        }
        Ok(ServerProcess {
            child,
            peer,
            shots: None,
            name: (transport == TransportKind::Shm).then_some(name),
            grace: if hops {
                Duration::from_secs(60)
            } else {
                Duration::from_secs(1)
            },
        })
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = os::terminate(self.child.id());
            let t0 = Instant::now();
            while t0.elapsed() < self.grace {
                if let Ok(Some(_)) = self.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(n) = &self.name {
            let _ = backline_transport::shm::remove_stale(n);
        }
    }
}
