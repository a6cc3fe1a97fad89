//! The SQLite execution model: the one seam that decides whether a call runs on the calling task
//! or on tokio's blocking pool (see [`SqliteExecModel`](super::SqliteExecModel)).

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::busy::BusyScope;
use super::config::SqliteExecModel;
use super::conn::SqliteConn;
use crate::deadline::{nanos, now_nanos};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

thread_local! {
    /// The inline budget armed on this thread: the id of the [`ProgressState`] it belongs to
    /// (0: none), and the budget, as [`NOT_STARTED`] says. An inline call steps its statement
    /// on the thread that armed the budget, so the connection's progress handler finds it here;
    /// a statement stepped anywhere else (the blocking pool) has none, as before. Two words, so
    /// that arming and disarming move no more than two registers.
    static BUDGET: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// How [`BUDGET`] holds a budget, in one word on the [`now_nanos`] clock. With this flag set,
/// it is a read's budget of the remaining bits' nanoseconds, which starts at the progress
/// handler's first call, within the read's first [`PROGRESS_OPS`] steps (SQLite counts a cached
/// statement's steps across its runs, so now and then the call comes after a few). A read that
/// ends before it (a point lookup takes a few dozen steps) reads no clock: two clock reads were
/// about a quarter of what the middleware added to such a lookup. Without the flag, it is the
/// instant the budget ends.
const NOT_STARTED: u64 = 1 << 63;

/// A budget of `length` that starts at the progress handler's first call.
#[inline]
fn starts_later(length: Duration) -> u64 {
    NOT_STARTED | nanos(length).min(!NOT_STARTED)
}

/// A budget of `length_ns` nanoseconds from now (one clock read); one too long to end never
/// does.
#[inline]
fn ends_in(length_ns: u64) -> u64 {
    now_nanos().saturating_add(length_ns).min(!NOT_STARTED)
}

/// How an inline run keeps its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    /// Work that may write: its budget starts at once, so that the time it waits in the VFS (a
    /// commit's writes and fsync, a checkpoint) counts, and it is never interrupted.
    Write,
    /// A read whose budget starts at once, and which is interrupted and run again on the
    /// blocking pool past it: a statement's first inline run and every [`TIMED_EVERY`]th,
    /// so that a read spending its time inside one step, where the progress handler is never
    /// called (`count(*)` of a large table, an integrity check), is noticed and offloaded.
    TimedRead,
    /// A read whose budget starts at the progress handler's first call (see
    /// [`NOT_STARTED`]); interrupted as [`Run::TimedRead`] is.
    Read,
}

/// A statement's runs between two [`Run::TimedRead`]s: a read that became slow inside one step
/// runs inline at most this many times before it is noticed.
pub(crate) const TIMED_EVERY: u32 = 16;

impl Run {
    /// Whether the work may be interrupted and run again elsewhere (it only reads).
    fn restartable(self) -> bool {
        self != Run::Write
    }
}

/// Shared with the connection's progress handler: whether the statement running inline may be
/// interrupted for its budget (the budget itself is armed on the calling thread, see
/// `BUDGET`), and the time limit of the call (`stop`), on the `now_nanos` clock.
#[derive(Debug)]
pub(crate) struct ProgressState {
    /// Which connection's state this is, for the budget armed on a thread.
    id: u64,
    /// [`MAY_INTERRUPT`], [`EXCEEDED`] and [`INTERRUPTED`]: set by [`ProgressState::arm`] and
    /// the progress handler, on the thread that runs the statement inline, and read by
    /// [`ProgressState::disarm`] on that thread.
    flags: AtomicU8,
    pub(super) stop: AtomicU64,
    pub(super) stopped: AtomicBool,
}

/// SQLite calls the handler every this many virtual-machine steps.
const PROGRESS_OPS: i32 = 1000;

/// The statement running inline may be interrupted for its budget (it only reads).
const MAY_INTERRUPT: u8 = 1;
/// It ran past its budget.
const EXCEEDED: u8 = 2;
/// It was interrupted for it.
const INTERRUPTED: u8 = 4;

/// An inline budget armed by [`ProgressState::arm`], for [`ProgressState::disarm`].
pub(crate) struct Armed {
    /// The budget this thread had armed before (a statement run inside another's user code).
    prior: (u64, u64),
}

