//! The settings the server engines share: how connections use TLS ([`SslMode`]) and how they
//! prepare statements ([`StatementCache`]).

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// How a connection to a server (PostgreSQL, MySQL/MariaDB) uses TLS: libpq's `sslmode`, with
/// libpq's meanings. MySQL's `ssl-mode` spellings map onto the same modes (`DISABLED`,
/// `PREFERRED`, `REQUIRED`, `VERIFY_CA`, `VERIFY_IDENTITY`).
///
/// Set it with [`PoolBuilder::ssl_mode`](crate::PoolBuilder::ssl_mode) or the URL parameter
/// `sslmode=`. Without either, the `sslmode` of a `tokio_postgres::Config` given to
/// [`ConfigAndPool::postgres_config`](crate::ConfigAndPool::postgres_config) applies, and
/// otherwise [`SslMode::Prefer`], libpq's default. Connections over a Unix socket never use TLS
/// (the server refuses it there), so `require` and the `verify-*` modes fail on one.
///
/// Modes above `prefer` need the `postgres-tls` feature (on MySQL, `mysql-tls`); without it they are an
/// [`ErrorKind::Config`] error at build time, and `prefer` connects in plain text, as libpq
/// built without TLS support does.
///
/// The modes are ordered from the weakest (`Disable`) to the strictest (`VerifyFull`): every
/// connection of a pool (primary, replicas, a `Listener`, cancel requests) uses the strictest
/// mode given anywhere for the pool, so a replica's `sslmode=disable` cannot weaken the pool's
/// `require`, nor the pool's default weaken a replica's `verify-full`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum SslMode {
    /// Plain text only.
    Disable,
    /// TLS when the server offers it, else plain text. The certificate is not checked unless a
    /// root certificate file is given (then its chain is checked, as in `verify-ca`). A
    /// handshake that fails is an error; there is no retry in plain text.
    #[default]
    Prefer,
    /// TLS or no connection. The certificate is not checked (the connection is encrypted, but
    /// an active attacker could stand in for the server) unless a root certificate file is given:
    /// then its chain is checked against it, as in `verify-ca`, as libpq does.
    Require,
    /// TLS, and the server's certificate must chain to the `sslrootcert` file, which it needs
    /// (without one the mode is an [`ErrorKind::Config`](crate::ErrorKind::Config) error: the
    /// public roots and no name check would accept any publicly issued certificate). The host
    /// name is not checked, so a host given as an IP address works with a certificate that
    /// names only a DNS name.
    VerifyCa,
    /// As `verify-ca`, and the certificate must also name the host connected to (a DNS name or
    /// an IP address in its subject alternative names).
    VerifyFull,
}

impl SslMode {
    /// libpq's spelling: `disable`, `prefer`, `require`, `verify-ca`, `verify-full`.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

impl std::fmt::Display for SslMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SslMode {
    type Err = SqlMiddlewareDbError;

    /// Parses libpq's spelling (see [`SslMode::as_str`]) or MySQL's `ssl-mode` one; anything
    /// else is an
    /// [`ErrorKind::Config`] error.
    fn from_str(s: &str) -> Result<SslMode> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            // MySQL's `ssl-mode` spellings, in any case.
            m if m.eq_ignore_ascii_case("disabled") => SslMode::Disable,
            m if m.eq_ignore_ascii_case("preferred") => SslMode::Prefer,
            m if m.eq_ignore_ascii_case("required") => SslMode::Require,
            m if m.eq_ignore_ascii_case("verify_ca") => SslMode::VerifyCa,
            m if m.eq_ignore_ascii_case("verify_identity") => SslMode::VerifyFull,
            _ => {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::Config,
                    "sslmode must be disable, prefer, require, verify-ca or verify-full (ssl-mode: DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY)",
                ));
            }
        })
    }
}

/// How a pool's connections to a server prepare statements (PostgreSQL and MySQL/MariaDB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StatementCache {
    /// Named server-side prepared statements, parsed once per connection and kept in its
    /// bounded cache: the fastest, for direct connections and poolers that track prepared
    /// statements (PgBouncer 1.21+ with `max_prepared_statements`, session pooling).
    #[default]
    Named,
    /// The unnamed statement: every run is one Parse/Bind/Execute round trip, with no
    /// statement left on the server between transactions, so the pool works behind PgBouncer in
    /// transaction mode and any pooler that does not track prepared statements. A statement is
    /// described once per connection (parameter types and columns) inside a transaction of its
    /// own, which such poolers keep on one server connection. A statement abandoned mid-way
    /// (its future dropped) is not cancelled with a cancel request, which poolers route
    /// unreliably: its connection is closed, and the statement runs to its end on the server.
    ///
    /// On MySQL/MariaDB every run prepares the statement, executes it and closes it
    /// (`COM_STMT_CLOSE`), so no statement outlives the call: for proxies that do not track
    /// prepared statements.
    Unnamed,
}
