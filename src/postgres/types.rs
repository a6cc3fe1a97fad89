//! Postgres types beyond tokio-postgres' built-in conversions, in the binary wire format:
//! `interval`, `money`, `inet`/`cidr`, `timetz`, text-like types (enums, `citext`), domains,
//! and one-dimensional arrays of the scalar types (`numeric` is read by `numeric.rs`).

use std::error::Error;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::{BufMut, BytesMut};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use postgres_types::{FromSql, Kind, Type};
use rust_decimal::Decimal;

use super::numeric::{PgNumeric, numeric_from_sql};
use crate::interval::Interval;
use crate::value::RowValues;

type BoxErr = Box<dyn Error + Sync + Send>;

fn err(msg: impl Into<String>) -> BoxErr {
    msg.into().into()
}

/// The type a value is written and read as: a domain's base type, recursively.
pub(crate) fn base(ty: &Type) -> &Type {
    match ty.kind() {
        Kind::Domain(inner) => base(inner),
        _ => ty,
    }
}

/// Types whose binary form is their UTF-8 text: enums, and extension types such as `citext`.
pub(crate) fn is_text_like(ty: &Type) -> bool {
    matches!(ty.kind(), Kind::Enum(_)) || ty.name() == "citext"
}

// ---- interval: microseconds (i64), days (i32), months (i32) ----

pub(crate) fn interval_from_sql(raw: &[u8]) -> Result<Interval, BoxErr> {
    let raw: [u8; 16] = raw
        .try_into()
        .map_err(|_| err("interval: expected 16 bytes"))?;
    let mut micros = [0u8; 8];
    micros.copy_from_slice(&raw[..8]);
    let mut days = [0u8; 4];
    days.copy_from_slice(&raw[8..12]);
    let mut months = [0u8; 4];
    months.copy_from_slice(&raw[12..]);
    Ok(Interval {
        microseconds: i64::from_be_bytes(micros),
        days: i32::from_be_bytes(days),
        months: i32::from_be_bytes(months),
    })
}

pub(crate) fn interval_to_sql(i: &Interval, out: &mut BytesMut) {
    out.put_i64(i.microseconds);
    out.put_i32(i.days);
    out.put_i32(i.months);
}

// ---- money: an i64 count of cents (the C locale's two fraction digits) ----

pub(crate) fn money_from_sql(raw: &[u8]) -> Result<Decimal, BoxErr> {
    let raw: [u8; 8] = raw.try_into().map_err(|_| err("money: expected 8 bytes"))?;
    Ok(Decimal::new(i64::from_be_bytes(raw), 2))
}

/// Cents of `d`, when it has at most two decimal places and fits.
pub(crate) fn money_cents(d: &Decimal) -> Option<i64> {
    use rust_decimal::prelude::ToPrimitive;
    let cents = d.checked_mul(Decimal::from(100))?;
    cents.fract().is_zero().then(|| cents.to_i64()).flatten()
}

// ---- inet / cidr: family, bits, is_cidr, length, address ----

const AF_INET: u8 = 2;
const AF_INET6: u8 = 3;

/// The server's text form: `inet` omits a full-length mask, `cidr` always shows it.
pub(crate) fn inet_from_sql(ty: &Type, raw: &[u8]) -> Result<String, BoxErr> {
    let [family, bits, _is_cidr, len, addr @ ..] = raw else {
        return Err(err("inet: too short"));
    };
    let ip = match (*family, *len as usize, addr.len()) {
        (AF_INET, 4, 4) => IpAddr::V4(Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3])),
        (AF_INET6, 16, 16) => {
            let mut b = [0u8; 16];
            b.copy_from_slice(addr);
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return Err(err("inet: unknown address family")),
    };
    let full = if ip.is_ipv4() { 32 } else { 128 };
    Ok(if *ty == Type::INET && *bits == full {
        ip.to_string()
    } else {
        format!("{ip}/{bits}")
    })
}