impl ProgressState {
    pub(crate) fn install(conn: &Connection) -> Result<Arc<Self>> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let state = Arc::new(ProgressState {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            flags: AtomicU8::new(0),
            stop: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        state.reinstall(conn)?;
        Ok(state)
    }

    /// Installs the handler of this state on `conn` again (raw access may have replaced it).
    pub(crate) fn reinstall(self: &Arc<Self>, conn: &Connection) -> Result<()> {
        let st = Arc::clone(self);
        let interrupt = conn.get_interrupt_handle();
        conn.progress_handler(
            PROGRESS_OPS,
            Some(move || {
                let stop = st.stop.load(Ordering::Relaxed);
                let (id, budget) = BUDGET.with(Cell::get);
                if stop != 0 && now_nanos() >= stop {
                    // The call's time limit passed: stop the statement, read or write. Not by
                    // returning `true`: SQLite calls the handler once more after a statement
                    // has halted (and, in autocommit mode, committed), and would then report
                    // SQLITE_INTERRUPT for a change that was made. An interrupt stops the
                    // statement at its next step instead, and a statement that has halted
                    // stays done (its success is returned; the flag clears as the next
                    // statement starts).
                    st.stopped.store(true, Ordering::Relaxed);
                    interrupt.interrupt();
                    return false;
                }
                if id != st.id {
                    return false;
                }
                if budget & NOT_STARTED != 0 {
                    // A read's first steps are done: its budget runs from now.
                    BUDGET.with(|b| b.set((id, ends_in(budget & !NOT_STARTED))));
                    return false;
                }
                if now_nanos() < budget {
                    return false;
                }
                let flags = st.flags.load(Ordering::Relaxed);
                let stops = flags & MAY_INTERRUPT != 0;
                let interrupted = if stops { INTERRUPTED } else { 0 };
                st.flags
                    .store(flags | EXCEEDED | interrupted, Ordering::Relaxed);
                stops
            }),
        )
        .map_err(super::error::map_err)
    }

    /// Arms the inline budget of work about to run inline on this thread, as `run` says.
    #[inline]
    fn arm(&self, budget: Duration, run: Run) -> Armed {
        let flags = if run.restartable() { MAY_INTERRUPT } else { 0 };
        self.flags.store(flags, Ordering::Relaxed);
        let mine = if run == Run::Read {
            starts_later(budget)
        } else {
            ends_in(nanos(budget))
        };
        let prior = BUDGET.with(|b| b.replace((self.id, mine)));
        Armed { prior }
    }

    /// Returns (ran past the budget, was interrupted for it). When the budget had started, the
    /// clock is read again here: the progress handler never runs while SQLite waits in the VFS
    /// (a COMMIT's fsync). A read that finished within its first steps reads no clock.
    #[inline]
    fn disarm(&self, armed: Armed) -> (bool, bool) {
        let (_, mine) = BUDGET.with(|b| b.replace(armed.prior));
        let late = mine & NOT_STARTED == 0 && now_nanos() > mine;
        let flags = self.flags.load(Ordering::Relaxed);
        (late || flags & EXCEEDED != 0, flags & INTERRUPTED != 0)
    }
}

/// Interrupts the statement still running on the blocking pool when its future is dropped.
struct InterruptOnDrop(Option<Arc<rusqlite::InterruptHandle>>);

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.interrupt();
        }
    }
}

pub(super) fn panicked(what: &str) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::Other,
        format!("{what} panicked; the connection is discarded"),
    )
}

enum Inline<R> {
    Done(Result<R>),
    Restart,
}

impl SqliteConn {
    /// Runs one unit of work under the configured model (see [`Self::dispatch_within`]),
    /// within `deadline` when the call has one.
    pub(crate) async fn dispatch<R, I, O, MO>(
        &mut self,
        deadline: Option<Instant>,
        run: Run,
        syncs: bool,
        slow: Option<&AtomicBool>,
        inline: I,
        offload: MO,
    ) -> Result<R>
    where
        R: Send + 'static,
        I: FnOnce(&mut Connection) -> Result<R>,
        MO: FnOnce() -> O,
        O: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
    {
        self.start_limit(deadline)?;
        let r = self
            .dispatch_within(run, syncs, slow, inline, offload)
            .await;
        self.end_limit(deadline, r)
    }

    /// Runs raw work (see [`Self::blocking_within`]), within `deadline` when the call has one.
    pub(crate) async fn dispatch_blocking<R, F>(
        &mut self,
        deadline: Option<Instant>,
        f: F,
    ) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
    {
        self.start_limit(deadline)?;
        let r = self.blocking_within(f).await;
        self.end_limit(deadline, r)
    }

