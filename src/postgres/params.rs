//! Binding [`RowValues`] to the type the server declared for each parameter.
//!
//! A conversion happens only when it is lossless; otherwise binding fails with a
//! [`BindError`] that becomes [`crate::ErrorKind::ParameterType`], naming the parameter.

use std::error::Error;

use bytes::BytesMut;
use chrono::{NaiveDate, NaiveTime, Timelike};
use postgres_types::{IsNull, ToSql, Type, to_sql_checked};
use rust_decimal::Decimal;
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};

use super::error::BindError;
use super::types;
use crate::value::RowValues;

/// A borrowed [`RowValues`] bound to a Postgres parameter.
#[derive(Debug)]
pub(crate) struct PgParam<'a>(pub(crate) &'a RowValues);

type BoxErr = Box<dyn Error + Sync + Send>;

fn lossy(v: &RowValues, ty: &Type) -> BoxErr {
    // The kind and the target type only: a bound value never reaches an error message.
    Box::new(BindError(format!(
        "cannot bind a {} value to a parameter of type {} without loss; cast in SQL or pass another RowValues kind",
        v.kind_name(),
        ty.name()
    )))
}

fn is_midnight(t: &chrono::NaiveDateTime) -> bool {
    t.time() == NaiveTime::MIN
}

/// Postgres keeps times to the microsecond and has no leap seconds: a time of day with finer
/// digits, or on a leap second, would be stored as another value.
fn exact_micros(v: &RowValues, nanos: u32) -> Result<(), BoxErr> {
    if nanos >= 1_000_000_000 || nanos % 1_000 != 0 {
        return Err(Box::new(BindError(format!(
            "a {} value finer than a microsecond, or on a leap second, cannot be stored exactly (Postgres keeps microseconds); round it first (chrono's `trunc_subsecs(6)`)",
            v.kind_name()
        ))));
    }
    Ok(())
}

