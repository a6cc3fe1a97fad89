//! The TLS mode matrix both server engines must pass, and libpq's answer for each case.
//!
//! A case is a mode, the host connected to (the name `localhost` or the address `127.0.0.1`),
//! the server certificate (naming `localhost` only, or `localhost` and `127.0.0.1`) and the root
//! file given (none, the CA that signed the certificate, an unrelated CA). The server speaks TLS
//! and also accepts plain text, so `disable` connects unencrypted. libpq's rules:
//!
//! - `disable`: plain text, whatever the root file;
//! - `prefer`, `require`: TLS; without a root file nothing is checked, with one the chain is
//!   (the name never is);
//! - `verify-ca`: TLS, the chain checked against the root file, the name never; without a root
//!   file there is nothing to check the chain against, and libpq refuses to start (the public
//!   roots are trusted only together with a name check);
//! - `verify-full`: as `verify-ca`, and the certificate must name the host (an address only
//!   through an IP address entry); without a root file only the public roots are trusted, which
//!   did not sign the test certificate.
//!
//! One deliberate difference from libpq: `prefer` whose handshake fails (a wrong root) is an
//! error here, where libpq retries in plain text (the crate's documented rule).

use sql_middleware::{ErrorKind, SslMode};

/// The host a case connects to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// `localhost`.
    Name,
    /// `127.0.0.1`.
    Ip,
}

impl Host {
    /// The host as written in a URL.
    pub fn text(self) -> &'static str {
        match self {
            Host::Name => "localhost",
            Host::Ip => "127.0.0.1",
        }
    }
}

/// The names the server's certificate carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cert {
    /// The DNS name `localhost` only.
    NameOnly,
    /// `localhost` and the IP address `127.0.0.1`.
    NameAndIp,
}

/// The root file a case gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// None.
    None,
    /// The CA that signed the server's certificate.
    Right,
    /// A CA that signed nothing the server presents.
    Wrong,
}

/// One case of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub mode: SslMode,
    pub host: Host,
    pub cert: Cert,
    pub root: Root,
}

/// What a case must come to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A connection in plain text.
    Plain,
    /// A connection the server says is encrypted.
    Encrypted,
    /// No connection, with an error of this kind.
    Refused(ErrorKind),
}

impl Case {
    /// A label for reports.
    pub fn label(&self) -> String {
        format!(
            "{} host={} cert={} root={}",
            self.mode,
            self.host.text(),
            match self.cert {
                Cert::NameOnly => "localhost",
                Cert::NameAndIp => "localhost+127.0.0.1",
            },
            match self.root {
                Root::None => "none",
                Root::Right => "right",
                Root::Wrong => "wrong",
            }
        )
    }

    /// libpq's answer (see the module docs).
    pub fn expected(&self) -> Outcome {
        let chain_ok = self.root == Root::Right;
        match (self.mode, self.root) {
            (SslMode::Disable, _) => Outcome::Plain,
            (SslMode::Prefer | SslMode::Require, Root::None) => Outcome::Encrypted,
            (SslMode::VerifyCa, Root::None) => Outcome::Refused(ErrorKind::Config),
            (SslMode::Prefer | SslMode::Require | SslMode::VerifyCa, _) if chain_ok => {
                Outcome::Encrypted
            }
            (SslMode::VerifyFull, _) if chain_ok => {
                if self.host == Host::Name || self.cert == Cert::NameAndIp {
                    Outcome::Encrypted
                } else {
                    Outcome::Refused(ErrorKind::Tls)
                }
            }
            _ => Outcome::Refused(ErrorKind::Tls),
        }
    }
}

/// Every case: 5 modes × 2 hosts × 2 certificates × 3 root files.
pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    for mode in [
        SslMode::Disable,
        SslMode::Prefer,
        SslMode::Require,
        SslMode::VerifyCa,
        SslMode::VerifyFull,
    ] {
        for host in [Host::Name, Host::Ip] {
            for cert in [Cert::NameOnly, Cert::NameAndIp] {
                for root in [Root::None, Root::Right, Root::Wrong] {
                    all.push(Case {
                        mode,
                        host,
                        cert,
                        root,
                    });
                }
            }
        }
    }
    all
}

/// What a connection attempt came to: `Ok(encrypted)`, or the error's kind and its text
/// (`Display` and `Debug`).
pub type Got = Result<bool, (ErrorKind, String)>;

/// Compares `got` with the case's expected outcome; `None` when they agree, else a line for
/// the report. `secret` must appear in no error text.
pub fn judge(case: &Case, got: &Got, secret: &str) -> Option<String> {
    let want = case.expected();
    let ok = match (want, got) {
        (Outcome::Plain, Ok(false)) | (Outcome::Encrypted, Ok(true)) => true,
        (Outcome::Refused(kind), Err((k, text))) => {
            if text.contains(secret) {
                return Some(format!(
                    "{}: the error shows the password: {text}",
                    case.label()
                ));
            }
            *k == kind
        }
        _ => false,
    };
    (!ok).then(|| format!("{}: expected {want:?}, got {got:?}", case.label()))
}
