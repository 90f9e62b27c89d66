//! Admission by a pre-shared key (`backline serve --token-file`): a controller proves that it
//! holds the key in its first hello, and a coprocessor that holds one answers nothing else.
//!
//! The proof is the [`KeyProof`] of `backline-wire`: an HMAC-SHA256 (the `hmac` and `sha2`
//! crates; nothing of our own) over the hello record as sent, a timestamp and a random nonce.
//! The coprocessor ([`Gate`]) checks the tag in constant time, refuses a proof made outside
//! its freshness window ([`FRESHNESS`] either side of its own clock), and remembers the nonces
//! it saw while they are fresh, so a captured hello replayed from elsewhere is refused too; the
//! same hello again from the same address is the controller's retransmission (udp) and gets
//! the same answer. Whatever fails gets no answer, no session and no ring memory: it is counted,
//! and logged once per source address.
//!
//! What this does not do: encrypt or authenticate the rounds themselves. An admitted session's
//! syndromes and corrections travel in the clear, and someone who can rewrite packets on the
//! path can still disturb them.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use backline_wire::{HANDSHAKE_BYTES, HELLO_KEY_PROOF, Handshake, KEY_PROOF_BYTES, KeyProof};
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The shortest key a token file may hold (after trailing white space is trimmed).
pub const MIN_KEY_BYTES: usize = 16;

/// The longest token file read.
const MAX_KEY_BYTES: usize = 4096;

/// A proof made more than this far from the coprocessor's clock, either way, is refused; the
/// two hosts' clocks must agree this well.
pub const FRESHNESS: Duration = Duration::from_secs(30);

/// Nonces a coprocessor remembers at most (those of valid proofs only, so only a holder of the
/// key can fill it: 65,536 hellos within a minute).
const REPLAY_CAPACITY: usize = 1 << 16;

/// Sources whose refusals are logged one by one; later ones are counted only.
const LOGGED_SOURCES: usize = 1024;

/// Why a token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// It does not exist.
    #[error("it does not exist (make one with `backline token FILE`)")]
    Missing,
    /// It cannot be read.
    #[error("it cannot be read: {0}")]
    Unreadable(#[source] std::io::Error),
    /// It is a directory or another kind of non-file.
    #[error("it is not a regular file")]
    NotAFile,
    /// Others may read or write it.
    #[error(
        "its mode {mode:04o} lets other users read or write it; a key file must be private \
         (chmod 600)"
    )]
    Shared {
        /// The file's permission bits.
        mode: u32,
    },
    /// It holds nothing.
    #[error("it is empty")]
    Empty,
    /// It holds too little to be a key.
    #[error(
        "it holds {len} bytes; a key is at least {MIN_KEY_BYTES} (make one with `backline token FILE`)"
    )]
    Short {
        /// Bytes after trimming.
        len: usize,
    },
    /// It is far too large to be a key file.
    #[error("it holds more than {MAX_KEY_BYTES} bytes: not a key file")]
    Long,
}

/// A pre-shared key, read from a token file. Its `Debug` shows its length, never its bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct AdmissionKey {
    bytes: Arc<[u8]>,
}

impl fmt::Debug for AdmissionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AdmissionKey({} bytes)", self.bytes.len())
    }
}

