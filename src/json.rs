//! [`Json<T>`]: any serde type as a JSON parameter and a JSON result, the same on every backend.

use serde_core::Serialize;
use serde_core::de::DeserializeOwned;

use crate::decode::FromValue;
use crate::error::{DecodeError, Result};
use crate::param::{ToValue, param_error};
use crate::value::{RowValues, ValueRef};

/// A value bound and read as a JSON document: `Json(&order)` as a parameter, `Json<Order>` as
/// a decoded column. `T` is any `serde` type.
///
/// On Postgres the document goes to a `json`/`jsonb` parameter (or a text one, as its text). On
/// SQLite and Turso it is stored as JSON text; reading it back works from a column declared
/// `JSON`/`JSONB` and from any text column, so `SELECT doc` and `SELECT json_extract(..)` both
/// decode.
///
/// ```
/// # #[cfg(all(feature = "serde", feature = "sqlite"))]
/// # mod demo {
/// use serde::{Deserialize, Serialize};
/// use sql_middleware::prelude::*;
///
/// #[derive(Serialize, Deserialize, PartialEq, Debug)]
/// struct Prefs { theme: String, size: u8 }
///
/// # pub async fn run() -> Result<(), SqlMiddlewareDbError> {
/// # let db = ConfigAndPool::sqlite_memory().build().await?;
/// # let mut conn = db.get_connection().await?;
/// conn.execute_batch("CREATE TABLE users (id BIGINT, prefs JSON)").await?;
/// let prefs = Prefs { theme: "dark".into(), size: 12 };
/// conn.query("INSERT INTO users (id, prefs) VALUES ($1, $2)")
///     .params(&sql_middleware::params![1_i64, Json(&prefs)]?)
///     .dml()
///     .await?;
/// let (Json(back),): (Json<Prefs>,) =
///     conn.query("SELECT prefs FROM users WHERE id = 1").one().await?;
/// assert_eq!(back, prefs);
/// # Ok(()) }
/// # }
/// # #[cfg(all(feature = "serde", feature = "sqlite"))]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), sql_middleware::SqlMiddlewareDbError> { demo::run().await }
/// # #[cfg(not(all(feature = "serde", feature = "sqlite")))]
/// # fn main() {}
/// ```
///
/// A value that does not serialise (a map with non-string keys) is an
/// [`ErrorKind::ParameterType`](crate::ErrorKind::ParameterType) error; a document of another
/// shape than `T` is a [`ErrorKind::TypeMismatch`](crate::ErrorKind::TypeMismatch) naming the
/// column. Neither message quotes the document.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Json<T>(pub T);

impl<T> Json<T> {
    /// The wrapped value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Json<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Serialize> ToValue for Json<T> {
    fn to_value(&self) -> Result<RowValues> {
        serde_json::to_value(&self.0)
            .map(RowValues::JSON)
            .map_err(|_| param_error("Json<_>", "could not be serialised as JSON"))
    }
}

impl<T: DeserializeOwned> FromValue for Json<T> {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        let shape = || DecodeError::new("Json<T>", "JSON of another shape");
        match v {
            ValueRef::JSON(doc) => T::deserialize(doc.as_ref()).map(Json).map_err(|_| shape()),
            ValueRef::Text(text) => serde_json::from_str(&text).map(Json).map_err(|_| {
                if serde_json::from_str::<serde_core::de::IgnoredAny>(&text).is_ok() {
                    shape()
                } else {
                    DecodeError::new("Json<T>", "Text that is not JSON")
                }
            }),
            ValueRef::Blob(bytes) => serde_json::from_slice(bytes)
                .map(Json)
                .map_err(|_| DecodeError::new("Json<T>", "Blob that is not JSON")),
            // Numbers and booleans are JSON documents too (SQLite stores a JSON number as one).
            ValueRef::Int(i) => T::deserialize(serde_json::Value::from(i))
                .map(Json)
                .map_err(|_| shape()),
            ValueRef::Float(f) => T::deserialize(serde_json::Value::from(f))
                .map(Json)
                .map_err(|_| shape()),
            ValueRef::Bool(b) => T::deserialize(serde_json::Value::from(b))
                .map(Json)
                .map_err(|_| shape()),
            other => Err(DecodeError::new("Json<T>", other.kind_name())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use std::collections::BTreeMap;

    /// A serde type without the derive feature: a map of lists.
    type Doc = BTreeMap<String, Vec<i64>>;

    fn doc() -> Doc {
        BTreeMap::from([("a".to_owned(), vec![1, 2]), ("b".to_owned(), vec![])])
    }

    #[test]
    fn round_trips_through_each_stored_form() {
        let RowValues::JSON(v) = Json(&doc()).to_value().unwrap() else {
            panic!("not JSON")
        };
        let back = Json::<Doc>::from_value(ValueRef::JSON(Cow::Borrowed(&v))).unwrap();
        assert_eq!(back.0, doc());
        let text = v.to_string();
        let back = Json::<Doc>::from_value(ValueRef::Text(Cow::Borrowed(&text))).unwrap();
        assert_eq!(back.into_inner(), doc());
        assert_eq!(*Json::<i64>::from_value(ValueRef::Int(5)).unwrap(), 5);
        assert_eq!(
            Json::<Option<i64>>::from_value(ValueRef::Null)
                .unwrap_err()
                .found,
            "NULL"
        );
    }

    #[test]
    fn errors_are_typed_and_quote_nothing() {
        let bad = ValueRef::Text(Cow::Borrowed("{\"a\": \"secret\"}"));
        let e = Json::<Doc>::from_value(bad).unwrap_err();
        assert_eq!(e.found, "JSON of another shape");
        let e = Json::<Doc>::from_value(ValueRef::Text(Cow::Borrowed("secret"))).unwrap_err();
        assert_eq!(e.found, "Text that is not JSON");
        let keys = BTreeMap::from([((1, 2), "secret")]);
        let e = Json(&keys).to_value().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::ParameterType);
        assert!(!e.message().contains("secret"), "{e}");
    }
}
