//! Numbers: integers of every width, floats, and exact decimals, with typed errors for values
//! out of a type's range or precision.

use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;

use super::{FromValue, exact_decimal, mismatch, read_plain};
use crate::error::DecodeError;
use crate::value::ValueRef;

impl FromValue for i64 {
    #[inline]
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Int(i) => Ok(read_plain(v, i)),
            ValueRef::Bool(b) => Ok(read_plain(v, i64::from(b))),
            ValueRef::Numeric(d) => numeric_to_int(d, "i64"),
            other => mismatch("i64", &other),
        }
    }
}

/// An integral `Numeric` as an integer type: a fractional value and one out of the type's
/// range are typed errors that say which. Kept out of line so the `Int` arm stays as cheap as
/// before.
#[cold]
#[inline(never)]
fn numeric_to_int<T: TryFrom<i128>>(
    d: Decimal,
    expected: &'static str,
) -> std::result::Result<T, DecodeError> {
    if !d.is_integer() {
        return Err(DecodeError::new(expected, "Numeric with a fractional part"));
    }
    // Integral, so truncating drops only zeros; a 96-bit mantissa always fits in i128.
    T::try_from(d.as_i128()).map_err(|_| DecodeError::new(expected, "Numeric out of range"))
}

/// 10^0 ..= 10^22: the powers of ten a double holds exactly.
const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A `Numeric` as the nearest `f64`, as PostgreSQL's own `numeric::float8` cast gives it.
///
/// Mantissas up to 2^53 with up to 22 decimal places are one correctly rounded division of two
/// exact doubles; anything else goes through the decimal text, which the standard parser
/// rounds correctly too.
#[cold]
#[inline(never)]
fn numeric_to_f64(d: Decimal) -> f64 {
    const EXACT_MANTISSA: u128 = 1 << 53;
    let m = d.mantissa().unsigned_abs();
    let scale = d.scale() as usize;
    let magnitude = if m <= EXACT_MANTISSA && scale < EXACT_POW10.len() {
        m as f64 / EXACT_POW10[scale]
    } else {
        // A decimal's text is always a valid float literal.
        d.abs().to_string().parse::<f64>().unwrap_or(f64::NAN)
    };
    if d.is_sign_negative() {
        -magnitude
    } else {
        magnitude
    }
}

macro_rules! narrow_int {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
                match v {
                    ValueRef::Int(i) => <$t>::try_from(i)
                        .map_err(|_| DecodeError::new(stringify!($t), "Int out of range")),
                    ValueRef::Bool(b) => Ok(<$t>::from(b)),
                    ValueRef::Numeric(d) => numeric_to_int(d, stringify!($t)),
                    other => mismatch(stringify!($t), &other),
                }
            }
        }
    )*};
}
narrow_int!(i32, i16, i8, u64, u32, u16, u8, u128);

impl FromValue for i128 {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Int(i) => Ok(i128::from(i)),
            ValueRef::Bool(b) => Ok(i128::from(b)),
            ValueRef::Numeric(d) => numeric_to_int(d, "i128"),
            other => mismatch("i128", &other),
        }
    }
}

impl FromValue for f64 {
    #[inline]
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Float(f) => Ok(read_plain(v, f)),
            ValueRef::Int(i) => Ok(read_plain(v, i as f64)),
            ValueRef::Numeric(d) => Ok(numeric_to_f64(d)),
            other => mismatch("f64", &other),
        }
    }
}

impl FromValue for f32 {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Float(f) => {
                let narrowed = f as f32;
                if narrowed.is_infinite() && f.is_finite() {
                    return Err(DecodeError::new("f32", "Float out of range"));
                }
                Ok(narrowed)
            }
            ValueRef::Int(i) => Ok(i as f32),
            // Every decimal is within f32's range (the largest is about 7.9e28).
            ValueRef::Numeric(d) => Ok(numeric_to_f32(d)),
            other => mismatch("f32", &other),
        }
    }
}

/// A `Numeric` as the nearest `f32` (see [`numeric_to_f64`]; going through `f64` could round
/// twice).
#[cold]
#[inline(never)]
fn numeric_to_f32(d: Decimal) -> f32 {
    const EXACT_MANTISSA: u128 = 1 << 24;
    const EXACT_POW10: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];
    let m = d.mantissa().unsigned_abs();
    let scale = d.scale() as usize;
    let magnitude = if m <= EXACT_MANTISSA && scale < EXACT_POW10.len() {
        m as f32 / EXACT_POW10[scale]
    } else {
        d.abs().to_string().parse::<f32>().unwrap_or(f32::NAN)
    };
    if d.is_sign_negative() {
        -magnitude
    } else {
        magnitude
    }
}

impl FromValue for Decimal {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Numeric(d) => Ok(d),
            ValueRef::Int(i) => Ok(Decimal::from(i)),
            // As SQLite reads a REAL stored in a NUMERIC column: without the binary noise
            // (0.1 decodes as 0.1, not 0.1000000000000000055...).
            ValueRef::Float(f) => float_to_decimal(f),
            ValueRef::Text(s) => decimal_from_text(&s),
            other => mismatch("Decimal", &other),
        }
    }
}

/// A decimal written as text, exactly or not at all (see [`exact_decimal`]): more significant
/// digits than a `Decimal` holds are an error, never a rounded number. Scientific notation is
/// read when its digits fit.
#[cold]
#[inline(never)]
fn decimal_from_text(s: &str) -> std::result::Result<Decimal, DecodeError> {
    if let Some(d) = exact_decimal(s) {
        return Ok(d);
    }
    if let Some((base, _)) = s.split_once(['e', 'E']) {
        // Scientific notation, when its digits fit (the exponent then only moves the point).
        if Decimal::from_str_exact(base).is_ok() {
            return Decimal::from_scientific(s)
                .map_err(|_| DecodeError::new("Decimal", "Text beyond Decimal's range"));
        }
        return Err(DecodeError::new("Decimal", "unparsable Text"));
    }
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let number =
        int.len() + frac.len() > 0 && int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit());
    Err(DecodeError::new(
        "Decimal",
        if number {
            "Text with more digits than a Decimal holds"
        } else {
            "unparsable Text"
        },
    ))
}

#[cold]
#[inline(never)]
fn float_to_decimal(f: f64) -> std::result::Result<Decimal, DecodeError> {
    if !f.is_finite() {
        return Err(DecodeError::new("Decimal", "non-finite Float"));
    }
    Decimal::from_f64(f).ok_or(DecodeError::new("Decimal", "Float out of range"))
}