impl AdmissionKey {
    /// Reads the key in `path`: a private regular file (no access for group or others) of at
    /// least [`MIN_KEY_BYTES`] bytes; trailing white space (a newline) is not part of the key,
    /// so a file written by an editor and one written by `backline token` agree.
    pub fn from_file(path: &Path) -> Result<AdmissionKey, crate::Error> {
        let err = |problem| crate::Error::TokenFile {
            path: path.to_path_buf(),
            problem,
        };
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => err(TokenFileError::Missing),
            _ => err(TokenFileError::Unreadable(e)),
        })?;
        if !meta.is_file() {
            return Err(err(TokenFileError::NotAFile));
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(err(TokenFileError::Shared { mode }));
        }
        if meta.len() > MAX_KEY_BYTES as u64 {
            return Err(err(TokenFileError::Long));
        }
        let raw = std::fs::read(path).map_err(|e| err(TokenFileError::Unreadable(e)))?;
        AdmissionKey::from_bytes(&raw).map_err(err)
    }

    /// The key in `raw` (a token file's contents), trailing white space trimmed.
    pub fn from_bytes(raw: &[u8]) -> Result<AdmissionKey, TokenFileError> {
        if raw.len() > MAX_KEY_BYTES {
            return Err(TokenFileError::Long);
        }
        let end = raw
            .iter()
            .rposition(|b| !b.is_ascii_whitespace())
            .map_or(0, |i| i + 1);
        match end {
            0 => Err(TokenFileError::Empty),
            len if len < MIN_KEY_BYTES => Err(TokenFileError::Short { len }),
            len => Ok(AdmissionKey {
                bytes: raw[..len].into(),
            }),
        }
    }

    fn mac(&self, signed: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.bytes).expect("HMAC takes keys of any size");
        mac.update(signed);
        mac
    }

    /// A hello flagged as carrying a proof, and its proof, made now with a fresh nonce.
    pub fn prove(
        &self,
        mut hello: Handshake,
    ) -> crate::Result<([u8; HANDSHAKE_BYTES], [u8; KEY_PROOF_BYTES])> {
        hello.flags |= HELLO_KEY_PROOF;
        let record = hello.encode();
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce)
            .map_err(|e| crate::Error::Failed(format!("drawing a nonce for the key proof: {e}")))?;
        let unix_us = unix_us(SystemTime::now());
        let signed = KeyProof::signed_bytes(&record, unix_us, &nonce);
        let tag = self.mac(&signed).finalize().into_bytes().into();
        Ok((
            record,
            KeyProof {
                unix_us,
                nonce,
                tag,
            }
            .encode(),
        ))
    }

    /// Writes a new random key (32 bytes, as 64 hex digits and a newline) to `path`, which must
    /// not exist, readable by its owner only.
    pub fn create_file(path: &Path) -> Result<(), crate::Error> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)
            .map_err(|e| crate::Error::Failed(format!("drawing a key: {e}")))?;
        let mut text = String::with_capacity(65);
        for b in key {
            text.push_str(&format!("{b:02x}"));
        }
        text.push('\n');
        let io = |what: &'static str| {
            let path = path.display().to_string();
            move |e| crate::Error::io(format!("{what} {path}"))(e)
        };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(io("creating"))?;
        f.write_all(text.as_bytes()).map_err(io("writing"))?;
        f.sync_all().map_err(io("writing"))
    }
}

fn unix_us(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros().min(u64::MAX as u128) as u64)
}

/// What a [`Gate`] made of a hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A valid proof not seen before: answer it.
    Admit,
    /// The proof of an earlier hello from the same address (a retransmission): answer as
    /// then ([`Gate::answered`] keeps the answer).
    Again(Option<[u8; HANDSHAKE_BYTES]>),
    /// No answer, no session.
    Refuse(Refusal),
}

/// Why a hello was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// It carries no proof.
    NoProof,
    /// The tag does not match (another key, or bytes changed).
    BadTag,
    /// Made outside the freshness window.
    Stale,
    /// Its nonce was admitted before, from another address.
    Replay,
    /// The replay cache is full (a key holder is making hellos faster than they expire).
    Busy,
    /// Not a hello at all, or not a backline datagram.
    NotHello,
}

impl Refusal {
    fn describe(self) -> &'static str {
        match self {
            Refusal::NoProof => "a hello without a key proof",
            Refusal::BadTag => "a key proof made with another key",
            Refusal::Stale => "a key proof outside the freshness window (are the clocks set?)",
            Refusal::Replay => "a replayed key proof",
            Refusal::Busy => "a key proof while the replay cache is full",
            Refusal::NotHello => "a datagram that is no keyed hello",
        }
    }
}

struct Seen {
    from: SocketAddr,
    unix_us: u64,
    answer: Option<[u8; HANDSHAKE_BYTES]>,
}

/// The coprocessor's check of keyed hellos (one per listener).
pub(crate) struct Gate {
    key: AdmissionKey,
    seen: HashMap<[u8; 16], Seen>,
    logged: HashSet<IpAddr>,
    logged_overflow: bool,
    refused: Arc<AtomicU64>,
    what: String,
}

impl Gate {
    /// A gate for `key`; refusals are counted in `refused` and logged as `what` (the listener).
    pub(crate) fn new(key: AdmissionKey, refused: Arc<AtomicU64>, what: String) -> Gate {
        Gate {
            key,
            seen: HashMap::new(),
            logged: HashSet::new(),
            logged_overflow: false,
            refused,
            what,
        }
    }