    /// Runs one unit of work under the configured model.
    ///
    /// `inline` borrows the caller's data; `offload` builds the owned `'static` twin only when the
    /// work has to move to the blocking pool. `slow` remembers, per statement, that it ran long.
    /// `syncs` says the work commits to a database whose commits wait for an fsync: its time is
    /// the disk's, unknowable in advance and often many milliseconds, so under the adaptive
    /// model it goes to the blocking pool without an inline attempt.
    async fn dispatch_within<R, I, O, MO>(
        &mut self,
        run: Run,
        syncs: bool,
        slow: Option<&AtomicBool>,
        inline: I,
        offload: MO,
    ) -> Result<R>
    where
        R: Send + 'static,
        I: FnOnce(&mut Connection) -> Result<R>,
        MO: FnOnce() -> O,
        O: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
    {
        if let Some(r) = self.inline_first(run, syncs, slow, inline)? {
            return r;
        }
        self.offload_after(slow, offload).await
    }

    /// The first half of [`Self::dispatch_within`], which never waits: runs the work inline
    /// when the model says so and returns its result, or returns `None` when the work has to go
    /// to the blocking pool ([`Self::offload_after`]); counted either way. A caller without a
    /// time limit may call the halves itself, and skips a future on the usual path.
    pub(super) fn inline_first<R>(
        &mut self,
        run: Run,
        syncs: bool,
        slow: Option<&AtomicBool>,
        inline: impl FnOnce(&mut Connection) -> Result<R>,
    ) -> Result<Option<Result<R>>> {
        match self.opts.exec_model {
            SqliteExecModel::Inline => {
                self.exec.inline += 1;
                return Ok(Some(self.inline_blocking(inline)));
            }
            SqliteExecModel::Offload => self.exec.offloaded_by_policy += 1,
            SqliteExecModel::Adaptive { inline_budget } => {
                if !syncs && !slow.is_some_and(|s| s.load(Ordering::Relaxed)) {
                    match self.inline_budgeted(inline_budget, run, slow, inline)? {
                        Inline::Done(r) => {
                            self.exec.inline += 1;
                            return Ok(Some(r));
                        }
                        Inline::Restart => self.exec.rerun_after_interrupt += 1,
                    }
                } else {
                    self.exec.offloaded_by_policy += 1;
                }
            }
        }
        Ok(None)
    }

    /// The second half of [`Self::dispatch_within`]: the work on the blocking pool.
    pub(super) async fn offload_after<R, O, MO>(
        &mut self,
        slow: Option<&AtomicBool>,
        offload: MO,
    ) -> Result<R>
    where
        R: Send + 'static,
        MO: FnOnce() -> O,
        O: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
    {
        let started = Instant::now();
        let r = self.offload(offload()).await?;
        if let (Some(s), SqliteExecModel::Adaptive { inline_budget }) = (slow, self.opts.exec_model)
        {
            // A statement that has become quick again goes back inline.
            if started.elapsed() < inline_budget / 2 {
                s.store(false, Ordering::Relaxed);
            }
        }
        r
    }

