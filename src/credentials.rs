//! Credentials per connection: the [`Login`] a pool's password provider is asked for, the
//! [`Password`] it returns (see
//! [`PoolBuilder::password_provider`](crate::PoolBuilder::password_provider)), and the provider
//! as the server wings call it, once each time they log in to a host.
//!
//! The provider's password never reaches a `Display`, a `Debug`, a span or an error: the wings
//! hand it to the driver's connect only, and the provider's own error is kept out of the
//! message of the error it becomes (it may quote the secret).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::Backend;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// A password or token for one connection's login, from a pool's
/// [password provider](crate::PoolBuilder::password_provider).
///
/// Its `Debug` and `Display` print `***`; the text is read only through [`Password::expose`].
/// Its bytes are overwritten with zeros when it is dropped.
///
/// ```
/// use sql_middleware::Password;
///
/// let p = Password::new("s3cr3t");
/// assert_eq!(p.expose(), "s3cr3t");
/// assert_eq!(format!("{p} {p:?}"), "*** ***");
/// ```
#[derive(Clone)]
pub struct Password(String);

impl Password {
    /// Wraps the text of a password or token.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The password's text, for the connect (and for nothing that is printed).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl std::fmt::Display for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl Drop for Password {
    fn drop(&mut self) {
        let mut bytes = std::mem::take(&mut self.0).into_bytes();
        bytes.fill(0);
        // Keeps the writes from being dropped as dead stores before the buffer is freed.
        std::hint::black_box(&bytes);
    }
}

/// The login a pool's [password provider](crate::PoolBuilder::password_provider) is asked a
/// password for: the engine, the host and port actually being connected to (for a multi-host
/// URL, the host being tried; for a replica, the replica), the user, the database, and whether
/// the connection serves reads (a replica's, or the primary's read-only pool's). Cloud IAM
/// tokens (AWS RDS, Azure) are signed for exactly these.
///
/// It holds no password, and its `Debug` shows the fields above. Cheap to clone.
///
/// ```no_run
/// # #[cfg(feature = "postgres")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), sql_middleware::SqlMiddlewareDbError> {
/// use sql_middleware::prelude::*;
/// use sql_middleware::{Login, Password};
///
/// // A token signed for one host, port and user (an IAM token service, say).
/// async fn token_for(host: &str, port: u16, user: &str) -> Result<String, std::io::Error> {
///     Ok(format!("token-for-{user}@{host}:{port}"))
/// }
///
/// let db = ConfigAndPool::postgres("postgres://app@db-a.internal,db-b.internal/app")
///     .password_provider(|login: Login| async move {
///         let token = token_for(login.host(), login.port(), login.user()).await?;
///         Ok(Password::new(token))
///     })
///     .build()
///     .await?;
/// # Ok(()) }
/// # #[cfg(not(feature = "postgres"))]
/// # fn main() {}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Login {
    backend: Backend,
    host: Arc<str>,
    port: u16,
    user: Arc<str>,
    database: Option<Arc<str>>,
    reader: bool,
}

impl Login {
    /// A login on `backend` to `host`:`port` as `user` (`""` if the configuration names none),
    /// to `database` if any, for reads or not.
    pub(crate) fn new(
        backend: Backend,
        (host, port): (Arc<str>, u16),
        user: Option<&str>,
        database: Option<&str>,
        reader: bool,
    ) -> Self {
        Self {
            backend,
            host,
            port,
            user: user.unwrap_or_default().into(),
            database: database.map(Into::into),
            reader,
        }
    }

    /// The engine being logged in to ([`Backend::Postgres`] or [`Backend::Mysql`]).
    ///
    /// ```
    /// # fn check(login: &sql_middleware::Login) -> bool {
    /// use sql_middleware::error::Backend;
    /// login.backend() == Backend::Postgres
    /// # }
    /// ```
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The host being connected to, as the configuration names it: a host name or an address,
    /// or on Postgres a Unix socket's directory. With a multi-host URL, the host being tried.
    ///
    /// ```
    /// # fn check(login: &sql_middleware::Login) -> String {
    /// format!("{}:{}", login.host(), login.port())
    /// # }
    /// ```
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port being connected to (the default port when the configuration names none).
    ///
    /// ```
    /// # fn check(login: &sql_middleware::Login) -> bool {
    /// login.port() == 5432
    /// # }
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The user logging in (`""` when the configuration names none).
    ///
    /// ```
    /// # fn check(login: &sql_middleware::Login) -> bool {
    /// login.user() == "app"
    /// # }
    /// ```
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The database asked for, if the configuration names one.
    ///
    /// ```
    /// # fn check(login: &sql_middleware::Login) -> &str {
    /// login.database().unwrap_or("postgres")
    /// # }
    /// ```
    pub fn database(&self) -> Option<&str> {
        self.database.as_deref()
    }

    /// Whether the connection serves reads: a replica's, or the primary's read-only pool's
    /// (Postgres [readers](crate::PoolBuilder::replica)); `false` for the pool's own
    /// connections and a [`Listener`](crate::Listener)'s.
    ///
    /// ```
    /// # fn check(login: &sql_middleware::Login) -> &'static str {
    /// if login.is_reader() { "reader-role" } else { "writer-role" }
    /// # }
    /// ```
    pub fn is_reader(&self) -> bool {
        self.reader
    }
}

/// What a provider's future yields: the password, or the provider's own error.
pub(crate) type Fetched =
    std::result::Result<Password, Box<dyn std::error::Error + Send + Sync + 'static>>;

/// The user's provider, as the builder stores it.
pub(crate) type Provide =
    Arc<dyn Fn(Login) -> Pin<Box<dyn Future<Output = Fetched> + Send>> + Send + Sync>;

