//! Reading `numeric` from its binary form exactly.
//!
//! A `numeric` is a [`Decimal`] only when a `Decimal` holds its value exactly: a mantissa
//! within 96 bits and at most 28 decimal places (trailing zeros past those are dropped, as few
//! as need be, so `round(x, 40)` of 1.5 is 1.5 at scale 28). Anything else (more significant
//! digits, `NaN`, `Infinity`, `-Infinity`) is the server's own text form of the value, as
//! `numeric_out` prints it, so nothing is ever rounded. rust_decimal's own `FromSql` rounds
//! past 28 decimal places and fails on large values, which is why the wing does not use it.

use std::error::Error;

use rust_decimal::Decimal;

type BoxErr = Box<dyn Error + Sync + Send>;

/// A `numeric` value as read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PgNumeric {
    /// The value, digit for digit, with its scale (or as much of it as fits).
    Exact(Decimal),
    /// The server's text form of a value no `Decimal` holds exactly.
    Text(String),
}

const SIGN_POS: u16 = 0x0000;
const SIGN_NEG: u16 = 0x4000;
const SIGN_NAN: u16 = 0xC000;
const SIGN_PINF: u16 = 0xD000;
const SIGN_NINF: u16 = 0xF000;
/// The bits of the display scale (the rest are flags no value on the wire carries).
const DSCALE_MASK: u16 = 0x3FFF;
/// Each digit of the wire form is a base-10000 digit: four decimal digits.
const NBASE: u16 = 10_000;
/// The largest mantissa a `Decimal` holds: 2^96 - 1.
const MAX_MANTISSA: u128 = (1 << 96) - 1;
/// The most decimal places a `Decimal` holds.
const MAX_SCALE: u16 = 28;

/// The header and base-10000 digits of a finite `numeric`.
struct Parts<'a> {
    neg: bool,
    /// The power of 10000 of the first digit.
    weight: i16,
    /// The decimal places the value is written with.
    dscale: u16,
    /// Base-10000 digits, two bytes each, big-endian.
    digits: &'a [u8],
}

impl Parts<'_> {
    fn ndigits(&self) -> usize {
        self.digits.len() / 2
    }

    /// Base-10000 digit number `i` (0 is the first), zero outside the stored digits.
    fn digit(&self, i: isize) -> u16 {
        match usize::try_from(i) {
            Ok(i) if i < self.ndigits() => {
                u16::from_be_bytes([self.digits[2 * i], self.digits[2 * i + 1]])
            }
            _ => 0,
        }
    }

    /// The decimal places up to the last nonzero digit of the fraction, within `dscale`
    /// (digits past the display scale are not part of the value, as `numeric_out` prints it).
    fn significant_scale(&self) -> u16 {
        let dscale = i64::from(self.dscale);
        for i in (0..self.ndigits() as isize).rev() {
            // Decimal places before this digit's four (none: it is in the integer part).
            let before = 4 * (i as i64 - i64::from(self.weight) - 1);
            if before < 0 {
                return 0;
            }
            if before >= dscale {
                continue;
            }
            // Its places within the display scale.
            let kept = (dscale - before).min(4);
            let mut d = self.digit(i) / 10u16.pow((4 - kept) as u32);
            if d == 0 {
                continue;
            }
            let mut last = before + kept;
            while d % 10 == 0 {
                d /= 10;
                last -= 1;
            }
            return u16::try_from(last).unwrap_or(self.dscale);
        }
        0
    }

    /// The mantissa at `scale` decimal places (at most `dscale`), when it fits 96 bits.
    fn mantissa(&self, scale: u16) -> Option<u128> {
        let mut m: u128 = 0;
        // The integer part: digits of weight `weight` down to 0.
        for i in 0..=isize::from(self.weight) {
            m = m.checked_mul(u128::from(NBASE))? + u128::from(self.digit(i));
            if m > MAX_MANTISSA {
                return None;
            }
        }
        // The fraction, `scale` decimal places.
        let mut left = scale;
        let mut i = isize::from(self.weight) + 1;
        while left > 0 {
            let take = left.min(4);
            let d = u128::from(self.digit(i) / 10u16.pow(u32::from(4 - take)));
            m = m.checked_mul(10u128.pow(u32::from(take)))? + d;
            if m > MAX_MANTISSA {
                return None;
            }
            left -= take;
            i += 1;
        }
        Some(m)
    }

    /// The `Decimal` that holds the value exactly: every nonzero digit, and as much of the
    /// display scale as then fits (trailing zeros dropped, as few as need be).
    fn exact(&self) -> Option<Decimal> {
        let significant = self.significant_scale();
        if significant > MAX_SCALE {
            return None;
        }
        let mut m = self.mantissa(significant)?;
        let mut scale = significant;
        while scale < self.dscale.min(MAX_SCALE) && m * 10 <= MAX_MANTISSA {
            m *= 10;
            scale += 1;
        }
        // The mantissa fits 96 bits and the scale is at most 28: both conversions hold.
        let m = i128::try_from(m).ok()?;
        Decimal::try_from_i128_with_scale(if self.neg { -m } else { m }, u32::from(scale)).ok()
    }

    /// The text `numeric_out` prints.
    fn text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::with_capacity(8 + 4 * self.ndigits() + usize::from(self.dscale));
        if self.neg {
            s.push('-');
        }
        if self.weight < 0 {
            s.push('0');
        } else {
            for i in 0..=isize::from(self.weight) {
                let d = self.digit(i);
                // Writing to a String cannot fail.
                let _ = if i == 0 {
                    write!(s, "{d}")
                } else {
                    write!(s, "{d:04}")
                };
            }
        }
        if self.dscale > 0 {
            s.push('.');
            let mut left = self.dscale;
            let mut i = isize::from(self.weight) + 1;
            while left > 0 {
                let take = left.min(4);
                let four = format!("{:04}", self.digit(i));
                s.push_str(&four[..usize::from(take)]);
                left -= take;
                i += 1;
            }
        }
        s
    }
}

