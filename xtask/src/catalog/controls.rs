//! The in-run controls of the nightly comparison: the raw-driver rows of the report's workloads,
//! and which of them each other id is judged against.

use super::workloads::{Contender, Role, WORKLOADS, Workload};

/// Whether `group/function` is a raw-driver row of some workload: an in-run control of the
/// nightly comparison, never a cost of the crate.
pub fn is_control(group: &str, function: &str) -> bool {
    WORKLOADS.iter().any(|w| {
        w.contenders
            .iter()
            .any(|c| c.role == Role::Raw && c.group == group && c.function == function)
    })
}

/// The in-run control of `group/function`: the raw-driver row a workload divides it by, else
/// (for an id no workload lists, such as the micro-benches) the control of the first row its
/// group has in a workload. `None` for a raw row itself and for an id without a raw row (a
/// workload row whose raw index is `None`, a group no workload lists).
pub fn control_of(group: &str, function: &str) -> Option<(&'static str, &'static str)> {
    if is_control(group, function) {
        return None;
    }
    let raw_of = |w: &Workload, c: &Contender| {
        c.raw
            .and_then(|i| w.contenders.get(i))
            .filter(|r| r.role == Role::Raw)
            .map(|r| (r.group, r.function))
    };
    let mut listed = false;
    for w in WORKLOADS {
        for c in w.contenders {
            if c.group == group && c.function == function {
                listed = true;
                if let Some(r) = raw_of(w, c) {
                    return Some(r);
                }
            }
        }
    }
    if listed {
        return None;
    }
    WORKLOADS.iter().find_map(|w| {
        let c = w.contenders.iter().find(|c| c.group == group)?;
        if c.role == Role::Raw {
            Some((c.group, c.function))
        } else {
            raw_of(w, c)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls() {
        let s = "sqlite_single_row_lookup";
        assert!(is_control(s, "rusqlite") && is_control(s, "rusqlite_prepare_cached"));
        assert_eq!(control_of(s, "rusqlite"), None);
        assert_eq!(control_of(s, "middleware"), Some((s, "rusqlite")));
        assert_eq!(
            control_of(s, "middleware_query_one"),
            Some((s, "rusqlite_prepare_cached"))
        );
        assert_eq!(
            control_of(s, "middleware_checkout_query_one"),
            Some((s, "rusqlite_prepare_cached"))
        );
        // A micro-bench no workload lists: its group's raw row.
        assert_eq!(control_of(s, "pool_acquire"), Some((s, "rusqlite")));
        assert_eq!(
            control_of("turso_single_row_lookup", "middleware_decode"),
            Some(("turso_single_row_lookup", "turso_raw"))
        );
        // SQLx rows: the raw driver of their workload, in the main crate's group.
        assert_eq!(
            control_of("sqlite_single_row_lookup_sqlx", "sqlx_prepare"),
            Some((s, "rusqlite"))
        );
        // Listed without a raw row, or in no workload at all: no control.
        assert_eq!(control_of("bulk_load", "turso_middleware_bulk"), None);
        assert_eq!(control_of("postgres_connect", "connect_tls"), None);
    }
}