pub(crate) fn inet_to_sql(ty: &Type, s: &str, out: &mut BytesMut) -> Result<(), BoxErr> {
    let (addr, bits) = match s.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let ip: IpAddr = addr
        .trim()
        .parse()
        .map_err(|_| err("inet: not an address"))?;
    let full: u8 = if ip.is_ipv4() { 32 } else { 128 };
    let bits = match bits {
        Some(b) => b.trim().parse::<u8>().map_err(|_| err("inet: bad mask"))?,
        None => full,
    };
    if bits > full {
        return Err(err("inet: mask too long"));
    }
    let is_cidr = *ty == Type::CIDR;
    match ip {
        IpAddr::V4(v4) => {
            if is_cidr && u32::from(v4) & !mask32(bits) != 0 {
                return Err(err("cidr: bits set right of the mask"));
            }
            out.put_slice(&[AF_INET, bits, u8::from(is_cidr), 4]);
            out.put_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            if is_cidr && u128::from(v6) & !mask128(bits) != 0 {
                return Err(err("cidr: bits set right of the mask"));
            }
            out.put_slice(&[AF_INET6, bits, u8::from(is_cidr), 16]);
            out.put_slice(&v6.octets());
        }
    }
    Ok(())
}

fn mask32(bits: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0)
}

fn mask128(bits: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0)
}

// ---- timetz: microseconds since midnight (i64), zone in seconds west of UTC (i32) ----

pub(crate) fn timetz_from_sql(raw: &[u8]) -> Result<String, BoxErr> {
    let raw: [u8; 12] = raw
        .try_into()
        .map_err(|_| err("timetz: expected 12 bytes"))?;
    let mut micros = [0u8; 8];
    micros.copy_from_slice(&raw[..8]);
    let mut zone = [0u8; 4];
    zone.copy_from_slice(&raw[8..]);
    let micros = i64::from_be_bytes(micros);
    let east = -i32::from_be_bytes(zone);
    let secs = u32::try_from(micros / 1_000_000).map_err(|_| err("timetz: bad time"))?;
    let nanos = u32::try_from(micros % 1_000_000 * 1000).map_err(|_| err("timetz: bad time"))?;
    let t = NaiveTime::from_num_seconds_from_midnight_opt(secs, nanos)
        .ok_or_else(|| err("timetz: bad time"))?;
    let sign = if east < 0 { '-' } else { '+' };
    let east = east.unsigned_abs();
    let (h, m, s) = (east / 3600, east / 60 % 60, east % 60);
    // As the server prints it: the fraction without trailing zeros.
    let mut text = t.format("%H:%M:%S").to_string();
    let frac = micros % 1_000_000;
    if frac != 0 {
        text.push('.');
        text.push_str(format!("{frac:06}").trim_end_matches('0'));
    }
    text.push_str(&format!("{sign}{h:02}"));
    if m != 0 || s != 0 {
        text.push_str(&format!(":{m:02}"));
    }
    if s != 0 {
        text.push_str(&format!(":{s:02}"));
    }
    Ok(text)
}

pub(crate) fn timetz_to_sql(s: &str, out: &mut BytesMut) -> Result<(), BoxErr> {
    let at = s
        .rfind(['+', '-'])
        .ok_or_else(|| err("timetz: no zone offset"))?;
    let (time, zone) = s.split_at(at);
    let t = crate::value::parse_time(time.trim()).ok_or_else(|| err("timetz: bad time"))?;
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let mut parts = zone[1..].split(':');
    let mut next = || -> Result<i32, BoxErr> {
        parts.next().map_or(Ok(0), |p| {
            p.parse::<i32>().map_err(|_| err("timetz: bad zone"))
        })
    };
    let (h, m, sec) = (next()?, next()?, next()?);
    let east = sign * (h * 3600 + m * 60 + sec);
    let micros =
        i64::from(t.num_seconds_from_midnight()) * 1_000_000 + i64::from(t.nanosecond() / 1000);
    out.put_i64(micros);
    out.put_i32(-east);
    Ok(())
}

// ---- any supported scalar, and arrays of them ----

/// A value of any supported scalar type, decoded into its [`RowValues`] kind (used for array
/// elements).
pub(crate) struct PgScalar(pub(crate) RowValues);

