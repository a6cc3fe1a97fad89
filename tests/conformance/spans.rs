//! Tracing spans (feature `tracing`): their names, fields, parents and events after known work,
//! on every backend, captured by a recording subscriber.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use sql_middleware::prelude::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use crate::backend_tests;
use crate::common::backends::{Kind, TestDb};

/// One span as the subscriber saw it: name, fields (as text) and its parent's name.
#[derive(Debug, Clone, Default)]
struct SpanRec {
    id: u64,
    name: String,
    fields: BTreeMap<String, String>,
    parent: Option<u64>,
    closed: bool,
}

/// One event: level, target, fields (the message under `message`).
#[derive(Debug, Clone)]
struct EventRec {
    level: tracing::Level,
    target: String,
    fields: BTreeMap<String, String>,
    span: Option<u64>,
}

#[derive(Debug, Default)]
struct Seen {
    spans: Vec<SpanRec>,
    index: HashMap<u64, usize>,
    events: Vec<EventRec>,
}

/// What the recording subscriber saw, shared with the test.
#[derive(Debug, Clone, Default)]
struct Capture(Arc<Mutex<Seen>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

thread_local! {
    /// The capture of the test running on this thread, if any.
    static CURRENT: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// The process-wide layer: a span of the crate is recorded into the capture of the test whose
/// thread created it (kept in the span's extensions, so records and closes from other threads
/// find it); an event goes to its span's capture, or to its thread's.
///
/// One global subscriber rather than a scoped one per test: `tracing` caches each callsite's
/// interest process-wide, and a callsite first reached by a test with no subscriber while
/// scoped subscribers come and go on other threads could stay disabled for a test that has one.
struct Router;

fn ours(meta: &Metadata<'_>) -> bool {
    meta.target().starts_with("sql_middleware")
}

fn capture_of<S: Subscriber + for<'a> LookupSpan<'a>>(
    ctx: &Context<'_, S>,
    id: &Id,
) -> Option<Capture> {
    ctx.span(id)?.extensions().get::<Capture>().cloned()
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Router {
    /// Only the crate's callsites: the engines' own (Turso has many) are never enabled.
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if ours(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>, _: Context<'_, S>) -> bool {
        ours(meta)
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        // The engines' own spans (Turso has many) are not the crate's.
        if !attrs.metadata().target().starts_with("sql_middleware") {
            return;
        }
        let Some(cap) = CURRENT.with(|c| c.borrow().clone()) else {
            return;
        };
        let mut rec = SpanRec {
            id: id.into_u64(),
            name: attrs.metadata().name().to_owned(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent())
                .map(|p| p.id().into_u64()),
            ..Default::default()
        };
        attrs.record(&mut Fields(&mut rec.fields));
        {
            let mut seen = cap.0.lock().unwrap_or_else(|e| e.into_inner());
            let i = seen.spans.len();
            seen.index.insert(rec.id, i);
            seen.spans.push(rec);
        }
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(cap);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(cap) = capture_of(&ctx, id) else {
            return;
        };
        let mut seen = cap.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&i) = seen.index.get(&id.into_u64()) {
            values.record(&mut Fields(&mut seen.spans[i].fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if !event.metadata().target().starts_with("sql_middleware") {
            return;
        }
        let in_span = ctx.event_span(event);
        let cap = in_span
            .as_ref()
            .and_then(|s| s.extensions().get::<Capture>().cloned())
            .or_else(|| CURRENT.with(|c| c.borrow().clone()));
        let Some(cap) = cap else {
            return;
        };
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        cap.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .events
            .push(EventRec {
                level: *event.metadata().level(),
                target: event.metadata().target().to_owned(),
                fields,
                span: in_span.map(|s| s.id().into_u64()),
            });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(cap) = capture_of(&ctx, &id) else {
            return;
        };
        let mut seen = cap.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&i) = seen.index.get(&id.into_u64()) {
            seen.spans[i].closed = true;
        }
    }
}

/// Ends a test's capture on its thread.
struct CaptureGuard;

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.borrow_mut().take());
    }
}

impl Capture {
    /// Records the crate's spans created on this thread (where the test body runs), and their
    /// events, until the guard drops.
    fn install() -> (CaptureGuard, Capture) {
        static GLOBAL: Once = Once::new();
        GLOBAL.call_once(|| {
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Router))
                .expect("no other global subscriber in the conformance tests");
        });
        let cap = Capture::default();
        CURRENT.with(|c| *c.borrow_mut() = Some(cap.clone()));
        (CaptureGuard, cap)
    }

    fn clear(&self) {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        seen.spans.clear();
        seen.index.clear();
        seen.events.clear();
    }

    /// Every span named `name` (ids are re-used once a span closes, so clear between steps).
    fn named(&self, name: &str) -> Vec<SpanRec> {
        let seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        seen.spans
            .iter()
            .filter(|s| s.name == name)
            .cloned()
            .collect()
    }

    /// The statement span whose query text is `sql`.
    fn statement(&self, sql: &str) -> SpanRec {
        let all = self.named("statement");
        let found: Vec<_> = all
            .iter()
            .filter(|s| s.fields.get("db.query.text").map(String::as_str) == Some(sql))
            .cloned()
            .collect();
        assert_eq!(found.len(), 1, "one statement span for {sql:?}: {all:#?}");
        found.into_iter().next().unwrap()
    }

    fn events(&self) -> Vec<EventRec> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .events
            .clone()
    }
}

