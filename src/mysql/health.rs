//! Whether a MySQL or MariaDB node may be used, as the engine itself reports it. A Galera node
//! that has lost quorum still accepts connections and answers a ping, `SELECT 1`, `SET` and
//! `SHOW`; only its own state tells: usable when `wsrep_ready` is `ON`, `wsrep_cluster_status`
//! is `Primary` and `wsrep_local_state` is 4 (Synced). A server without Galera has no such
//! state (or a provider that is not loaded, `wsrep_on=OFF`) and counts as usable. For
//! `target_session_attrs=read-write` the server must also not be `read_only` or
//! `super_read_only`. Checked when a connection opens and when its host is suspected (see
//! `hosts.rs`), never on the checkout path.

use mysql_async::prelude::Queryable;

use super::error::map_err;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// `target_session_attrs`: what a node must be to be used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Attrs {
    /// Any usable node.
    #[default]
    Any,
    /// A usable node that takes writes (not `read_only` nor `super_read_only`).
    ReadWrite,
}

impl Attrs {
    /// Parses a URL's `target_session_attrs`.
    pub(crate) fn parse(v: &str) -> Result<Self> {
        match v {
            "any" => Ok(Attrs::Any),
            "read-write" => Ok(Attrs::ReadWrite),
            other => Err(crate::url_text::config_error(format!(
                "target_session_attrs `{other}` is not one MySQL URLs take (any, read-write)"
            ))),
        }
    }

    /// As written in a URL.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Attrs::Any => "any",
            Attrs::ReadWrite => "read-write",
        }
    }
}

/// What a node check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Usable,
    /// Not usable, and why.
    Not(String),
}

/// The server's state: `wsrep_*` status (absent without Galera) and the read-only settings.
const QUERY: &str = "SHOW GLOBAL STATUS WHERE Variable_name IN \
    ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state', 'wsrep_connected')";
const READ_ONLY: &str = "SHOW GLOBAL VARIABLES WHERE Variable_name IN \
    ('read_only', 'super_read_only', 'wsrep_on')";

/// Asks the server on `conn` whether it is usable for `attrs`.
pub(crate) async fn check(conn: &mut mysql_async::Conn, attrs: Attrs) -> Result<Verdict> {
    let status: Vec<(String, String)> = conn.query(QUERY).await.map_err(map_err)?;
    let vars: Vec<(String, String)> = conn.query(READ_ONLY).await.map_err(map_err)?;
    Ok(judge(&status, &vars, attrs))
}

/// The verdict on a server's `status` and `vars` (name, value pairs).
pub(crate) fn judge(
    status: &[(String, String)],
    vars: &[(String, String)],
    attrs: Attrs,
) -> Verdict {
    let get = |rows: &[(String, String)], k: &str| {
        rows.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.trim().to_owned())
    };
    let on = |v: Option<String>| v.is_some_and(|v| v.eq_ignore_ascii_case("ON") || v == "1");
    // A server with a wsrep provider loaded; on a plain server (or wsrep_on=OFF) the status
    // variables may exist with their idle values, which mean nothing.
    if on(get(vars, "wsrep_on")) {
        let ready = get(status, "wsrep_ready").unwrap_or_default();
        let cluster = get(status, "wsrep_cluster_status").unwrap_or_default();
        let local = get(status, "wsrep_local_state").unwrap_or_default();
        if !ready.eq_ignore_ascii_case("ON") || cluster != "Primary" || local != "4" {
            return Verdict::Not(format!(
                "the Galera node is not usable (wsrep_ready={ready}, wsrep_cluster_status={cluster}, wsrep_local_state={local}; usable is ON, Primary, 4 = Synced)"
            ));
        }
    }
    if attrs == Attrs::ReadWrite {
        for v in ["read_only", "super_read_only"] {
            if on(get(vars, v)) {
                return Verdict::Not(format!(
                    "the server is read-only ({v}=ON) and target_session_attrs=read-write"
                ));
            }
        }
    }
    Verdict::Usable
}

/// Whether `e` is a node saying it is not usable: Galera's `1047` ("WSREP has not yet prepared
/// node for application use", SQLSTATE `08S01`), which a reconnect to the same node does not
/// cure.
pub(crate) fn node_unusable(e: &SqlMiddlewareDbError) -> bool {
    e.backend() == crate::Backend::Mysql && e.driver_code() == Some("1047")
}

/// `SET SESSION wsrep_sync_wait=1` on a connection of a pool with causal reads: a read waits
/// until the node has applied everything committed in the cluster before it. Without Galera
/// the variable does not exist, and the pool cannot give what it promises.
pub(crate) async fn causal_reads(conn: &mut mysql_async::Conn) -> Result<()> {
    conn.query_drop("SET SESSION wsrep_sync_wait = 1")
        .await
        .map_err(|e| {
            let e = map_err(e);
            if e.kind() == ErrorKind::ConnectionLost {
                e
            } else {
                SqlMiddlewareDbError::new(
                    ErrorKind::Config,
                    format!("causal_reads=true needs a Galera node (wsrep_sync_wait): {e}"),
                )
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn a_node_is_judged_by_its_own_state() {
        let synced = rows(&[
            ("wsrep_ready", "ON"),
            ("wsrep_cluster_status", "Primary"),
            ("wsrep_local_state", "4"),
            ("wsrep_connected", "ON"),
        ]);
        let galera = rows(&[("read_only", "OFF"), ("wsrep_on", "ON")]);
        assert_eq!(judge(&synced, &galera, Attrs::ReadWrite), Verdict::Usable);
        // Quorum lost: connected, but not Primary.
        let lost = rows(&[
            ("wsrep_ready", "OFF"),
            ("wsrep_cluster_status", "non-Primary"),
            ("wsrep_local_state", "0"),
            ("wsrep_connected", "ON"),
        ]);
        assert!(matches!(judge(&lost, &galera, Attrs::Any), Verdict::Not(_)));
        // Joined but not yet synced (a donor or a joiner).
        let joining = rows(&[
            ("wsrep_ready", "ON"),
            ("wsrep_cluster_status", "Primary"),
            ("wsrep_local_state", "2"),
        ]);
        assert!(matches!(
            judge(&joining, &galera, Attrs::Any),
            Verdict::Not(_)
        ));
        // A plain server reports idle wsrep status with wsrep_on=OFF, or none at all.
        let plain = rows(&[("read_only", "OFF"), ("wsrep_on", "OFF")]);
        assert_eq!(judge(&lost, &plain, Attrs::ReadWrite), Verdict::Usable);
        assert_eq!(
            judge(&[], &rows(&[("read_only", "OFF")]), Attrs::ReadWrite),
            Verdict::Usable
        );
        // Read-only servers are fine for `any` only.
        let ro = rows(&[("read_only", "ON")]);
        assert_eq!(judge(&[], &ro, Attrs::Any), Verdict::Usable);
        assert!(matches!(judge(&[], &ro, Attrs::ReadWrite), Verdict::Not(_)));
        let sro = rows(&[("read_only", "OFF"), ("super_read_only", "ON")]);
        assert!(matches!(
            judge(&[], &sro, Attrs::ReadWrite),
            Verdict::Not(_)
        ));
    }

    #[test]
    fn attrs_parse() {
        assert_eq!(Attrs::parse("any").unwrap(), Attrs::Any);
        assert_eq!(Attrs::parse("read-write").unwrap(), Attrs::ReadWrite);
        assert_eq!(
            Attrs::parse("standby").unwrap_err().kind(),
            ErrorKind::Config
        );
    }
}
