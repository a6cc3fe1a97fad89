//! Checking an expected error: its kind, and whether the engine or the middleware raised it.

use std::fmt::Debug;

use sql_middleware::prelude::*;
use sql_middleware::{Backend, ErrorKind};

/// Who must have raised the error, as `driver_code()` and `backend()` tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Raised by the engine: a driver code must be present.
    Driver,
    /// Raised by the middleware before any engine call: `backend()` is `Middleware`, no code.
    Middleware,
    /// Either is acceptable (e.g. a parameter count checked by the middleware or the driver).
    Any,
}

/// The error of `r` if it has `kind` and comes from where `code` says; otherwise what is wrong.
pub fn check<T: Debug>(
    r: Result<T, SqlMiddlewareDbError>,
    kind: ErrorKind,
    code: Code,
) -> Result<SqlMiddlewareDbError, String> {
    let e = match r {
        Ok(v) => {
            let mut s = format!("{v:?}");
            s.truncate(200);
            return Err(format!("expected {kind:?}, got Ok({s})"));
        }
        Err(e) => e,
    };
    if e.kind() != kind {
        return Err(format!("expected {kind:?}, got {:?}: {e:?}", e.kind()));
    }
    match code {
        Code::Driver if e.driver_code().is_none() => Err(format!(
            "{kind:?} from the engine has no driver_code(): {e:?}"
        )),
        Code::Middleware if e.backend() != Backend::Middleware || e.driver_code().is_some() => Err(
            format!("expected a middleware error without engine involvement: {e:?}"),
        ),
        _ => Ok(e),
    }
}

/// [`check`] without the error.
pub fn verdict<T: Debug>(
    r: Result<T, SqlMiddlewareDbError>,
    kind: ErrorKind,
    code: Code,
) -> Result<(), String> {
    check(r, kind, code).map(drop)
}

/// `SELECT 1` on `conn` must still return 1.
pub async fn still_works(conn: &mut MiddlewarePoolConnection) -> Result<(), String> {
    match conn.query("SELECT 1").one::<(i64,)>().await {
        Ok((1,)) => Ok(()),
        other => Err(format!(
            "SELECT 1 on the same connection afterwards gave {other:?}"
        )),
    }
}