impl ToSql for PgParam<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxErr> {
        let v = self.0;
        // A domain is written as its base type.
        let ty = types::base(ty);
        let bad = || lossy(v, ty);
        match v {
            RowValues::Timestamp(t) => exact_micros(v, t.nanosecond())?,
            RowValues::TimestampTz(t) => exact_micros(v, t.nanosecond())?,
            RowValues::Time(t) => exact_micros(v, t.nanosecond())?,
            _ => {}
        }
        match v {
            RowValues::Null => Ok(IsNull::Yes),
            RowValues::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i).map_err(|_| bad())?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i).map_err(|_| bad())?.to_sql(ty, out),
                Type::OID => u32::try_from(*i).map_err(|_| bad())?.to_sql(ty, out),
                Type::FLOAT8 if i.unsigned_abs() <= 1 << 53 => (*i as f64).to_sql(ty, out),
                Type::FLOAT4 if i.unsigned_abs() <= 1 << 24 => (*i as f32).to_sql(ty, out),
                Type::NUMERIC => Decimal::from(*i).to_sql(ty, out),
                Type::MONEY => PgParam(&RowValues::Numeric(Decimal::from(*i))).to_sql(ty, out),
                Type::BOOL if *i == 0 || *i == 1 => (*i == 1).to_sql(ty, out),
                _ => Err(bad()),
            },
            RowValues::Float(f) => match *ty {
                Type::FLOAT8 => f.to_sql(ty, out),
                Type::FLOAT4 if !f.is_finite() || f64::from(*f as f32) == *f => {
                    (*f as f32).to_sql(ty, out)
                }
                Type::NUMERIC => {
                    let d = Decimal::from_f64_retain(*f).ok_or_else(bad)?;
                    if d.to_f64() == Some(*f) {
                        d.to_sql(ty, out)
                    } else {
                        Err(bad())
                    }
                }
                Type::INT8 | Type::INT4 | Type::INT2 if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                    PgParam(&RowValues::Int(*f as i64)).to_sql(ty, out)
                }
                _ => Err(bad()),
            },
            RowValues::Text(s) => match *ty {
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                    s.as_str().to_sql(ty, out)
                }
                Type::JSON | Type::JSONB => serde_json::from_str::<serde_json::Value>(s)
                    .map_err(|_| bad())?
                    .to_sql(ty, out),
                Type::UUID => uuid::Uuid::parse_str(s).map_err(|_| bad())?.to_sql(ty, out),
                // Digit for digit, however many digits: a `Decimal` would round past 28.
                Type::NUMERIC => {
                    super::numeric::text_to_sql(s, out).map_err(|_| bad())?;
                    Ok(IsNull::No)
                }
                Type::DATE => NaiveDate::parse_from_str(s, "%Y-%m-%d")
                    .map_err(|_| bad())?
                    .to_sql(ty, out),
                Type::TIMESTAMP => {
                    let t = crate::value::parse_timestamp(s).ok_or_else(bad)?;
                    exact_micros(v, t.nanosecond())?;
                    t.to_sql(ty, out)
                }
                Type::TIMESTAMPTZ => {
                    let t = crate::value::parse_timestamptz(s).ok_or_else(bad)?;
                    exact_micros(v, t.nanosecond())?;
                    t.to_sql(ty, out)
                }
                Type::TIME => {
                    let t = crate::value::parse_time(s).ok_or_else(bad)?;
                    exact_micros(v, t.nanosecond())?;
                    t.to_sql(ty, out)
                }
                Type::INTERVAL => {
                    let i: crate::Interval = s.parse().map_err(|_| bad())?;
                    types::interval_to_sql(&i, out);
                    Ok(IsNull::No)
                }
                Type::MONEY => {
                    let d = Decimal::from_str_exact(s).map_err(|_| bad())?;
                    PgParam(&RowValues::Numeric(d)).to_sql(ty, out)
                }
                Type::INET | Type::CIDR => {
                    types::inet_to_sql(ty, s, out).map_err(|_| bad())?;
                    Ok(IsNull::No)
                }
                Type::TIMETZ => {
                    types::timetz_to_sql(s, out).map_err(|_| bad())?;
                    Ok(IsNull::No)
                }
                ref t if types::is_text_like(t) => {
                    out.extend_from_slice(s.as_bytes());
                    Ok(IsNull::No)
                }
                _ => Err(bad()),
            },
            RowValues::Bool(b) => match *ty {
                Type::BOOL => b.to_sql(ty, out),
                Type::INT2 | Type::INT4 | Type::INT8 => {
                    PgParam(&RowValues::Int(i64::from(*b))).to_sql(ty, out)
                }
                _ => Err(bad()),
            },
            RowValues::Timestamp(t) => match *ty {
                Type::TIMESTAMP => t.to_sql(ty, out),
                Type::TIMESTAMPTZ => t.and_utc().to_sql(ty, out),
                Type::DATE if is_midnight(t) => t.date().to_sql(ty, out),
                _ => Err(bad()),
            },
            RowValues::TimestampTz(t) => match *ty {
                Type::TIMESTAMPTZ => t.to_sql(ty, out),
                Type::TIMESTAMP => t.naive_utc().to_sql(ty, out),
                Type::DATE if is_midnight(&t.naive_utc()) => t.date_naive().to_sql(ty, out),
                _ => Err(bad()),
            },
            RowValues::Date(d) => match *ty {
                Type::DATE => d.to_sql(ty, out),
                Type::TIMESTAMP => d.and_time(NaiveTime::MIN).to_sql(ty, out),
                Type::TIMESTAMPTZ => d.and_time(NaiveTime::MIN).and_utc().to_sql(ty, out),
                _ => Err(bad()),
            },
            RowValues::Uuid(u) => match *ty {
                Type::UUID => u.to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => u.hyphenated().to_string().to_sql(ty, out),
                _ => Err(bad()),
            },
            RowValues::Numeric(d) => match *ty {
                Type::NUMERIC => d.to_sql(ty, out),
                Type::MONEY => types::money_cents(d)
                    .ok_or_else(bad)?
                    .to_sql(&Type::INT8, out),
                Type::FLOAT8 => {
                    let f = d.to_f64().ok_or_else(bad)?;
                    if Decimal::from_f64(f) == Some(*d) {
                        f.to_sql(ty, out)
                    } else {
                        Err(bad())
                    }
                }
                Type::INT8 | Type::INT4 | Type::INT2 if d.fract().is_zero() => {
                    PgParam(&RowValues::Int(d.to_i64().ok_or_else(bad)?)).to_sql(ty, out)
                }
                Type::TEXT | Type::VARCHAR => d.to_string().to_sql(ty, out),
                _ => Err(bad()),
            },
            RowValues::Blob(b) => match *ty {
                Type::BYTEA => b.as_slice().to_sql(ty, out),
                _ => Err(bad()),
            },
            RowValues::JSON(j) => match *ty {
                Type::JSON | Type::JSONB => j.to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => j.to_string().to_sql(ty, out),
                _ => Err(bad()),
            },
            RowValues::Time(t) => match *ty {
                Type::TIME => t.to_sql(ty, out),
                _ => Err(bad()),
            },
            RowValues::Interval(i) => match *ty {
                Type::INTERVAL => {
                    types::interval_to_sql(i, out);
                    Ok(IsNull::No)
                }
                _ => Err(bad()),
            },
            RowValues::Array(items) => match ty.kind() {
                // Each element is bound to the array's element type by the rules above.
                postgres_types::Kind::Array(_) => {
                    let params: Vec<PgParam<'_>> = items.iter().map(PgParam).collect();
                    params.as_slice().to_sql(ty, out)
                }
                _ => Err(bad()),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}
