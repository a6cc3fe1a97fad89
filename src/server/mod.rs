//! What the server engines share (PostgreSQL, MySQL/MariaDB): the settings of their
//! connections, how they use TLS ([`SslMode`]) and how they prepare statements
//! ([`StatementCache`]), in `settings.rs`; and the bookkeeping of a connection held past its
//! use, given up while its statement may still run or cleaned before it goes back to the pool,
//! in `held.rs`; and the order a multi-host URL's hosts are tried in, in `order.rs`.

pub(crate) mod held;
pub(crate) mod order;
mod settings;

pub use settings::{SslMode, StatementCache};