    /// Runs raw work: on the blocking pool unless the model is `Inline`.
    async fn blocking_within<R, F>(&mut self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
    {
        match self.opts.exec_model {
            SqliteExecModel::Inline => {
                self.exec.inline += 1;
                self.inline_blocking(f)
            }
            _ => {
                self.exec.offloaded_by_policy += 1;
                self.offload(f).await?
            }
        }
    }

    fn inline_blocking<R>(&mut self, f: impl FnOnce(&mut Connection) -> Result<R>) -> Result<R> {
        let busy = self.busy_ms();
        let conn = self.conn_mut()?;
        let _scope = BusyScope::set(busy);
        match catch_unwind(AssertUnwindSafe(|| f(conn))) {
            Ok(r) => r,
            Err(_) => {
                // Release the write lock now; the connection is discarded when returned.
                self.rollback_if_open();
                self.broken = true;
                Err(panicked("the SQLite call"))
            }
        }
    }

    fn inline_budgeted<R>(
        &mut self,
        budget: Duration,
        run: Run,
        slow: Option<&AtomicBool>,
        f: impl FnOnce(&mut Connection) -> Result<R>,
    ) -> Result<Inline<R>> {
        if self.broken {
            return Err(broken());
        }
        // The fields apart: the progress state is borrowed beside the connection, not cloned.
        let progress = &*self.progress;
        let conn = self.conn.as_mut().ok_or_else(broken)?;
        let was_autocommit = conn.is_autocommit();
        // Only read-only work may be interrupted and re-run: SQLite consults the progress
        // handler once more after a statement halts, so an "interrupted" write may already
        // have committed (in autocommit mode) and would run twice.
        let armed = progress.arm(budget, run);
        let r = {
            let _scope = BusyScope::set(0);
            catch_unwind(AssertUnwindSafe(|| f(conn)))
        };
        // Disarmed before anything else, panic or not: a deadline left armed would interrupt
        // the next borrower's statement or script.
        let (exceeded, interrupted) = progress.disarm(armed);
        let Ok(r) = r else {
            // User code (a `FromRow`) panicked mid-statement: release the write lock now; the
            // connection is discarded when returned.
            self.rollback_if_open();
            self.broken = true;
            return Ok(Inline::Done(Err(panicked(
                "user code run inside the statement (a FromRow or FromValue)",
            ))));
        };
        if let Err(e) = &r {
            let tx_intact = was_autocommit || !conn.is_autocommit();
            if interrupted && e.kind() == ErrorKind::Interrupted && tx_intact {
                if let Some(s) = slow {
                    s.store(true, Ordering::Relaxed);
                }
                return Ok(Inline::Restart);
            }
            // A lock the inline attempt could not wait for; or one SQLite refused at once
            // outside any transaction (a race with another connection's checkpoint or
            // recovery), which passes: both are tried again on the blocking pool.
            let refused_outside_tx = e.kind() == ErrorKind::SerializationFailure
                && e.driver_code() == Some("5")
                && was_autocommit
                && conn.is_autocommit();
            if (e.kind() == ErrorKind::Busy && tx_intact || refused_outside_tx)
                && self.busy_ms() > 0
            {
                return Ok(Inline::Restart);
            }
        }
        if let (true, Some(s)) = (exceeded, slow) {
            s.store(true, Ordering::Relaxed);
        }
        Ok(Inline::Done(r))
    }

    /// Moves the connection to tokio's blocking pool for `f`, and back.
    ///
    /// If the future is dropped meanwhile, the running statement is interrupted and the
    /// connection comes back through `self.returning`, as a dropped stream's does: the
    /// connection's next operation takes it back first (`settle_stream`), rolling back a
    /// transaction abandoned meanwhile. Dropping never waits for the worker.
    async fn offload<R, F>(&mut self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> R + Send + 'static,
    {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        if self.broken {
            return Err(broken());
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            let busy = self.busy_ms();
            let conn = self.conn_mut()?;
            let _scope = BusyScope::set(busy);
            return Ok(f(conn));
        };
        let busy = self.busy_ms();
        let mut conn = self.conn.take().ok_or_else(broken)?;
        let (result_tx, result_rx) = tokio::sync::oneshot::channel();
        let (conn_tx, conn_rx) = tokio::sync::oneshot::channel();
        // Kept here while the work runs: if this future is dropped, the connection's next
        // operation waits for it instead of losing it.
        self.returning = Some(conn_rx);
        let mut guard = InterruptOnDrop(Some(Arc::clone(&self.interrupt)));
        handle.spawn_blocking(move || {
            let r = {
                let _scope = BusyScope::set(busy);
                catch_unwind(AssertUnwindSafe(|| f(&mut conn)))
            };
            let panicked = r.is_err();
            if panicked {
                // Release the write lock now; the connection is discarded when returned.
                if !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
            }
            let _ = result_tx.send(r.ok());
            let _ = conn_tx.send((conn, panicked));
        });
        let r = result_rx.await;
        guard.0 = None;
        // The worker sends the connection right after the result. Awaited in place, so that a
        // drop here too leaves it to the next operation.
        let back = match self.returning.as_mut() {
            Some(rx) => rx.await,
            None => return Err(broken()),
        };
        self.returning = None;
        match back {
            Ok((conn, lost)) => {
                self.conn = Some(conn);
                self.broken |= lost;
            }
            Err(_) => self.broken = true,
        }
        match r {
            Ok(Some(r)) if !self.broken => Ok(r),
            Ok(_) => Err(panicked("the SQLite call")),
            Err(_) => {
                self.broken = true;
                Err(SqlMiddlewareDbError::new(
                    ErrorKind::Other,
                    "the blocking SQLite task ended before it returned the connection",
                ))
            }
        }
    }
}

pub(crate) fn broken() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::ConnectionLost,
        "this SQLite connection was lost by a cancelled or panicked call; check out a new one",
    )
}

