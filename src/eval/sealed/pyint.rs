//! Python's `int` for the sealed comparisons (`pyvalue`): any size, exact
//! arithmetic where Python's is exact (`-`, `abs`, comparisons, also with a
//! float), and Python's correctly rounded conversion to float, with its
//! `OverflowError` past the largest float.
//!
//! Pure: no I/O.

use std::borrow::Cow;
use std::cmp::Ordering;

/// An integer of any size, in one normal form: `Small` whenever it fits an
/// `i64`, so that the derived `==` and `Hash` are Python's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Int {
    Small(i64),
    /// Past `i64`: the sign and the magnitude, in little-endian base-2^32
    /// limbs without a zero at the top.
    Big {
        negative: bool,
        mag: Box<[u32]>,
    },
}

/// Python's `OverflowError: int too large to convert to float`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overflow;

impl Int {
    pub(crate) fn from_i64(n: i64) -> Int {
        Int::Small(n)
    }

    /// From Python's `format(v, 'x')` (`-1f`, `0`), as bytes.
    pub(crate) fn from_hex(text: &[u8]) -> Option<Int> {
        let (negative, digits) = match text.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, text),
        };
        if digits.is_empty() {
            return None;
        }
        let mut mag = Vec::with_capacity(digits.len().div_ceil(8));
        for chunk in digits.rchunks(8) {
            let mut limb = 0u32;
            for &d in chunk {
                limb = (limb << 4) | char::from(d).to_digit(16)?;
            }
            mag.push(limb);
        }
        Some(Int::normal(negative, mag))
    }

    /// The normal form of a sign and a magnitude.
    fn normal(negative: bool, mut mag: Vec<u32>) -> Int {
        while mag.last() == Some(&0) {
            mag.pop();
        }
        if mag.len() <= 2 {
            let m = mag
                .iter()
                .rev()
                .fold(0u64, |acc, &l| (acc << 32) | u64::from(l));
            let signed = if negative {
                -i128::from(m)
            } else {
                i128::from(m)
            };
            if let Ok(small) = i64::try_from(signed) {
                return Int::Small(small);
            }
        }
        Int::Big {
            negative,
            mag: mag.into_boxed_slice(),
        }
    }

    fn from_i128(n: i128) -> Int {
        match i64::try_from(n) {
            Ok(small) => Int::Small(small),
            Err(_) => {
                let m = n.unsigned_abs();
                let mag = (0..4).map(|i| (m >> (32 * i)) as u32).collect();
                Int::normal(n < 0, mag)
            }
        }
    }

    /// The sign and the magnitude.
    fn parts(&self) -> (bool, Cow<'_, [u32]>) {
        match self {
            Int::Small(n) => {
                let m = n.unsigned_abs();
                let mut mag = vec![m as u32, (m >> 32) as u32];
                while mag.last() == Some(&0) {
                    mag.pop();
                }
                (*n < 0, Cow::Owned(mag))
            }
            Int::Big { negative, mag } => (*negative, Cow::Borrowed(&mag[..])),
        }
    }

    /// The integer a finite, integral float holds exactly.
    pub(crate) fn from_integral(f: f64) -> Option<Int> {
        if !f.is_finite() || f.fract() != 0.0 {
            return None;
        }
        if f.abs() < 9.0e18 {
            return Some(Int::Small(f as i64));
        }
        // |f| = mantissa * 2^exp, exp > 0 here.
        let bits = f.to_bits();
        let exp = usize::try_from(((bits >> 52) & 0x7ff) as i64 - 1075).ok()?;
        let mantissa = u128::from((bits & ((1 << 52) - 1)) | (1 << 52)) << (exp % 32);
        let mut mag = vec![0u32; exp / 32];
        mag.extend((0..3).map(|i| (mantissa >> (32 * i)) as u32));
        Some(Int::normal(f < 0.0, mag))
    }

    pub(crate) fn is_zero(&self) -> bool {
        *self == Int::Small(0)
    }

    fn is_negative(&self) -> bool {
        match self {
            Int::Small(n) => *n < 0,
            Int::Big { negative, .. } => *negative,
        }
    }

    /// Python's `abs(self)`.
    pub(crate) fn abs(&self) -> Int {
        match self {
            Int::Small(n) => Int::from_i128(i128::from(*n).abs()),
            Int::Big { mag, .. } => Int::Big {
                negative: false,
                mag: mag.clone(),
            },
        }
    }

    /// Python's `self - other`, exact.
    pub(crate) fn sub(&self, other: &Int) -> Int {
        if let (Int::Small(a), Int::Small(b)) = (self, other) {
            return Int::from_i128(i128::from(*a) - i128::from(*b));
        }
        let (na, ma) = self.parts();
        let (nb, mb) = other.parts();
        // a - b = a + (-b)
        let nb = !nb;
        if na == nb {
            return Int::normal(na, add_mag(&ma, &mb));
        }
        match cmp_mag(&ma, &mb) {
            Ordering::Less => Int::normal(nb, sub_mag(&mb, &ma)),
            _ => Int::normal(na, sub_mag(&ma, &mb)),
        }
    }

    /// Python's `float(self)`: correctly rounded (half to even), and
    /// `Overflow` where Python raises `OverflowError`.
    pub(crate) fn to_f64(&self) -> Result<f64, Overflow> {
        let (negative, mag) = match self {
            // i64 to f64 by `as` rounds to nearest, ties to even.
            Int::Small(n) => return Ok(*n as f64),
            Int::Big { negative, mag } => (*negative, mag),
        };
        let bits = bit_length(mag);
        if bits > 1024 {
            return Err(Overflow);
        }
        // The top 64 bits, with a sticky bit for any bit below them: u64 to
        // f64 then rounds as the whole number would.
        let shift = bits - 64;
        let (limb, within) = ((shift / 32) as usize, shift % 32);
        let word = |i: usize| u128::from(mag.get(i).copied().unwrap_or(0));
        let window = word(limb) | (word(limb + 1) << 32) | (word(limb + 2) << 64);
        let mut top = (window >> within) as u64;
        let lost = mag[..limb].iter().any(|&l| l != 0) || (mag[limb] & ((1u32 << within) - 1)) != 0;
        if lost {
            top |= 1;
        }
        // 2^shift exactly (shift <= 960).
        let scale = f64::from_bits((u64::from(shift) + 1023) << 52);
        let f = top as f64 * scale;
        if f.is_infinite() {
            return Err(Overflow);
        }
        Ok(if negative { -f } else { f })
    }

    /// Python's comparison of an int with a float: exact (`None` for nan).
    pub(crate) fn cmp_f64(&self, f: f64) -> Option<Ordering> {
        if f.is_nan() {
            return None;
        }
        if f.is_infinite() {
            return Some(if f > 0.0 {
                Ordering::Less
            } else {
                Ordering::Greater
            });
        }
        let floor = f.floor();
        let whole = Int::from_integral(floor).expect("a finite float's floor is integral");
        Some(match self.cmp(&whole) {
            Ordering::Equal if floor != f => Ordering::Less,
            other => other,
        })
    }

    /// Its magnitude in hex, with a `-` if negative (as `format(v, 'x')`).
    pub(crate) fn describe(&self) -> String {
        let (negative, mag) = self.parts();
        let mut out = String::from(if negative { "-" } else { "" });
        for (i, limb) in mag.iter().rev().enumerate() {
            if i == 0 {
                out.push_str(&format!("{limb:x}"));
            } else {
                out.push_str(&format!("{limb:08x}"));
            }
        }
        if mag.is_empty() {
            out.push('0');
        }
        out
    }
}

