//! Postgres's side of the session fingerprint: its statements (settings, the role, temporary
//! objects, advisory locks, listeners, `PREPARE`d statements and cursors, the same hidden in
//! functions and `DO` blocks), and its fingerprint read through the middleware's query API.

use sql_middleware::prelude::*;

use super::super::*;

fn cases() -> Vec<Case> {
    vec![
        c("SET work_mem = '7MB'"),
        c("set session statement_timeout to 4321"),
        c("SET search_path TO public"),
        r("SELECT set_config('lock_timeout', '2345', false)"),
        c(
            "DO $$BEGIN PERFORM set_config('idle_in_transaction_session_timeout', '3456', false); END$$",
        ),
        c("DO $fp$ BEGIN EXECUTE 'SET application_name = ''fp_do'''; END $fp$"),
        r("SELECT sqlmw_fp_guc()"),
        r("SELECT pg_advisory_lock(7340001)"),
        r("SELECT pg_try_advisory_lock(7340002)"),
        r("select pg_advisory_lock_shared(7340003)"),
        r("SELECT sqlmw_fp_lock()"),
        c("DO $$BEGIN PERFORM pg_advisory_lock(7340005); END$$"),
        c("SET ROLE pg_monitor"),
        r("SELECT set_config('role', 'pg_monitor', false)"),
        c("SET SESSION AUTHORIZATION pg_monitor"),
        c("CREATE TEMP TABLE fp_t (a int)"),
        c("CREATE TEMPORARY TABLE IF NOT EXISTS \"fp x\" (a int)"),
        c("CREATE TABLE pg_temp.fp_q (a int)"),
        c("CREATE TEMP TABLE fp_c (a int) ON COMMIT DELETE ROWS"),
        c("CREATE TEMP VIEW fp_v AS SELECT 1 AS a"),
        c("CREATE VIEW pg_temp.fp_v2 AS SELECT 1 AS a"),
        c("CREATE TEMP SEQUENCE fp_s"),
        c("create sequence pg_temp.fp_s2"),
        c("SELECT 1 AS a INTO TEMP fp_i"),
        c("CREATE TEMP TABLE fp_as AS SELECT 1 AS a"),
        r("SELECT sqlmw_fp_temp()"),
        c("DO $$BEGIN CREATE TEMP TABLE fp_do (a int); END$$"),
        script("CREATE TEMP TABLE fp_m (a int); CREATE INDEX fp_m_ix ON fp_m (a)"),
        c("LISTEN fp_chan"),
        c("DO $$BEGIN EXECUTE 'LISTEN fp_do_chan'; END$$"),
        c("PREPARE fp_p AS SELECT 1"),
        c("DECLARE fp_cur CURSOR WITH HOLD FOR SELECT 1"),
    ]
}

/// Objects the Postgres statements use, made once in the test's schema.
const PG_SETUP: &str = "
CREATE FUNCTION sqlmw_fp_guc() RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM set_config('work_mem', '3MB', false); RETURN 1; END $$;
CREATE FUNCTION sqlmw_fp_lock() RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_lock(7340004); RETURN 1; END $$;
CREATE FUNCTION sqlmw_fp_temp() RETURNS int LANGUAGE plpgsql AS $$
BEGIN CREATE TEMP TABLE IF NOT EXISTS fp_fn (a int); RETURN 1; END $$;
";

/// The Postgres engine's table.
pub struct Postgres;

impl Table for Postgres {
    fn cases(_mariadb: bool) -> Vec<Case> {
        cases()
    }

    async fn setup(conn: &mut MiddlewarePoolConnection, _mariadb: bool) -> Result<(), String> {
        conn.execute_batch(PG_SETUP).await.map_err(err)
    }

    /// `pg_settings` (name, setting), `current_user` and `session_user`, the relations in
    /// `pg_my_temp_schema()`, the advisory locks held by `pg_backend_pid()`,
    /// `pg_prepared_statements` made from SQL, `pg_cursors` and `pg_listening_channels()`.
    async fn fingerprint(
        conn: &mut MiddlewarePoolConnection,
        _mariadb: bool,
    ) -> Result<Fingerprint, String> {
        let mut fp = Fingerprint::new();
        let rs = conn
            .query("SELECT name::text, setting::text FROM pg_settings ORDER BY name")
            .select()
            .await
            .map_err(err)?;
        for row in rs.iter() {
            let name: String = row.try_get(0).map_err(err)?;
            let setting: Option<String> = row.try_get(1).map_err(err)?;
            fp.insert(format!("guc {name}"), format!("{setting:?}"));
        }
        for (key, sql) in [
            ("users", "SELECT current_user::text, session_user::text"),
            (
                "temp objects",
                "SELECT relname::text, relkind::text FROM pg_class \
                 WHERE relnamespace = pg_my_temp_schema() ORDER BY 1",
            ),
            (
                "advisory locks",
                "SELECT classid::text, objid::text, objsubid::text, mode::text, granted \
                 FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' \
                 ORDER BY 1, 2, 3, 4",
            ),
            (
                "prepared statements",
                "SELECT name::text, statement FROM pg_prepared_statements WHERE from_sql \
                 ORDER BY 1",
            ),
            (
                "cursors",
                "SELECT name::text, statement, is_holdable FROM pg_cursors ORDER BY 1",
            ),
            (
                "listening channels",
                "SELECT c::text FROM pg_listening_channels() AS c ORDER BY 1",
            ),
        ] {
            fp.insert(key.into(), rows_text(conn, sql).await?);
        }
        Ok(fp)
    }

    async fn raw(conn: &mut MiddlewarePoolConnection, case: &Case) -> Result<(), String> {
        conn.postgres_client()
            .await
            .map_err(err)?
            .batch_execute(case.sql)
            .await
            .map_err(err)
    }

    async fn raw_in_tx(tx: &mut Tx<'_>, case: &Case) -> Result<(), String> {
        tx.postgres_client()
            .await
            .map_err(err)?
            .batch_execute(case.sql)
            .await
            .map_err(err)
    }
}