impl<'a> FromSql<'a> for PgScalar {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxErr> {
        let ty = base(ty);
        let v = match *ty {
            Type::BOOL => RowValues::Bool(bool::from_sql(ty, raw)?),
            Type::INT2 => RowValues::Int(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => RowValues::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => RowValues::Int(i64::from_sql(ty, raw)?),
            Type::OID => RowValues::Int(u32::from_sql(ty, raw)?.into()),
            Type::FLOAT4 => RowValues::Float(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => RowValues::Float(f64::from_sql(ty, raw)?),
            Type::NUMERIC => match numeric_from_sql(raw)? {
                PgNumeric::Exact(d) => RowValues::Numeric(d),
                PgNumeric::Text(s) => RowValues::Text(s),
            },
            Type::MONEY => RowValues::Numeric(money_from_sql(raw)?),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                RowValues::Text(<&str>::from_sql(ty, raw)?.to_owned())
            }
            Type::BYTEA => RowValues::Blob(raw.to_vec()),
            Type::JSON | Type::JSONB => RowValues::JSON(serde_json::Value::from_sql(ty, raw)?),
            Type::DATE => RowValues::Date(NaiveDate::from_sql(ty, raw)?),
            Type::TIMESTAMP => RowValues::Timestamp(NaiveDateTime::from_sql(ty, raw)?),
            Type::TIMESTAMPTZ => RowValues::TimestampTz(chrono::DateTime::from_sql(ty, raw)?),
            Type::UUID => RowValues::Uuid(uuid::Uuid::from_sql(ty, raw)?),
            Type::TIME => RowValues::Time(NaiveTime::from_sql(ty, raw)?),
            Type::TIMETZ => RowValues::Text(timetz_from_sql(raw)?),
            Type::INTERVAL => RowValues::Interval(interval_from_sql(raw)?),
            Type::INET | Type::CIDR => RowValues::Text(inet_from_sql(ty, raw)?),
            ref t if is_text_like(t) => RowValues::Text(
                std::str::from_utf8(raw)
                    .map_err(|_| err("text: not UTF-8"))?
                    .to_owned(),
            ),
            ref t => match t.kind() {
                Kind::Array(_) => RowValues::Array(
                    Vec::<Option<PgScalar>>::from_sql(t, raw)?
                        .into_iter()
                        .map(|v| v.map_or(RowValues::Null, |v| v.0))
                        .collect(),
                ),
                _ => return Err(err(format!("type {} has no RowValues kind", t.name()))),
            },
        };
        Ok(PgScalar(v))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_round_trips_through_the_wire_form() {
        let i = Interval {
            months: -3,
            days: 40,
            microseconds: -1_500_000,
        };
        let mut b = BytesMut::new();
        interval_to_sql(&i, &mut b);
        assert_eq!(interval_from_sql(&b).unwrap(), i);
        assert!(interval_from_sql(&b[..15]).is_err());
    }

    #[test]
    fn inet_and_cidr_print_as_the_server_does() {
        for (ty, text) in [
            (Type::INET, "192.168.0.1"),
            (Type::INET, "10.1.2.3/8"),
            (Type::CIDR, "10.0.0.0/8"),
            (Type::INET, "2001:db8::1"),
            (Type::CIDR, "2001:db8::/32"),
        ] {
            let mut b = BytesMut::new();
            inet_to_sql(&ty, text, &mut b).unwrap();
            assert_eq!(inet_from_sql(&ty, &b).unwrap(), text);
        }
        let mut b = BytesMut::new();
        assert!(inet_to_sql(&Type::CIDR, "10.0.0.1/8", &mut b).is_err());
        assert!(inet_to_sql(&Type::INET, "10.0.0.1/33", &mut b).is_err());
        assert!(inet_to_sql(&Type::INET, "nope", &mut b).is_err());
    }

    #[test]
    fn timetz_round_trips() {
        for text in ["03:04:05+00", "23:59:59.5-05:30", "00:00:00+14"] {
            let mut b = BytesMut::new();
            timetz_to_sql(text, &mut b).unwrap();
            assert_eq!(timetz_from_sql(&b).unwrap(), text);
        }
    }

    #[test]
    fn money_takes_cents_only() {
        assert_eq!(money_cents(&"12.34".parse().unwrap()), Some(1234));
        assert_eq!(money_cents(&"12.345".parse().unwrap()), None);
        assert_eq!(
            money_from_sql(&1234_i64.to_be_bytes()).unwrap().to_string(),
            "12.34"
        );
    }
}
