//! The one list of engines: the names every layer uses for them. Everything else asks the
//! engine through these types (or through the wing it dispatches to), so a new engine is named
//! here, in the dispatch (`dispatch.rs`), in its API file and in `lib.rs`, and nowhere else
//! outside its own folder.

/// Which engine a pool talks to.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatabaseType {
    /// SQLite through rusqlite.
    Sqlite,
    /// PostgreSQL through tokio-postgres.
    Postgres,
    /// Turso through the `turso` crate.
    Turso,
    /// MySQL or MariaDB through mysql_async.
    Mysql,
}

/// Which engine produced an error.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// SQLite through rusqlite.
    Sqlite,
    /// PostgreSQL through tokio-postgres.
    Postgres,
    /// Turso through the `turso` crate.
    Turso,
    /// MySQL or MariaDB through mysql_async.
    Mysql,
    /// Raised by the middleware itself, before any engine was involved.
    Middleware,
}

impl Backend {
    /// The engine's name as people write it (`"PostgreSQL"`), or `"middleware"`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
            Backend::Turso => "Turso",
            Backend::Mysql => "MySQL",
            Backend::Middleware => "middleware",
        }
    }
}

/// Which placeholder syntax the target engine expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PlaceholderStyle {
    /// `$1, $2, …` (PostgreSQL).
    Postgres,
    /// `?1, ?2, …` (SQLite, Turso).
    Sqlite,
}

impl PlaceholderStyle {
    /// Every style.
    #[cfg(test)]
    pub(crate) const ALL: [PlaceholderStyle; 2] =
        [PlaceholderStyle::Postgres, PlaceholderStyle::Sqlite];

    /// The sigil a placeholder has before translation to this style, the one it gets, and
    /// whether the engines that use the style read dollar-quoted bodies (their lexical rules:
    /// see `sql::scanner::Lexer`).
    pub(crate) fn rules(self) -> (u8, char, bool) {
        match self {
            PlaceholderStyle::Sqlite => (b'$', '?', false),
            PlaceholderStyle::Postgres => (b'?', '$', true),
        }
    }
}
