//! What the CLI's end-to-end tests share: the binary, a scratch directory per test, a
//! `backline serve` child that is waited for and whose stderr is kept, and the JSON of a run.
#![allow(dead_code)] // each test binary uses its own part

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `backline` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_backline");

/// Runs `backline ARGS` to completion.
pub fn backline(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run backline")
}

/// A fresh directory for one test's outputs.
pub fn out_dir(tag: &str) -> String {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.display().to_string()
}

/// The one JSON object a successful `--json` run prints.
pub fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "backline failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).expect("one JSON object")
}

/// A running `backline serve`: its peer address (from its `ready` line) and its stderr so
/// far, read on a thread so that a chatty server never blocks on a full pipe.
pub struct Server {
    pub child: Child,
    pub peer: String,
    stderr: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// Starts `backline serve ARGS` and waits for its `ready PEER` line.
pub fn serve(args: &[&str]) -> Server {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start backline serve");
    let stderr = Arc::new(Mutex::new(String::new()));
    let (sink, mut pipe) = (stderr.clone(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let peer = match line.strip_prefix("ready ") {
        Some(p) => p.trim().to_string(),
        None => {
            let _ = child.wait();
            panic!("serve did not start: {line:?}: {}", stderr.lock().unwrap());
        }
    };
    Server {
        child,
        peer,
        stderr,
        reader: Some(reader),
    }
}

impl Server {
    /// Sends `signal` (`-KILL`, `-STOP`, `-CONT`, `-TERM`) to the server.
    pub fn signal(&self, signal: &str) {
        let st = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success(), "kill {signal}");
    }

    /// SIGTERM; waits for a clean exit and returns everything it wrote on stderr.
    pub fn stop(mut self) -> String {
        self.signal("-TERM");
        let st = self.child.wait().unwrap();
        if let Some(r) = self.reader.take() {
            r.join().unwrap();
        }
        let err = self.stderr.lock().unwrap().clone();
        assert!(st.success(), "serve exited {st:?}: {err}");
        err
    }

    /// SIGKILL and reap.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits up to `limit` for `child` to exit and returns its output; kills it (and fails the
/// test) if it does not.
pub fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> (Output, Duration) {
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), t0.elapsed());
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running after {limit:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