impl Ord for Int {
    fn cmp(&self, other: &Int) -> Ordering {
        if let (Int::Small(a), Int::Small(b)) = (self, other) {
            return a.cmp(b);
        }
        match (self.is_negative(), other.is_negative()) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (negative, _) => {
                let by_mag = cmp_mag(&self.parts().1, &other.parts().1);
                if negative {
                    by_mag.reverse()
                } else {
                    by_mag
                }
            }
        }
    }
}

impl PartialOrd for Int {
    fn partial_cmp(&self, other: &Int) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn bit_length(mag: &[u32]) -> u32 {
    match mag.last() {
        None => 0,
        Some(top) => (mag.len() as u32 - 1) * 32 + (32 - top.leading_zeros()),
    }
}

fn cmp_mag(a: &[u32], b: &[u32]) -> Ordering {
    let trim = |m: &[u32]| m.len() - m.iter().rev().take_while(|&&l| l == 0).count();
    let (la, lb) = (trim(a), trim(b));
    la.cmp(&lb)
        .then_with(|| a[..la].iter().rev().cmp(b[..lb].iter().rev()))
}

fn add_mag(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let mut carry = 0u64;
    for i in 0..a.len().max(b.len()) {
        let sum = u64::from(a.get(i).copied().unwrap_or(0))
            + u64::from(b.get(i).copied().unwrap_or(0))
            + carry;
        out.push(sum as u32);
        carry = sum >> 32;
    }
    out.push(carry as u32);
    out
}

/// `a - b` for `a >= b`.
fn sub_mag(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i64;
    for (i, &limb) in a.iter().enumerate() {
        let mut d = i64::from(limb) - i64::from(b.get(i).copied().unwrap_or(0)) - borrow;
        borrow = i64::from(d < 0);
        if d < 0 {
            d += 1 << 32;
        }
        out.push(d as u32);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Int {
        Int::from_hex(text.as_bytes()).unwrap()
    }

    #[test]
    fn the_normal_form_makes_equal_ints_equal() {
        assert_eq!(hex("-0"), Int::Small(0));
        assert_eq!(hex("000ff"), Int::Small(255));
        assert_eq!(hex("-8000000000000000"), Int::Small(i64::MIN));
        assert!(matches!(hex("8000000000000000"), Int::Big { .. }));
        assert_eq!(
            hex("1").sub(&hex("10000000000000000")).describe(),
            "-ffffffffffffffff"
        );
        assert_eq!(Int::Small(i64::MIN).abs().describe(), "8000000000000000");
        assert_eq!(
            hex("10000000000000000").sub(&hex("ffffffffffffffff")),
            Int::Small(1)
        );
        assert_eq!(
            Int::from_integral(2f64.powi(70)),
            Some(hex("400000000000000000"))
        );
        assert_eq!(Int::from_integral(-0.0), Some(Int::Small(0)));
        assert!(Int::from_hex(b"").is_none() && Int::from_hex(b"-").is_none());
        assert!(Int::from_hex(b"1g").is_none());
    }

    #[test]
    fn ints_compare_with_floats_exactly() {
        let two_53_plus_1 = hex("20000000000001");
        assert_eq!(
            two_53_plus_1.cmp_f64(9007199254740992.0),
            Some(Ordering::Greater)
        );
        assert_eq!(Int::Small(3).cmp_f64(2.5), Some(Ordering::Greater));
        assert_eq!(Int::Small(2).cmp_f64(2.5), Some(Ordering::Less));
        assert_eq!(Int::Small(-3).cmp_f64(-2.5), Some(Ordering::Less));
        assert_eq!(hex("1").cmp_f64(f64::NAN), None);
        assert_eq!(
            hex("f".repeat(400).as_str()).cmp_f64(f64::INFINITY),
            Some(Ordering::Less)
        );
    }
}