fn field<'a>(s: &'a SpanRec, name: &str) -> &'a str {
    s.fields
        .get(name)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("span {} has no field {name}: {s:#?}", s.name))
}

fn system(kind: Kind) -> &'static str {
    match kind {
        Kind::Sqlite => "sqlite",
        Kind::Postgres => "postgresql",
        Kind::Turso => "turso",
        // OpenTelemetry's name for MySQL (also for MariaDB: one wing serves both).
        Kind::Mysql => "mysql",
    }
}

/// A statement's span carries the OpenTelemetry database fields, the SQL as written and never
/// a bound value; its rows, its connection and its checkout's wait; failures are marked.
async fn t_statement_spans(db: &TestDb, cap: &Capture) {
    let k = db.kind.name();
    cap.clear();
    let mut conn = db.db.get_connection().await.unwrap();
    conn.execute_batch("CREATE TABLE traced (id BIGINT PRIMARY KEY, secret TEXT)")
        .await
        .unwrap();
    let batch = cap.statement("CREATE TABLE traced (id BIGINT PRIMARY KEY, secret TEXT)");
    assert_eq!(field(&batch, "db.operation.name"), "CREATE", "[{k}]");
    cap.clear();

    let insert = "INSERT INTO traced (id, secret) VALUES ($1, $2)";
    let n = conn
        .query(insert)
        .params(&[RowValues::Int(1), "hunter2-do-not-log".into()])
        .dml()
        .await
        .unwrap();
    assert_eq!(n, 1);
    let select = "SELECT id, secret FROM traced WHERE id >= $1";
    let rows: Vec<(i64, String)> = conn
        .query(select)
        .params(&[RowValues::Int(0)])
        .all()
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);

    let ins = cap.statement(insert);
    assert_eq!(field(&ins, "db.system"), system(db.kind), "[{k}]");
    assert_eq!(field(&ins, "db.operation.name"), "INSERT", "[{k}]");
    assert_eq!(field(&ins, "otel.name"), "INSERT", "[{k}]");
    assert_eq!(field(&ins, "otel.kind"), "client", "[{k}]");
    assert_eq!(field(&ins, "sqlmw.rows_affected"), "1", "[{k}]");
    let sel = cap.statement(select);
    assert_eq!(field(&sel, "db.operation.name"), "SELECT", "[{k}]");
    assert_eq!(field(&sel, "db.response.returned_rows"), "1", "[{k}]");
    assert!(!sel.fields.contains_key("error.type"), "[{k}] {sel:#?}");
    for s in [&ins, &sel] {
        assert!(s.closed, "[{k}] the span ends with the call");
        assert!(
            field(s, "sqlmw.connection.id").parse::<u64>().unwrap() > 0,
            "[{k}]"
        );
        field(s, "sqlmw.pool.wait_us").parse::<u64>().unwrap();
        assert_eq!(s.parent, None, "[{k}] outside a transaction: no parent");
        for v in s.fields.values() {
            assert!(!v.contains("hunter2"), "[{k}] a bound value leaked: {s:#?}");
        }
        match db.kind {
            // The network servers: where the connection went.
            Kind::Postgres | Kind::Mysql => {
                assert!(!field(s, "server.address").is_empty(), "[{k}]");
                field(s, "server.port").parse::<u16>().unwrap();
                assert!(!field(s, "db.namespace").is_empty(), "[{k}]");
            }
            _ => assert!(!s.fields.contains_key("server.address"), "[{k}]"),
        }
        match db.kind {
            // A write whose commit waits for the disk is offloaded by policy.
            Kind::Sqlite => assert!(
                ["inline", "offloaded"].contains(&field(s, "sqlmw.sqlite.exec")),
                "[{k}] {s:#?}"
            ),
            _ => assert!(!s.fields.contains_key("sqlmw.sqlite.exec"), "[{k}]"),
        }
    }
    if db.kind == Kind::Sqlite {
        assert_eq!(
            field(&sel, "sqlmw.sqlite.exec"),
            "inline",
            "[{k}] a quick read runs inline"
        );
    }
    // Both statements ran on the one checked-out connection.
    assert_eq!(
        field(&ins, "sqlmw.connection.id"),
        field(&sel, "sqlmw.connection.id")
    );
    cap.clear();

    // Prepared statements, pipelines and failures.
    let by_id = "SELECT secret FROM traced WHERE id = $1";
    let mut stmt = conn.prepare(by_id).await.unwrap();
    let none: Option<(String,)> = stmt.optional(&[RowValues::Int(99)]).await.unwrap();
    assert!(none.is_none());
    let p = cap.statement(by_id);
    assert_eq!(field(&p, "db.response.returned_rows"), "0", "[{k}]");
    cap.clear();
    let sets: Vec<Vec<RowValues>> = (0..3).map(|i| vec![RowValues::Int(i)]).collect();
    let refs: Vec<&[RowValues]> = sets.iter().map(Vec::as_slice).collect();
    conn.pipeline(by_id, &refs).await.unwrap();
    let pl = cap.statement(by_id);
    assert_eq!(field(&pl, "db.operation.batch.size"), "3", "[{k}]");
    assert_eq!(field(&pl, "db.response.returned_rows"), "1", "[{k}]");
    cap.clear();
    let bad = "SELECT no_such_column FROM traced";
    let err = conn.query(bad).select().await.unwrap_err();
    let b = cap.statement(bad);
    assert_eq!(field(&b, "otel.status_code"), "ERROR", "[{k}]");
    assert_eq!(
        field(&b, "error.type"),
        format!("{:?}", err.kind()),
        "[{k}]"
    );
}