fn two(raw: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([raw[at], raw[at + 1]])
}

/// Reads the binary form of a `numeric` (as `numeric_send` writes it).
pub(crate) fn numeric_from_sql(raw: &[u8]) -> Result<PgNumeric, BoxErr> {
    if raw.len() < 8 {
        return Err("numeric: shorter than its header".into());
    }
    let ndigits = usize::from(two(raw, 0));
    let weight = two(raw, 2) as i16;
    let sign = two(raw, 4);
    let dscale = two(raw, 6);
    let digits = &raw[8..];
    if digits.len() != 2 * ndigits {
        return Err("numeric: the digit count does not match the length".into());
    }
    let neg = match sign {
        SIGN_POS => false,
        SIGN_NEG => true,
        SIGN_NAN => return Ok(PgNumeric::Text("NaN".to_owned())),
        SIGN_PINF => return Ok(PgNumeric::Text("Infinity".to_owned())),
        SIGN_NINF => return Ok(PgNumeric::Text("-Infinity".to_owned())),
        _ => return Err("numeric: unknown sign".into()),
    };
    if dscale & !DSCALE_MASK != 0 {
        return Err("numeric: invalid scale".into());
    }
    let parts = Parts {
        neg,
        weight,
        dscale,
        digits,
    };
    if (0..ndigits as isize).any(|i| parts.digit(i) >= NBASE) {
        return Err("numeric: a digit out of range".into());
    }
    Ok(match parts.exact() {
        Some(d) => PgNumeric::Exact(d),
        None => PgNumeric::Text(parts.text()),
    })
}