    /// Checks `hello` (the record as received) and `proof` (the bytes after it, if any) from
    /// `from`. A refusal is counted and logged here.
    pub(crate) fn check(
        &mut self,
        hello: &[u8; HANDSHAKE_BYTES],
        proof: Option<&[u8]>,
        from: SocketAddr,
    ) -> Verdict {
        let v = self.judge(hello, proof, from, unix_us(SystemTime::now()));
        if let Verdict::Refuse(why) = v {
            self.refuse(from.ip(), why);
        }
        v
    }

    fn judge(
        &mut self,
        hello: &[u8; HANDSHAKE_BYTES],
        proof: Option<&[u8]>,
        from: SocketAddr,
        now_us: u64,
    ) -> Verdict {
        let flagged = Handshake::decode(hello).is_ok_and(|h| h.flags & HELLO_KEY_PROOF != 0);
        let Some(p) = proof.and_then(KeyProof::decode).filter(|_| flagged) else {
            return Verdict::Refuse(Refusal::NoProof);
        };
        let signed = KeyProof::signed_bytes(hello, p.unix_us, &p.nonce);
        if self.key.mac(&signed).verify_slice(&p.tag).is_err() {
            return Verdict::Refuse(Refusal::BadTag);
        }
        let window = FRESHNESS.as_micros() as u64;
        if now_us.abs_diff(p.unix_us) > window {
            return Verdict::Refuse(Refusal::Stale);
        }
        if let Some(s) = self.seen.get(&p.nonce) {
            return if s.from == from {
                Verdict::Again(s.answer)
            } else {
                Verdict::Refuse(Refusal::Replay)
            };
        }
        self.seen
            .retain(|_, s| now_us.abs_diff(s.unix_us) <= window);
        if self.seen.len() >= REPLAY_CAPACITY {
            return Verdict::Refuse(Refusal::Busy);
        }
        self.seen.insert(
            p.nonce,
            Seen {
                from,
                unix_us: p.unix_us,
                answer: None,
            },
        );
        Verdict::Admit
    }

    /// Records the answer given to the admitted hello whose proof is `proof`, for its
    /// retransmissions.
    pub(crate) fn answered(&mut self, proof: &[u8], answer: [u8; HANDSHAKE_BYTES]) {
        if let Some(p) = KeyProof::decode(proof)
            && let Some(s) = self.seen.get_mut(&p.nonce)
        {
            s.answer = Some(answer);
        }
    }

