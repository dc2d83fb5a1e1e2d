//! A TLS front on loopback for the tests of the one TLS stack (decision 0120): a server
//! certificate signed by a private test CA, which a test trusts through `mcpl.tlsRoots` or
//! `mcpl_tls::install`, in front of any plain server.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The folder of the TLS fixtures: `test-ca.cert.pem` (the private CA), `loopback.cert.pem`
/// and `loopback.key.pem` (127.0.0.1 and localhost, signed by it), and `self-signed.*.pem`.
pub fn tls_fixtures() -> PathBuf {
    crate::workspace_root().join("crates/client/tests/fixtures")
}

/// The private test CA's certificate file.
pub fn test_ca() -> PathBuf {
    tls_fixtures().join("test-ca.cert.pem")
}

/// A TLS front on loopback for `backend`: each connection is decrypted with the loopback
/// certificate (signed by the test CA) and relayed to the plain server.
pub fn tls_front(backend: SocketAddr) -> SocketAddr {
    let read = |name: &str| std::fs::read(tls_fixtures().join(name)).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![CertificateDer::from_pem_slice(&read("loopback.cert.pem")).unwrap()],
        PrivateKeyDer::from_pem_slice(&read("loopback.key.pem")).unwrap(),
    )
    .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = Arc::clone(&config);
            std::thread::spawn(move || relay(stream, config, backend));
        }
    });
    address
}

/// Moves bytes both ways between a TLS client and the plain backend until either side closes.
/// One thread polls both, each read with a short timeout: a rustls stream cannot be split.
fn relay(stream: TcpStream, config: Arc<rustls::ServerConfig>, backend: SocketAddr) {
    let poll = Some(Duration::from_millis(5));
    let Ok(mut plain) = TcpStream::connect(backend) else {
        return;
    };
    let _ = stream.set_read_timeout(poll);
    let _ = plain.set_read_timeout(poll);
    let connection = rustls::ServerConnection::new(config).unwrap();
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let mut buffer = vec![0; 64 * 1024];
    let waiting =
        |e: &std::io::Error| matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut);
    loop {
        match tls.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => {
                if plain.write_all(&buffer[..n]).is_err() {
                    return;
                }
            }
            Err(e) if waiting(&e) => {}
            Err(_) => return,
        }
        match plain.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => {
                if tls
                    .write_all(&buffer[..n])
                    .and_then(|()| tls.flush())
                    .is_err()
                {
                    return;
                }
            }
            Err(e) if waiting(&e) => {}
            Err(_) => return,
        }
    }
}