/// What [`record_exec`] compares a connection's execution counts with: the counts as the
/// statement started, with spans; nothing without them, so that a statement's future carries
/// no copy of the counts it would never read.
#[cfg(feature = "tracing")]
pub(crate) type ExecMark = crate::stats::ExecStats;
/// See the `tracing` build's `ExecMark`.
#[cfg(not(feature = "tracing"))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExecMark;

impl SqliteConn {
    /// The execution counts as a statement starts, for [`record_exec`].
    #[cfg(feature = "tracing")]
    #[inline(always)]
    pub(super) fn exec_mark(&self) -> ExecMark {
        self.exec
    }

    /// Without spans there is nothing to compare with.
    #[cfg(not(feature = "tracing"))]
    #[inline(always)]
    pub(super) fn exec_mark(&self) -> ExecMark {
        ExecMark
    }
}

/// Records on the current statement's span how SQLite ran it (`sqlmw.sqlite.exec`), from the
/// connection's execution counts before ([`SqliteConn::exec_mark`]) and after.
#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn record_exec(before: ExecMark, after: crate::stats::ExecStats) {
    if tracing::level_enabled!(tracing::Level::INFO) {
        let how = if after.rerun_after_interrupt > before.rerun_after_interrupt {
            "rerun"
        } else if after.offloaded_by_policy > before.offloaded_by_policy {
            "offloaded"
        } else if after.inline > before.inline {
            "inline"
        } else {
            return;
        };
        tracing::Span::current().record("sqlmw.sqlite.exec", how);
    }
}

/// Without spans there is nothing to record.
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn record_exec(_: ExecMark, _: crate::stats::ExecStats) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `sql` on `conn` under a budget of `budget`, armed as `run` says, and returns (ran
    /// past the budget, was interrupted for it).
    fn run_armed(
        state: &ProgressState,
        conn: &Connection,
        sql: &str,
        budget: Duration,
        run: Run,
    ) -> (bool, bool) {
        let armed = state.arm(budget, run);
        // A statement stopped by the handler fails; only the flags matter here.
        let _ = conn.query_row(sql, [], |r| r.get::<_, i64>(0));
        state.disarm(armed)
    }

    /// 20,000 rows: far more than one progress interval of steps.
    const LONG_READ: &str = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
        WHERE i < 20000) SELECT count(*) FROM n";

    #[test]
    fn a_reads_budget_starts_after_its_first_steps_unless_the_run_is_timed() {
        let conn = Connection::open_in_memory().unwrap();
        let state = ProgressState::install(&conn).unwrap();
        let tiny = Duration::from_nanos(1);
        let roomy = Duration::from_secs(60);
        // (statement, budget, how it runs, (ran past the budget, was interrupted for it))
        let cases = [
            // A read that ends within its first steps never starts its budget: not late,
            // however small the budget. A long read starts it, and is interrupted past it.
            ("SELECT 1", tiny, Run::Read, (false, false)),
            (LONG_READ, tiny, Run::Read, (true, true)),
            // A timed read counts from its start: the short one is late at once (as a read
            // that spends its time inside one step would be).
            ("SELECT 1", tiny, Run::TimedRead, (true, false)),
            (LONG_READ, tiny, Run::TimedRead, (true, true)),
            // Work that may write counts from its start too, and is never interrupted.
            ("SELECT 1", tiny, Run::Write, (true, false)),
            (LONG_READ, tiny, Run::Write, (true, false)),
            // A roomy budget: nothing is late.
            (LONG_READ, roomy, Run::Read, (false, false)),
            (LONG_READ, roomy, Run::TimedRead, (false, false)),
            (LONG_READ, roomy, Run::Write, (false, false)),
        ];
        for (sql, budget, run, want) in cases {
            let got = run_armed(&state, &conn, sql, budget, run);
            assert_eq!(got, want, "{sql} under {budget:?} as {run:?}");
        }
        // Disarmed, the thread holds no budget, and a statement stepped now is never stopped.
        assert_eq!(BUDGET.with(Cell::get).0, 0);
        let n: i64 = conn.query_row(LONG_READ, [], |r| r.get(0)).unwrap();
        assert_eq!(n, 20000);
    }
}
