//! The out-of-band exchange over TCP: one [`Handshake`] record each way, with timeouts.
//! Used by the RDMA transport (controller ↔ coprocessor) and by the Arm control plane
//! (board ↔ host peer), so both speak exactly the same bytes.
//!
//! The coprocessor listens; the controller (a host, or the FPGA board's control plane, whose
//! engine is the controller) connects and sends its hello; the coprocessor answers with accept
//! or reject. Every read has a timeout: a silent peer is an
//! error, never a hang.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::string::{String, ToString};
use std::time::Duration;
use std::vec::Vec;

use crate::{HANDSHAKE_BYTES, Handshake, HandshakeError};

/// Why an out-of-band exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum OobError {
    /// No connection could be made (nothing listens, unreachable, bad address).
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The address tried.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The peer said nothing within the timeout.
    #[error("the peer sent no handshake within {0:?}")]
    Timeout(Duration),
    /// The peer closed the connection before a whole record arrived.
    #[error("the peer closed the connection after {0} of {HANDSHAKE_BYTES} handshake bytes")]
    Closed(usize),
    /// The bytes are not a valid record.
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
    /// Another socket error.
    #[error("handshake i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// Connects to `addr` (host:port), trying each resolved address for at most `timeout`.
pub fn connect(addr: &str, timeout: Duration) -> Result<TcpStream, OobError> {
    let err = |source| OobError::Connect {
        addr: addr.to_string(),
        source,
    };
    let addrs: Vec<SocketAddr> = addr.to_socket_addrs().map_err(err)?.collect();
    let mut last = std::io::Error::new(ErrorKind::NotFound, "address resolves to nothing");
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) => last = e,
        }
    }
    Err(err(last))
}

/// Sends one record.
pub fn send(stream: &mut TcpStream, h: &Handshake) -> Result<(), OobError> {
    send_bytes(stream, &h.encode())
}

/// Sends bytes as they are (a record and the key proof after it).
pub fn send_bytes(stream: &mut TcpStream, bytes: &[u8]) -> Result<(), OobError> {
    stream.write_all(bytes)?;
    stream.flush()?;
    Ok(())
}

/// Receives one record, waiting at most `timeout` for all of it.
pub fn recv(stream: &mut TcpStream, timeout: Duration) -> Result<Handshake, OobError> {
    let mut buf = [0u8; HANDSHAKE_BYTES];
    recv_exact(stream, &mut buf, timeout)?;
    Ok(Handshake::decode(&buf)?)
}

/// Fills `buf`, waiting at most `timeout` for each read.
pub fn recv_exact(
    stream: &mut TcpStream,
    buf: &mut [u8],
    timeout: Duration,
) -> Result<(), OobError> {
    stream.set_read_timeout(Some(timeout))?;
    let mut got = 0;
    while got < buf.len() {
        match stream.read(&mut buf[got..]) {
            Ok(0) => return Err(OobError::Closed(got)),
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(OobError::Timeout(timeout));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Geometry, HandshakeKind};
    use std::format;
    use std::net::TcpListener;

    #[test]
    fn records_cross_a_socket_and_bad_peers_are_errors() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            // 1: a good exchange.
            let (mut s, _) = l.accept().unwrap();
            let h = recv(&mut s, Duration::from_secs(5)).unwrap();
            assert_eq!(h.kind, HandshakeKind::Hello);
            send(
                &mut s,
                &Handshake::new(HandshakeKind::Accept, h.geometry, 1),
            )
            .unwrap();
            // 2: garbage.
            let (mut s, _) = l.accept().unwrap();
            s.write_all(&[0x42; HANDSHAKE_BYTES]).unwrap();
            // 3: silence, then close.
            let (s, _) = l.accept().unwrap();
            std::thread::sleep(Duration::from_millis(300));
            drop(s);
            // 4: half a record, then close.
            let (mut s, _) = l.accept().unwrap();
            s.write_all(&[0; 10]).unwrap();
        });
        let t = Duration::from_secs(5);
        let mut c = connect(&addr, t).unwrap();
        send(
            &mut c,
            &Handshake::new(HandshakeKind::Hello, Geometry::default(), 1),
        )
        .unwrap();
        assert_eq!(recv(&mut c, t).unwrap().kind, HandshakeKind::Accept);
        let mut c = connect(&addr, t).unwrap();
        assert!(matches!(
            recv(&mut c, t),
            Err(OobError::Handshake(HandshakeError::Magic))
        ));
        let mut c = connect(&addr, t).unwrap();
        assert!(matches!(
            recv(&mut c, Duration::from_millis(100)),
            Err(OobError::Timeout(_))
        ));
        let mut c = connect(&addr, t).unwrap();
        assert!(matches!(recv(&mut c, t), Err(OobError::Closed(10))));
        server.join().unwrap();
        // Nothing listens on a port we just released.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        assert!(matches!(
            connect(&format!("127.0.0.1:{port}"), t),
            Err(OobError::Connect { .. })
        ));
    }
}