/// Statements inside a transaction are children of its span, and savepoints nest; each scope
/// records how it ended.
async fn t_transaction_spans(db: &TestDb, cap: &Capture) {
    let k = db.kind.name();
    cap.clear();
    let mut conn = db.db.get_connection().await.unwrap();
    conn.execute_batch("CREATE TABLE tx_traced (id BIGINT PRIMARY KEY)")
        .await
        .unwrap();
    cap.clear();

    let mut tx = conn.begin().await.unwrap();
    tx.query("INSERT INTO tx_traced (id) VALUES (1)")
        .dml()
        .await
        .unwrap();
    let mut sp = tx.savepoint().await.unwrap();
    sp.query("INSERT INTO tx_traced (id) VALUES (2)")
        .dml()
        .await
        .unwrap();
    sp.rollback().await.unwrap();
    tx.query("SELECT id FROM tx_traced").select().await.unwrap();
    tx.commit().await.unwrap();

    let txs = cap.named("transaction");
    assert_eq!(txs.len(), 1, "[{k}] {txs:#?}");
    let t = &txs[0];
    assert_eq!(field(t, "sqlmw.outcome"), "commit", "[{k}]");
    assert!(t.closed, "[{k}] the transaction span ends at commit");
    let sps = cap.named("savepoint");
    assert_eq!(sps.len(), 1, "[{k}] {sps:#?}");
    assert_eq!(
        sps[0].parent,
        Some(t.id),
        "[{k}] the savepoint nests in the transaction"
    );
    assert_eq!(field(&sps[0], "sqlmw.outcome"), "rollback", "[{k}]");
    let first = cap.statement("INSERT INTO tx_traced (id) VALUES (1)");
    assert_eq!(first.parent, Some(t.id), "[{k}]");
    let inner = cap.statement("INSERT INTO tx_traced (id) VALUES (2)");
    assert_eq!(inner.parent, Some(sps[0].id), "[{k}]");
    let after = cap.statement("SELECT id FROM tx_traced");
    assert_eq!(
        after.parent,
        Some(t.id),
        "[{k}] after the savepoint ends, statements are the transaction's again"
    );
    assert_eq!(field(&after, "db.response.returned_rows"), "1", "[{k}]");
    cap.clear();

    // A dropped transaction says so, and the next statement has no parent.
    {
        let mut tx = conn.begin().await.unwrap();
        tx.query("INSERT INTO tx_traced (id) VALUES (3)")
            .dml()
            .await
            .unwrap();
    }
    conn.query("SELECT count(*) FROM tx_traced")
        .select()
        .await
        .unwrap();
    let txs = cap.named("transaction");
    assert_eq!(txs.len(), 1, "[{k}]");
    assert_eq!(field(&txs[0], "sqlmw.outcome"), "dropped", "[{k}]");
    let next = cap.statement("SELECT count(*) FROM tx_traced");
    assert_eq!(next.parent, None, "[{k}]");
}

