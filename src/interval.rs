//! [`Interval`]: a span of time in Postgres' three units (months, days, microseconds), which do
//! not convert into one another (a month is not a fixed number of days, nor a day a fixed
//! number of seconds across a daylight-saving change).

use std::fmt;
use std::str::FromStr;

/// A Postgres `interval`: months, days and microseconds, each with its own sign.
///
/// Its text form (`Display`, and how SQLite and Turso store it) is ISO 8601 with designators,
/// always with all three parts: `P14M3DT4.5S` is 14 months, 3 days and 4.5 seconds. Postgres
/// reads that form too.
///
/// ```
/// use sql_middleware::Interval;
///
/// let i = Interval { months: 14, days: -3, microseconds: 4_500_000 };
/// assert_eq!(i.to_string(), "P14M-3DT4.5S");
/// assert_eq!("P14M-3DT4.5S".parse::<Interval>().unwrap(), i);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Interval {
    /// Whole months.
    pub months: i32,
    /// Whole days.
    pub days: i32,
    /// Microseconds.
    pub microseconds: i64,
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.microseconds < 0 { "-" } else { "" };
        let abs = self.microseconds.unsigned_abs();
        let (secs, frac) = (abs / 1_000_000, abs % 1_000_000);
        write!(f, "P{}M{}DT{sign}{secs}", self.months, self.days)?;
        if frac != 0 {
            let digits = format!("{frac:06}");
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
        f.write_str("S")
    }
}

/// The text was not an interval in the form [`Interval`]'s `Display` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseIntervalError;

impl fmt::Display for ParseIntervalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected an interval like P14M3DT4.5S")
    }
}

impl std::error::Error for ParseIntervalError {}

impl FromStr for Interval {
    type Err = ParseIntervalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let rest = s.strip_prefix('P').ok_or(ParseIntervalError)?;
        let (months, rest) = rest.split_once('M').ok_or(ParseIntervalError)?;
        let (days, rest) = rest.split_once("DT").ok_or(ParseIntervalError)?;
        let secs = rest.strip_suffix('S').ok_or(ParseIntervalError)?;
        let (neg, secs) = match secs.strip_prefix('-') {
            Some(s) => (true, s),
            None => (false, secs),
        };
        let (whole, frac) = secs.split_once('.').unwrap_or((secs, ""));
        if whole.is_empty()
            || frac.len() > 6
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(ParseIntervalError);
        }
        let whole: i128 = whole.parse().map_err(|_| ParseIntervalError)?;
        let frac: i128 = if frac.is_empty() {
            0
        } else {
            format!("{frac:0<6}")
                .parse()
                .map_err(|_| ParseIntervalError)?
        };
        let micros = whole
            .checked_mul(1_000_000)
            .and_then(|w| w.checked_add(frac))
            .ok_or(ParseIntervalError)?;
        let micros =
            i64::try_from(if neg { -micros } else { micros }).map_err(|_| ParseIntervalError)?;
        Ok(Interval {
            months: months.parse().map_err(|_| ParseIntervalError)?,
            days: days.parse().map_err(|_| ParseIntervalError)?,
            microseconds: micros,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips() {
        for i in [
            Interval::default(),
            Interval {
                months: -1,
                days: 0,
                microseconds: -1,
            },
            Interval {
                months: i32::MAX,
                days: i32::MIN,
                microseconds: i64::MAX,
            },
            Interval {
                months: i32::MIN,
                days: i32::MAX,
                microseconds: i64::MIN,
            },
            Interval {
                months: 0,
                days: 1,
                microseconds: 3_600_000_000,
            },
        ] {
            let text = i.to_string();
            assert_eq!(text.parse::<Interval>(), Ok(i), "{text}");
        }
        assert_eq!(Interval::default().to_string(), "P0M0DT0S");
    }

    #[test]
    fn malformed_text_is_an_error() {
        for bad in [
            "",
            "P",
            "1 day",
            "P1M1D",
            "P1M1DTS",
            "P1M1DT1.1234567S",
            "PxM1DT1S",
        ] {
            assert_eq!(bad.parse::<Interval>(), Err(ParseIntervalError), "{bad}");
        }
    }
}
