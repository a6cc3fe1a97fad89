//! Reading tokio-postgres rows by each column's declared [`Type`], never by its name.

use std::borrow::Cow;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use postgres_types::{FromSql, Kind, Type};
use tokio_postgres::Row;

use super::numeric::{PgNumeric, numeric_from_sql};
use super::types::{PgScalar, base, is_text_like};
use crate::decode::SqlRow;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::Columns;
use crate::value::{RowValues, ValueRef};

pub(crate) fn columns_of(stmt: &tokio_postgres::Statement) -> Columns {
    Columns::new(stmt.columns().iter().map(|c| c.name().to_owned()).collect())
}

fn get<'a, T: FromSql<'a>>(row: &'a Row, idx: usize, columns: &Columns) -> Result<Option<T>> {
    row.try_get::<_, Option<T>>(idx).map_err(|e| {
        SqlMiddlewareDbError::from_driver(
            crate::error::Backend::Postgres,
            ErrorKind::TypeMismatch,
            None,
            format!(
                "column `{}` could not be read: {e}",
                columns.name(idx).unwrap_or("?")
            ),
            e,
        )
    })
}

/// A borrowed view of column `idx` of `row`, chosen by the column's type.
pub(crate) fn value_ref<'a>(row: &'a Row, idx: usize, columns: &Columns) -> Result<ValueRef<'a>> {
    let ty = row.columns()[idx].type_();
    macro_rules! v {
        ($t:ty, $variant:ident) => {
            get::<$t>(row, idx, columns)?.map_or(ValueRef::Null, |x| ValueRef::$variant(x.into()))
        };
    }
    Ok(match *ty {
        Type::BOOL => v!(bool, Bool),
        Type::INT2 => v!(i16, Int),
        Type::INT4 => v!(i32, Int),
        Type::INT8 => v!(i64, Int),
        Type::OID => v!(u32, Int),
        Type::CHAR => v!(i8, Int),
        Type::FLOAT4 => v!(f32, Float),
        Type::FLOAT8 => v!(f64, Float),
        Type::NUMERIC => match get::<PgNumericSql>(row, idx, columns)? {
            None => ValueRef::Null,
            Some(PgNumericSql(PgNumeric::Exact(d))) => ValueRef::Numeric(d),
            Some(PgNumericSql(PgNumeric::Text(s))) => ValueRef::Text(Cow::Owned(s)),
        },
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            get::<&str>(row, idx, columns)?
                .map_or(ValueRef::Null, |x| ValueRef::Text(Cow::Borrowed(x)))
        }
        Type::BYTEA => v!(&[u8], Blob),
        Type::JSON | Type::JSONB => get::<serde_json::Value>(row, idx, columns)?
            .map_or(ValueRef::Null, |j| ValueRef::JSON(Cow::Owned(j))),
        Type::DATE => v!(NaiveDate, Date),
        Type::TIMESTAMP => v!(NaiveDateTime, Timestamp),
        Type::TIMESTAMPTZ => v!(DateTime<Utc>, TimestampTz),
        Type::UUID => v!(uuid::Uuid, Uuid),
        // A function returning `void` (`SELECT pg_notify(..)`, `pg_sleep`): no value.
        Type::VOID => ValueRef::Null,
        Type::TIME => v!(NaiveTime, Time),
        Type::INTERVAL | Type::MONEY | Type::INET | Type::CIDR | Type::TIMETZ => {
            owned(get::<PgScalar>(row, idx, columns)?, idx, columns)?
        }
        // Enums and `citext`: their wire form is their text.
        ref t if is_text_like(t) => get::<PgText<'_>>(row, idx, columns)?
            .map_or(ValueRef::Null, |x| ValueRef::Text(Cow::Borrowed(x.0))),
        ref t if matches!(t.kind(), Kind::Domain(_)) && *base(t) == Type::BYTEA => {
            get::<PgBytes<'_>>(row, idx, columns)?.map_or(ValueRef::Null, |x| ValueRef::Blob(x.0))
        }
        ref t if matches!(t.kind(), Kind::Array(_) | Kind::Domain(_)) => {
            owned(get::<PgScalar>(row, idx, columns)?, idx, columns)?
        }
        ref other => {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TypeMismatch,
                format!(
                    "column `{}` has type {} which has no RowValues kind; cast it in SQL (e.g. col::text)",
                    columns.name(idx).unwrap_or("?"),
                    other.name()
                ),
            ));
        }
    })
}