/// A checkout has its own span with the wait; slow statements log a WARN event with the SQL
/// text and elapsed time, and quick ones do not; a pool with tracing off makes no span.
async fn t_checkout_slow_and_off(db: &TestDb, cap: &Capture) {
    let k = db.kind.name();
    cap.clear();
    let quick = "SELECT 1";
    {
        let pool = db
            .builder()
            .slow_statement_threshold(Duration::ZERO)
            .build()
            .await
            .unwrap();
        let mut c = pool.get_connection().await.unwrap();
        let checkouts = cap.named("checkout");
        assert_eq!(checkouts.len(), 1, "[{k}] {checkouts:#?}");
        field(&checkouts[0], "sqlmw.pool.wait_us")
            .parse::<u64>()
            .unwrap();
        let conn_id = field(&checkouts[0], "sqlmw.connection.id").to_owned();
        c.query(quick).select().await.unwrap();
        let s = cap.statement(quick);
        assert_eq!(field(&s, "sqlmw.connection.id"), conn_id, "[{k}]");
        let warns: Vec<_> = cap
            .events()
            .into_iter()
            .filter(|e| e.level == tracing::Level::WARN)
            .collect();
        assert_eq!(warns.len(), 1, "[{k}] {warns:#?}");
        let w = &warns[0];
        assert_eq!(w.target, "sql_middleware::slow", "[{k}]");
        assert_eq!(w.fields["db.query.text"], quick, "[{k}]");
        assert_eq!(w.fields["message"], "slow statement", "[{k}]");
        assert!(
            w.fields["elapsed_ms"].parse::<f64>().unwrap() >= 0.0,
            "[{k}]"
        );
        assert_eq!(
            w.span,
            Some(s.id),
            "[{k}] the event is inside the statement's span"
        );
    }
    cap.clear();
    {
        let pool = db
            .builder()
            .slow_statement_threshold(Duration::from_secs(30))
            .build()
            .await
            .unwrap();
        let mut c = pool.get_connection().await.unwrap();
        c.query(quick).select().await.unwrap();
        cap.statement(quick);
        assert!(
            cap.events().iter().all(|e| e.level != tracing::Level::WARN),
            "[{k}] a quick statement is not slow"
        );
    }
    cap.clear();
    {
        let pool = db.builder().tracing(false).build().await.unwrap();
        let mut c = pool.get_connection().await.unwrap();
        c.query(quick).select().await.unwrap();
        let mut tx = c.begin().await.unwrap();
        tx.query(quick).select().await.unwrap();
        tx.commit().await.unwrap();
        let spans = cap
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .spans
            .clone();
        assert!(spans.is_empty(), "[{k}] tracing(false): {spans:#?}");
    }
}