/// Writes the decimal text `s` (`-12.5`, `1e-40`, `NaN`, `Infinity`, digits beyond any
/// `Decimal`) as a binary `numeric`, digit for digit: what `numeric_in` would store for it.
/// `Err` for text that is no number, or beyond the wire form's weight and scale.
pub(crate) fn text_to_sql(s: &str, out: &mut bytes::BytesMut) -> Result<(), BoxErr> {
    let bad = || -> BoxErr { "not a numeric value".into() };
    let t = s.trim();
    let special = match t.to_ascii_lowercase().as_str() {
        "nan" => Some(SIGN_NAN),
        "infinity" | "+infinity" | "inf" | "+inf" => Some(SIGN_PINF),
        "-infinity" | "-inf" => Some(SIGN_NINF),
        _ => None,
    };
    if let Some(sign) = special {
        for half in [0u16, 0, sign, 0] {
            out.extend_from_slice(&half.to_be_bytes());
        }
        return Ok(());
    }
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], body[i + 1..].parse::<i64>().map_err(|_| bad())?),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    // All the digits, and where the point stands among them (after `point` digits).
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let point = i64::try_from(int.len()).map_err(|_| bad())? + exp;
    let dscale = (i64::try_from(digits.len()).map_err(|_| bad())? - point).max(0);
    if dscale > i64::from(DSCALE_MASK) {
        return Err(bad());
    }
    // Base-10000 groups aligned on the point: zeros before the first digit (and after the
    // last) make every group four decimal places that end on a multiple of four.
    let lead = (4 - point.rem_euclid(4)) % 4;
    let mut padded: Vec<u8> = vec![0; usize::try_from(lead).map_err(|_| bad())?];
    padded.extend_from_slice(&digits);
    while padded.len() % 4 != 0 {
        padded.push(0);
    }
    let aligned_point = point + lead;
    let mut groups: Vec<u16> = padded
        .chunks(4)
        .map(|c| c.iter().fold(0u16, |acc, d| acc * 10 + u16::from(*d)))
        .collect();
    let mut weight = aligned_point / 4 - 1;
    // No leading or trailing zero groups on the wire.
    let lead_zeros = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..lead_zeros);
    weight -= i64::try_from(lead_zeros).map_err(|_| bad())?;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let weight = i16::try_from(weight).map_err(|_| bad())?;
    let ndigits = u16::try_from(groups.len()).map_err(|_| bad())?;
    let sign = if neg && !groups.is_empty() {
        SIGN_NEG
    } else {
        SIGN_POS
    };
    out.extend_from_slice(&ndigits.to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(dscale as u16).to_be_bytes());
    for g in groups {
        debug_assert!(g < NBASE);
        out.extend_from_slice(&g.to_be_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes `s` and reads it back through the decoder.
    fn round(s: &str) -> PgNumeric {
        let mut out = bytes::BytesMut::new();
        text_to_sql(s, &mut out).unwrap_or_else(|e| panic!("{s}: {e}"));
        numeric_from_sql(&out).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn text_is_written_digit_for_digit() {
        let wide = "123456789012345678901234567890.123456789012345678901234567890";
        assert_eq!(round(wide), PgNumeric::Text(wide.to_owned()));
        assert_eq!(round("1.50"), PgNumeric::Exact(Decimal::new(150, 2)));
        assert_eq!(round("-0.00001"), PgNumeric::Exact(Decimal::new(-1, 5)));
        assert_eq!(round("1e5"), PgNumeric::Exact(Decimal::new(100_000, 0)));
        assert_eq!(round("1e-10"), PgNumeric::Exact(Decimal::new(1, 10)));
        assert_eq!(round("-0"), PgNumeric::Exact(Decimal::ZERO));
        assert_eq!(round("NaN"), PgNumeric::Text("NaN".to_owned()));
        assert_eq!(round("-Infinity"), PgNumeric::Text("-Infinity".to_owned()));
        for bad in [
            "",
            ".",
            "1.2.3",
            "abc",
            "1e",
            "--1",
            "1e99999999999999999999",
            "1e-99999",
        ] {
            assert!(
                text_to_sql(bad, &mut bytes::BytesMut::new()).is_err(),
                "{bad}"
            );
        }
    }

    /// The wire form of the decimal text `s` (as `numeric_send` writes it), built by hand.
    fn wire(s: &str) -> Vec<u8> {
        let (neg, s) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        let int = int.trim_start_matches('0');
        // Pad the integer part on the left and the fraction on the right to whole groups.
        let lead = (4 - int.len() % 4) % 4;
        let int = format!("{}{int}", "0".repeat(lead));
        let trail = (4 - frac.len() % 4) % 4;
        let frac_padded = format!("{frac}{}", "0".repeat(trail));
        let mut groups: Vec<u16> = int
            .as_bytes()
            .chunks(4)
            .chain(frac_padded.as_bytes().chunks(4))
            .map(|c| std::str::from_utf8(c).unwrap().parse().unwrap())
            .collect();
        let mut weight = (int.len() / 4) as i16 - 1;
        // Strip leading and trailing zero groups, as the server does.
        while groups.first() == Some(&0) {
            groups.remove(0);
            weight -= 1;
        }
        while groups.last() == Some(&0) {
            groups.pop();
        }
        if groups.is_empty() {
            weight = 0;
        }
        let mut out = Vec::new();
        out.extend_from_slice(&(groups.len() as u16).to_be_bytes());
        out.extend_from_slice(&weight.to_be_bytes());
        let sign = if neg && !groups.is_empty() {
            SIGN_NEG
        } else {
            SIGN_POS
        };
        out.extend_from_slice(&sign.to_be_bytes());
        out.extend_from_slice(&(frac.len() as u16).to_be_bytes());
        for g in groups {
            out.extend_from_slice(&g.to_be_bytes());
        }
        out
    }

    #[test]
    fn trailing_zeros_past_a_decimal_are_dropped_only_as_needed() {
        for (s, want) in [
            (
                "1.000000000000000000000000000000",
                "1.0000000000000000000000000000",
            ),
            (
                "-1.5000000000000000000000000000000000000000",
                "-1.5000000000000000000000000000",
            ),
            (
                "12345678901234567890.500000000000000000000000000000",
                "12345678901234567890.500000000",
            ),
            (
                "0.000000000000000000000000000000",
                "0.0000000000000000000000000000",
            ),
            (
                "79228162514264337593543950335.00",
                "79228162514264337593543950335",
            ),
        ] {
            match numeric_from_sql(&wire(s)).unwrap() {
                PgNumeric::Exact(d) => assert_eq!(d.to_string(), want, "{s}"),
                other => panic!("{s}: {other:?}"),
            }
        }
    }

    #[test]
    fn values_a_decimal_holds_are_exact_with_their_scale() {
        for s in [
            "0",
            "0.000",
            "1",
            "-1.50",
            "3950.123456",
            "10000",
            "100000000.0001",
            "0.0000000000000000000000000001",
            "79228162514264337593543950335",
            "-7922816251426433759354395033.5",
            "12345678901234567890.12345678",
        ] {
            match numeric_from_sql(&wire(s)).unwrap() {
                PgNumeric::Exact(d) => assert_eq!(d.to_string(), s),
                other => panic!("{s}: {other:?}"),
            }
        }
    }

    #[test]
    fn values_beyond_a_decimal_are_their_exact_text() {
        for s in [
            "1.000000000000000000000000000001",
            "0.00000000000000000000000000001",
            "79228162514264337593543950336",
            "-92345678901234567890123456789.9",
            "3.1415926535897932384626433832795028841971",
            "100000000000000000000000000000000000000000000000000",
            "-0.12345678901234567890123456789012345678901234567890",
        ] {
            match numeric_from_sql(&wire(s)).unwrap() {
                PgNumeric::Text(t) => assert_eq!(t, s),
                other => panic!("{s}: {other:?}"),
            }
        }
    }

    #[test]
    fn special_values_are_their_text() {
        for (sign, text) in [
            (SIGN_NAN, "NaN"),
            (SIGN_PINF, "Infinity"),
            (SIGN_NINF, "-Infinity"),
        ] {
            let mut raw = vec![0, 0, 0, 0];
            raw.extend_from_slice(&sign.to_be_bytes());
            raw.extend_from_slice(&[0, 0]);
            assert_eq!(
                numeric_from_sql(&raw).unwrap(),
                PgNumeric::Text(text.into())
            );
        }
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        assert!(numeric_from_sql(&[0, 1, 0, 0]).is_err());
        // One digit announced, none sent.
        assert!(numeric_from_sql(&[0, 1, 0, 0, 0, 0, 0, 0]).is_err());
        // A digit of 10000.
        assert!(numeric_from_sql(&[0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10]).is_err());
        // An unknown sign.
        assert!(numeric_from_sql(&[0, 0, 0, 0, 0x12, 0x34, 0, 0]).is_err());
        // Flags in the scale.
        assert!(numeric_from_sql(&[0, 0, 0, 0, 0, 0, 0xC0, 0]).is_err());
        // Extreme weights and scales stay bounded and exact.
        let mut raw = vec![0, 1, 0x7F, 0xFF, 0, 0, 0x3F, 0xFF, 0, 1];
        let t = match numeric_from_sql(&raw).unwrap() {
            PgNumeric::Text(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(t.len(), 1 + 4 * 32767 + 1 + 16383);
        // A digit past the display scale is not part of the value (`numeric_out` prints
        // zeros): zero, at as much of the scale as a Decimal holds.
        raw[2..4].copy_from_slice(&(-32768i16).to_be_bytes());
        assert_eq!(
            numeric_from_sql(&raw).unwrap(),
            PgNumeric::Exact(Decimal::new(0, 28))
        );
        // A digit within the display scale but too far to hold: the text.
        raw[2..4].copy_from_slice(&(-10i16).to_be_bytes());
        let t = match numeric_from_sql(&raw).unwrap() {
            PgNumeric::Text(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(&t[..2], "0.");
        assert_eq!(t.len(), 2 + 16383);
        assert_eq!(t.find('1'), Some(2 + 39));
    }
}