/// A `numeric`, read exactly (see [`super::numeric`]).
struct PgNumericSql(PgNumeric);

impl<'a> FromSql<'a> for PgNumericSql {
    fn from_sql(
        _: &Type,
        raw: &'a [u8],
    ) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        numeric_from_sql(raw).map(PgNumericSql)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

/// Text of any text-like type (enums, `citext`), borrowed from the row.
struct PgText<'a>(&'a str);

impl<'a> FromSql<'a> for PgText<'a> {
    fn from_sql(
        _: &Type,
        raw: &'a [u8],
    ) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(PgText(std::str::from_utf8(raw)?))
    }

    fn accepts(ty: &Type) -> bool {
        is_text_like(ty)
    }
}

/// The bytes of a domain over `bytea`, borrowed from the row.
struct PgBytes<'a>(&'a [u8]);

impl<'a> FromSql<'a> for PgBytes<'a> {
    fn from_sql(
        _: &Type,
        raw: &'a [u8],
    ) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(PgBytes(raw))
    }

    fn accepts(ty: &Type) -> bool {
        *base(ty) == Type::BYTEA
    }
}

/// A value decoded into an owned [`RowValues`], as a [`ValueRef`].
fn owned(v: Option<PgScalar>, idx: usize, columns: &Columns) -> Result<ValueRef<'static>> {
    let Some(PgScalar(v)) = v else {
        return Ok(ValueRef::Null);
    };
    Ok(match v {
        RowValues::Null => ValueRef::Null,
        RowValues::Int(i) => ValueRef::Int(i),
        RowValues::Float(f) => ValueRef::Float(f),
        RowValues::Text(s) => ValueRef::Text(Cow::Owned(s)),
        RowValues::Bool(b) => ValueRef::Bool(b),
        RowValues::Timestamp(t) => ValueRef::Timestamp(t),
        RowValues::TimestampTz(t) => ValueRef::TimestampTz(t),
        RowValues::Date(d) => ValueRef::Date(d),
        RowValues::Uuid(u) => ValueRef::Uuid(u),
        RowValues::Numeric(d) => ValueRef::Numeric(d),
        RowValues::JSON(j) => ValueRef::JSON(Cow::Owned(j)),
        RowValues::Time(t) => ValueRef::Time(t),
        RowValues::Interval(i) => ValueRef::Interval(i),
        RowValues::Array(a) => ValueRef::Array(Cow::Owned(a)),
        // Bytes are read borrowed (`PgBytes`), never through here.
        RowValues::Blob(_) => {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TypeMismatch,
                format!(
                    "column `{}`: bytes of an unexpected type",
                    columns.name(idx).unwrap_or("?")
                ),
            ));
        }
    })
}

/// A tokio-postgres row seen through [`SqlRow`].
pub(crate) struct PgRow<'r> {
    pub(crate) row: &'r Row,
    pub(crate) columns: &'r Columns,
}

impl SqlRow for PgRow<'_> {
    fn column_count(&self) -> usize {
        self.columns.len()
    }

    fn column_name(&self, idx: usize) -> Option<&str> {
        self.columns.name(idx)
    }

    fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.index_of(name)
    }

    fn value_ref(&self, idx: usize) -> Result<ValueRef<'_>> {
        if idx >= self.columns.len() {
            return Err(crate::decode::column_out_of_range(idx, self.columns.len()));
        }
        value_ref(self.row, idx, self.columns)
    }
}

/// Materialises rows into a [`crate::ResultSet`].
pub(crate) fn collect(rows: &[Row], columns: &Arc<Columns>) -> Result<crate::ResultSet> {
    let mut out = crate::ResultSet::with_capacity(Arc::clone(columns), rows.len());
    let n = columns.len();
    for row in rows {
        let mut values = Vec::with_capacity(n);
        for idx in 0..n {
            values.push(match value_ref(row, idx, columns)? {
                ValueRef::JSON(Cow::Owned(j)) => RowValues::JSON(j),
                ValueRef::Text(Cow::Owned(s)) => RowValues::Text(s),
                ValueRef::Array(Cow::Owned(a)) => RowValues::Array(a),
                other => other.to_owned_value(),
            });
        }
        out.push_values(values);
    }
    Ok(out)
}