/// A stream has one statement span, made when the stream is, closed at its end or when it is
/// dropped, with the rows it handed out; inside a transaction it is the transaction's child.
async fn t_stream_spans(db: &TestDb, cap: &Capture) {
    use futures::TryStreamExt;
    let k = db.kind.name();
    cap.clear();
    let mut conn = db.db.get_connection().await.unwrap();
    conn.execute_batch("CREATE TABLE st_traced (id BIGINT PRIMARY KEY)")
        .await
        .unwrap();
    conn.execute_batch("INSERT INTO st_traced (id) VALUES (1), (2), (3)")
        .await
        .unwrap();
    cap.clear();

    let all = "SELECT id FROM st_traced ORDER BY id";
    let rows: Vec<(i64,)> = conn
        .query(all)
        .stream::<(i64,)>()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    let s = cap.statement(all);
    assert_eq!(field(&s, "db.operation.name"), "SELECT", "[{k}]");
    assert_eq!(field(&s, "db.response.returned_rows"), "3", "[{k}]");
    assert!(s.closed, "[{k}] the span ends with the stream");
    assert_eq!(s.parent, None, "[{k}]");
    match db.kind {
        // A stream's statement runs on a worker of the blocking pool.
        Kind::Sqlite => assert_eq!(field(&s, "sqlmw.sqlite.exec"), "offloaded", "[{k}]"),
        _ => assert!(!s.fields.contains_key("sqlmw.sqlite.exec"), "[{k}]"),
    }
    cap.clear();

    let part = "SELECT id FROM st_traced WHERE id > $1 ORDER BY id";
    {
        let mut stream = conn
            .query(part)
            .params(&[RowValues::Int(0)])
            .stream::<(i64,)>();
        assert_eq!(stream.try_next().await.unwrap(), Some((1,)));
    }
    let s = cap.statement(part);
    assert_eq!(
        field(&s, "db.response.returned_rows"),
        "1",
        "[{k}] dropped part-way: the rows handed out"
    );
    assert!(s.closed, "[{k}] the span ends when the stream is dropped");
    cap.clear();

    let bad = "SELECT no_such_column FROM st_traced";
    let r: Result<Vec<(i64,)>, _> = conn.query(bad).stream::<(i64,)>().try_collect().await;
    let err = r.unwrap_err();
    let b = cap.statement(bad);
    assert_eq!(field(&b, "otel.status_code"), "ERROR", "[{k}]");
    assert_eq!(
        field(&b, "error.type"),
        format!("{:?}", err.kind()),
        "[{k}]"
    );
    cap.clear();

    let mut tx = conn.begin().await.unwrap();
    let in_tx = "SELECT id FROM st_traced WHERE id < 3";
    let rows: Vec<(i64,)> = tx
        .query(in_tx)
        .stream::<(i64,)>()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    tx.commit().await.unwrap();
    let t = &cap.named("transaction")[0];
    let s = cap.statement(in_tx);
    assert_eq!(
        s.parent,
        Some(t.id),
        "[{k}] a stream in a transaction is its child"
    );
    assert_eq!(field(&s, "db.response.returned_rows"), "2", "[{k}]");
}