    /// Counts a refusal from `source`, logging the first of each source.
    pub(crate) fn refuse(&mut self, source: IpAddr, why: Refusal) {
        // Relaxed: a counter for reports.
        self.refused.fetch_add(1, Ordering::Relaxed);
        if self.logged.contains(&source) {
            return;
        }
        if self.logged.len() < LOGGED_SOURCES {
            self.logged.insert(source);
            log::warn!(
                "{}: not admitted: {} from {source} (no answer; further refusals from {source} \
                 are counted, not logged)",
                self.what,
                why.describe()
            );
        } else if !self.logged_overflow {
            self.logged_overflow = true;
            log::warn!(
                "{}: refusals from more than {LOGGED_SOURCES} sources; the rest are counted, \
                 not logged",
                self.what
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backline_wire::{Geometry, HandshakeKind};

    fn key(b: u8) -> AdmissionKey {
        AdmissionKey::from_bytes(&[b; 32]).unwrap()
    }

    fn gate(k: &AdmissionKey) -> (Gate, Arc<AtomicU64>) {
        let n = Arc::new(AtomicU64::new(0));
        (Gate::new(k.clone(), n.clone(), "test".into()), n)
    }

    fn hello() -> Handshake {
        Handshake::new(HandshakeKind::Hello, Geometry::default(), 1)
    }

    const A: &str = "10.0.0.1:4000";
    const B: &str = "10.0.0.2:4000";

    #[test]
    fn a_proof_admits_once_and_its_retransmission_gets_the_same_answer() {
        let k = key(1);
        let (mut g, refused) = gate(&k);
        let (h, p) = k.prove(hello()).unwrap();
        assert_eq!(g.check(&h, Some(&p), A.parse().unwrap()), Verdict::Admit);
        assert_eq!(
            g.check(&h, Some(&p), A.parse().unwrap()),
            Verdict::Again(None)
        );
        g.answered(&p, [7; HANDSHAKE_BYTES]);
        assert_eq!(
            g.check(&h, Some(&p), A.parse().unwrap()),
            Verdict::Again(Some([7; HANDSHAKE_BYTES]))
        );
        // The same proof from elsewhere is a replay.
        assert_eq!(
            g.check(&h, Some(&p), B.parse().unwrap()),
            Verdict::Refuse(Refusal::Replay)
        );
        assert_eq!(refused.load(Ordering::Relaxed), 1);
        // A second hello of the same controller has a nonce of its own.
        let (h2, p2) = k.prove(hello()).unwrap();
        assert_ne!(p, p2);
        assert_eq!(g.check(&h2, Some(&p2), A.parse().unwrap()), Verdict::Admit);
    }

    #[test]
    fn every_way_of_not_holding_the_key_is_refused() {
        let k = key(1);
        let (mut g, refused) = gate(&k);
        let from = A.parse().unwrap();
        let plain = hello().encode();
        assert_eq!(
            g.check(&plain, None, from),
            Verdict::Refuse(Refusal::NoProof)
        );
        // Another key.
        let (h, p) = key(2).prove(hello()).unwrap();
        assert_eq!(
            g.check(&h, Some(&p), from),
            Verdict::Refuse(Refusal::BadTag)
        );
        // A valid proof under an unflagged hello (the flag is what tells a TCP reader that a
        // proof follows) and a proof moved to another hello.
        let (h, p) = k.prove(hello()).unwrap();
        assert_eq!(
            g.check(&plain, Some(&p), from),
            Verdict::Refuse(Refusal::NoProof)
        );
        let mut other = hello();
        other.in_flight = 2;
        other.flags = HELLO_KEY_PROOF;
        assert_eq!(
            g.check(&other.encode(), Some(&p), from),
            Verdict::Refuse(Refusal::BadTag)
        );
        // A truncated proof.
        assert_eq!(
            g.check(&h, Some(&p[..40]), from),
            Verdict::Refuse(Refusal::NoProof)
        );
        // Every refusal counted; none admitted anything.
        assert_eq!(refused.load(Ordering::Relaxed), 5);
        assert!(g.seen.is_empty());
    }

    #[test]
    fn proofs_outside_the_window_are_refused() {
        let k = key(1);
        let (mut g, _) = gate(&k);
        let (h, p) = k.prove(hello()).unwrap();
        let made = KeyProof::decode(&p).unwrap().unix_us;
        let from = A.parse().unwrap();
        let w = FRESHNESS.as_micros() as u64;
        assert_eq!(
            g.judge(&h, Some(&p), from, made + w + 1),
            Verdict::Refuse(Refusal::Stale)
        );
        assert_eq!(
            g.judge(&h, Some(&p), from, made - w - 1),
            Verdict::Refuse(Refusal::Stale)
        );
        assert_eq!(g.judge(&h, Some(&p), from, made + w), Verdict::Admit);
        // Remembered nonces are forgotten once their proofs could no longer pass.
        let (h2, p2) = k.prove(hello()).unwrap();
        assert_eq!(
            g.judge(&h2, Some(&p2), from, made + 3 * w),
            Verdict::Refuse(Refusal::Stale)
        );
        assert_eq!(g.seen.len(), 1);
    }

    #[test]
    fn token_files_are_checked() {
        let dir = std::env::temp_dir().join(format!("backline-admit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        let _ = std::fs::remove_file(&path);
        let problem = |p: &Path| match AdmissionKey::from_file(p) {
            Err(crate::Error::TokenFile { problem, .. }) => problem.to_string(),
            other => panic!("{other:?}"),
        };
        assert!(problem(&path).contains("does not exist"));
        AdmissionKey::create_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let k = AdmissionKey::from_file(&path).unwrap();
        assert_eq!(k.bytes.len(), 64, "64 hex digits, the newline trimmed");
        assert!(
            AdmissionKey::create_file(&path).is_err(),
            "never overwrites"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(problem(&path).contains("chmod 600"));
        std::fs::write(&path, b"\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(problem(&path).contains("empty"));
        std::fs::write(&path, b"short\n").unwrap();
        assert!(problem(&path).contains("holds 5 bytes"));
        assert!(problem(&dir).contains("not a regular file"));
        assert!(!format!("{k:?}").contains(&format!("{:?}", &k.bytes[..4])));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
