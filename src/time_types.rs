//! The `time` crate's dates and times as parameters and results (feature `time`), beside
//! chrono's: `Date`, `Time`, `PrimitiveDateTime` and `OffsetDateTime` bind and decode exactly as
//! chrono's `NaiveDate`, `NaiveTime`, `NaiveDateTime` and `DateTime<Utc>` do.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time};

use crate::decode::FromValue;
use crate::error::{DecodeError, Result};
use crate::param::{ToValue, param_error};
use crate::value::{RowValues, ValueRef};

fn date_to_chrono(d: Date) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(d.year(), u32::from(u8::from(d.month())), u32::from(d.day()))
}

fn time_to_chrono(t: Time) -> Option<NaiveTime> {
    NaiveTime::from_hms_nano_opt(
        u32::from(t.hour()),
        u32::from(t.minute()),
        u32::from(t.second()),
        t.nanosecond(),
    )
}

fn date_from_chrono(d: NaiveDate) -> Option<Date> {
    let month = Month::try_from(u8::try_from(d.month()).ok()?).ok()?;
    Date::from_calendar_date(d.year(), month, u8::try_from(d.day()).ok()?).ok()
}

fn time_from_chrono(t: NaiveTime) -> Option<Time> {
    // chrono writes a leap second as a nanosecond count past 1e9; `time` has none.
    Time::from_hms_nano(
        u8::try_from(t.hour()).ok()?,
        u8::try_from(t.minute()).ok()?,
        u8::try_from(t.second()).ok()?,
        t.nanosecond(),
    )
    .ok()
}

fn instant_to_chrono(t: OffsetDateTime) -> Option<DateTime<Utc>> {
    let nanos = t.unix_timestamp_nanos();
    let secs = i64::try_from(nanos.div_euclid(1_000_000_000)).ok()?;
    let sub = u32::try_from(nanos.rem_euclid(1_000_000_000)).ok()?;
    DateTime::from_timestamp(secs, sub)
}

fn instant_from_chrono(t: DateTime<Utc>) -> Option<OffsetDateTime> {
    let nanos = i128::from(t.timestamp()) * 1_000_000_000 + i128::from(t.timestamp_subsec_nanos());
    OffsetDateTime::from_unix_timestamp_nanos(nanos).ok()
}

const OUT_OF_RANGE: &str = "is outside the range of the crate's date and time kinds";

impl ToValue for Date {
    fn to_value(&self) -> Result<RowValues> {
        date_to_chrono(*self)
            .map(RowValues::Date)
            .ok_or_else(|| param_error("time::Date", OUT_OF_RANGE))
    }
}

impl ToValue for Time {
    fn to_value(&self) -> Result<RowValues> {
        time_to_chrono(*self)
            .map(RowValues::Time)
            .ok_or_else(|| param_error("time::Time", OUT_OF_RANGE))
    }
}

impl ToValue for PrimitiveDateTime {
    fn to_value(&self) -> Result<RowValues> {
        date_to_chrono(self.date())
            .zip(time_to_chrono(self.time()))
            .map(|(d, t)| RowValues::Timestamp(NaiveDateTime::new(d, t)))
            .ok_or_else(|| param_error("time::PrimitiveDateTime", OUT_OF_RANGE))
    }
}

/// Bound as the same instant in UTC, like chrono's `DateTime<Tz>`.
impl ToValue for OffsetDateTime {
    fn to_value(&self) -> Result<RowValues> {
        instant_to_chrono(*self)
            .map(RowValues::TimestampTz)
            .ok_or_else(|| param_error("time::OffsetDateTime", OUT_OF_RANGE))
    }
}

/// Decodes through the chrono type of the same meaning, so every stored form chrono accepts
/// (the native kind, and the text SQLite and Turso store) is accepted here too.
macro_rules! from_value_via_chrono {
    ($($t:ty => $chrono:ty, $convert:expr;)*) => {$(
        impl FromValue for $t {
            fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
                let c = <$chrono>::from_value(v).map_err(|e| DecodeError::new(stringify!($t), e.found))?;
                ($convert)(c).ok_or(DecodeError::new(stringify!($t), "a value out of its range"))
            }
        }
    )*};
}

from_value_via_chrono!(
    Date => NaiveDate, date_from_chrono;
    Time => NaiveTime, time_from_chrono;
    PrimitiveDateTime => NaiveDateTime, |c: NaiveDateTime| date_from_chrono(c.date())
        .zip(time_from_chrono(c.time()))
        .map(|(d, t)| PrimitiveDateTime::new(d, t));
    OffsetDateTime => DateTime<Utc>, instant_from_chrono;
);

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use time::UtcOffset;

    #[test]
    fn each_type_round_trips_through_its_kind() {
        let d = Date::from_calendar_date(2024, Month::February, 29).unwrap();
        let t = Time::from_hms_nano(23, 59, 58, 123_456_789).unwrap();
        let p = PrimitiveDateTime::new(d, t);
        let o = p.assume_offset(UtcOffset::from_hms(-5, 30, 0).unwrap());
        for (value, kind) in [
            (d.to_value().unwrap(), "Date"),
            (t.to_value().unwrap(), "Time"),
            (p.to_value().unwrap(), "Timestamp"),
            (o.to_value().unwrap(), "TimestampTz"),
        ] {
            assert_eq!(value.kind_name(), kind);
        }
        assert_eq!(
            Date::from_value(d.to_value().unwrap().as_value_ref()).unwrap(),
            d
        );
        assert_eq!(
            Time::from_value(t.to_value().unwrap().as_value_ref()).unwrap(),
            t
        );
        assert_eq!(
            PrimitiveDateTime::from_value(p.to_value().unwrap().as_value_ref()).unwrap(),
            p
        );
        let back = OffsetDateTime::from_value(o.to_value().unwrap().as_value_ref()).unwrap();
        assert_eq!(back, o, "the same instant");
        assert_eq!(back.offset(), UtcOffset::UTC);
    }

    #[test]
    fn stored_text_decodes_and_bad_values_are_typed() {
        let d = Date::from_value(ValueRef::Text(Cow::Borrowed("1999-12-31"))).unwrap();
        assert_eq!(
            d,
            Date::from_calendar_date(1999, Month::December, 31).unwrap()
        );
        let e = Date::from_value(ValueRef::Int(3)).unwrap_err();
        assert_eq!((e.expected, e.found), ("Date", "Int"));
        // A leap second chrono can hold and `time` cannot.
        let leap = NaiveTime::from_hms_nano_opt(23, 59, 59, 1_500_000_000).unwrap();
        let e = Time::from_value(ValueRef::Time(leap)).unwrap_err();
        assert_eq!(e.found, "a value out of its range");
        // Before 1 BCE chrono's range starts; `time` (without large-dates) stops at -9999.
        let early = Date::from_calendar_date(-9999, Month::January, 1).unwrap();
        assert!(early.to_value().is_ok());
    }
}