/// A pool's password provider, if it has one, and the bound of each call (the pool's create
/// timeout). Cheap to clone (clones share the provider).
#[derive(Clone, Default)]
pub(crate) struct PasswordProvider {
    provide: Option<Provide>,
    bound: Option<Duration>,
}

impl std::fmt::Debug for PasswordProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.provide.is_some() {
            "PasswordProvider(set)"
        } else {
            "PasswordProvider(none)"
        })
    }
}

impl PasswordProvider {
    /// The provider `provide`.
    pub(crate) fn new(provide: Provide) -> Self {
        Self {
            provide: Some(provide),
            bound: None,
        }
    }

    /// The same provider, each call bounded by `bound` (the pool's create timeout).
    pub(crate) fn bounded(mut self, bound: Duration) -> Self {
        self.bound = Some(bound);
        self
    }

    /// Whether the pool has a provider.
    pub(crate) fn is_set(&self) -> bool {
        self.provide.is_some()
    }

    /// Asks the provider for the password of `login` (`None` without a provider: the
    /// configuration's password applies). Its error is a
    /// [`ErrorKind::Config`] error that keeps the provider's error out of its text (it is
    /// behind [`SqlMiddlewareDbError::driver_error`]); past its bound, a
    /// [`ErrorKind::PoolTimeout`] error, as for any opening past the create timeout.
    pub(crate) async fn fetch(&self, login: Login) -> Result<Option<Password>> {
        let Some(provide) = &self.provide else {
            return Ok(None);
        };
        let backend = login.backend;
        let call = provide(login);
        let fetched = match self.bound {
            Some(bound) => tokio::time::timeout(bound, call).await.map_err(|_| {
                SqlMiddlewareDbError::new(
                    ErrorKind::PoolTimeout,
                    format!(
                        "the password provider gave no password within the create timeout ({bound:?})"
                    ),
                )
            })?,
            None => call.await,
        };
        fetched.map(Some).map_err(|e| {
            SqlMiddlewareDbError::from_driver(
                backend,
                ErrorKind::Config,
                None,
                "the password provider failed; its error is not shown, since it may quote the \
                 secret (see driver_error())",
                ProviderError(e),
            )
        })
    }
}

/// The provider's error, reachable through `driver_error()` only.
struct ProviderError(Box<dyn std::error::Error + Send + Sync + 'static>);

impl std::fmt::Debug for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for ProviderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider<F, Fut>(f: F) -> PasswordProvider
    where
        F: Fn(Login) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Fetched> + Send + 'static,
    {
        PasswordProvider::new(Arc::new(move |l| Box::pin(f(l))))
    }

    fn login(backend: Backend) -> Login {
        Login::new(
            backend,
            ("db.internal".into(), 6432),
            Some("app"),
            Some("shop"),
            true,
        )
    }

    #[test]
    fn a_password_prints_as_stars() {
        let p = Password::new("hunter2-secret");
        for shown in [format!("{p}"), format!("{p:?}"), format!("{:?}", Some(&p))] {
            assert!(!shown.contains("hunter2"), "{shown}");
        }
        assert_eq!(p.expose(), "hunter2-secret");
        assert_eq!(p.clone().expose(), p.expose());
    }

    #[tokio::test]
    async fn no_provider_gives_none_and_a_provider_gives_its_password() {
        let none = PasswordProvider::default();
        assert!(
            none.fetch(login(Backend::Postgres))
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(format!("{none:?}"), "PasswordProvider(none)");
        let set = provider(|_| async { Ok(Password::new("tok-123")) });
        let got = set.fetch(login(Backend::Postgres)).await.unwrap().unwrap();
        assert_eq!(got.expose(), "tok-123");
        assert_eq!(format!("{set:?}"), "PasswordProvider(set)");
    }

    #[tokio::test]
    async fn the_provider_is_told_the_login() {
        let p = provider(|l: Login| async move {
            Ok(Password::new(format!(
                "{:?}|{}|{}|{}|{:?}|{}",
                l.backend(),
                l.host(),
                l.port(),
                l.user(),
                l.database(),
                l.is_reader()
            )))
        });
        assert!(p.is_set() && !PasswordProvider::default().is_set());
        let got = p.fetch(login(Backend::Postgres)).await.unwrap().unwrap();
        assert_eq!(
            got.expose(),
            "Postgres|db.internal|6432|app|Some(\"shop\")|true"
        );
        let l = Login::new(Backend::Mysql, ("h".into(), 3306), None, None, false);
        assert_eq!((l.user(), l.database()), ("", None));
        assert_eq!(
            format!("{l:?}"),
            "Login { backend: Mysql, host: \"h\", port: 3306, user: \"\", database: None, reader: false }"
        );
    }

    #[tokio::test]
    async fn an_error_is_config_without_its_text() {
        let p = provider(|_| async { Err("vault said: secret-in-error".into()) });
        let e = p.fetch(login(Backend::Mysql)).await.unwrap_err();
        assert_eq!(e.backend(), Backend::Mysql);
        assert_eq!(e.kind(), ErrorKind::Config);
        for shown in [e.to_string(), format!("{e:?}")] {
            assert!(!shown.contains("secret-in-error"), "{shown}");
        }
        let raw = e.driver_error().expect("the provider's error").to_string();
        assert!(raw.contains("secret-in-error"), "{raw}");
    }

    #[tokio::test]
    async fn a_slow_provider_is_cut_at_its_bound() {
        let p = provider(|_| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(Password::new("late"))
        })
        .bounded(Duration::from_millis(200));
        let started = std::time::Instant::now();
        let e = p.fetch(login(Backend::Postgres)).await.unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(e.kind(), ErrorKind::PoolTimeout);
        assert!(e.message().contains("create timeout"), "{e}");
    }
}