/// A retrying call is one `retrying_transaction` span with its attempt count and outcome; each
/// attempt is a child `attempt` span (numbered, with its outcome and error kind), the parent
/// of that attempt's `transaction` span.
async fn t_retry_spans(db: &TestDb, cap: &Capture) {
    use std::sync::atomic::{AtomicU32, Ordering};
    let k = db.kind.name();
    crate::retry::setup(db).await;
    let c = crate::retry::Contention::new(db).await;
    c.hold_lock(Some(Duration::from_millis(120))).await;
    cap.clear();
    let runs = Arc::new(AtomicU32::new(0));
    let (cc, rr) = (c.clone(), Arc::clone(&runs));
    c.pool
        .transaction(&crate::retry::policy(100), move |tx| {
            let (c, runs) = (cc.clone(), Arc::clone(&rr));
            Box::pin(async move {
                let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                c.prelude(tx).await?;
                c.step(tx, n == 1).await?;
                Ok::<_, SqlMiddlewareDbError>(())
            })
        })
        .await
        .unwrap_or_else(|e| panic!("[{k}] {e:?}"));
    let attempts = c.pool.stats().retry.attempts;
    c.finish().await;
    assert!(attempts >= 2, "[{k}] {attempts}");
    let calls = cap.named("retrying_transaction");
    assert_eq!(calls.len(), 1, "[{k}] {calls:#?}");
    let call = &calls[0];
    assert_eq!(
        field(call, "sqlmw.retry.attempts"),
        attempts.to_string(),
        "[{k}]"
    );
    assert_eq!(field(call, "sqlmw.outcome"), "commit", "[{k}]");
    assert_eq!(field(call, "db.system"), system(db.kind), "[{k}]");
    let tries = cap.named("attempt");
    assert_eq!(tries.len() as u64, attempts, "[{k}] {tries:#?}");
    for (i, a) in tries.iter().enumerate() {
        assert_eq!(
            a.parent,
            Some(call.id),
            "[{k}] attempts are the call's children"
        );
        assert_eq!(
            field(a, "sqlmw.retry.attempt"),
            (i + 1).to_string(),
            "[{k}]"
        );
        let last = i + 1 == tries.len();
        let want = if last { "commit" } else { "retry" };
        assert_eq!(field(a, "sqlmw.outcome"), want, "[{k}] {a:#?}");
    }
    let ids: Vec<u64> = tries.iter().map(|a| a.id).collect();
    let txs = cap.named("transaction");
    assert!(!txs.is_empty(), "[{k}]");
    for t in &txs {
        assert!(
            t.parent.is_some_and(|p| ids.contains(&p)),
            "[{k}] each transaction is an attempt's child: {t:#?}"
        );
    }
}

backend_tests! {
    let (_guard, cap) = Capture::install();
    async fn retry_spans(db) { t_retry_spans(&db, &cap).await }
    async fn statement_spans(db) { t_statement_spans(&db, &cap).await }
    async fn transaction_spans(db) { t_transaction_spans(&db, &cap).await }
    async fn checkout_slow_and_off(db) { t_checkout_slow_and_off(&db, &cap).await }
    async fn stream_spans(db) { t_stream_spans(&db, &cap).await }
}

/// Postgres with a URL listing two hosts, the first refusing connections: the statement spans
/// name the host the connection reached, not the URL's first.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_spans_name_the_host_reached() {
    use tokio_postgres::config::Host;
    let (_guard, cap) = Capture::install();
    let base: tokio_postgres::Config = crate::common::pg::base_url().parse().expect("test URL");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut cfg = tokio_postgres::Config::new();
    cfg.host("127.0.0.1").port(closed);
    let reached = match &base.get_hosts()[0] {
        Host::Tcp(h) => {
            cfg.host(h);
            h.clone()
        }
        #[cfg(unix)]
        Host::Unix(p) => {
            cfg.host_path(p);
            p.display().to_string()
        }
    };
    let port = base.get_ports().first().copied().unwrap_or(5432);
    cfg.port(port);
    if let Some(u) = base.get_user() {
        cfg.user(u);
    }
    if let Some(p) = base.get_password() {
        cfg.password(p);
    }
    if let Some(d) = base.get_dbname() {
        cfg.dbname(d);
    }
    let db = ConfigAndPool::postgres_config(cfg)
        .max_size(1)
        .build()
        .await
        .expect("pool");
    let mut c = db.get_connection().await.expect("the second host");
    let sql = "SELECT 1 AS reached";
    let _: (i32,) = c.query(sql).one().await.expect("select");
    let s = cap.statement(sql);
    assert_eq!(field(&s, "server.address"), reached, "{s:#?}");
    assert_eq!(field(&s, "server.port"), port.to_string(), "{s:#?}");
}
