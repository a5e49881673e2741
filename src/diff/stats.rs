//! The paired tests `sbx diff` reports, pure: the exact McNemar test on the
//! tasks that changed between pass and fail (one sample per task), and a
//! paired sign-flip permutation test on per-task pass@k differences
//! (several samples per task). For 0/1 scores the two give the same p.

use serde::Serialize;

/// The significance level the interpretation uses.
pub(crate) const ALPHA: f64 = 0.05;

/// The exact McNemar test on the discordant pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct McNemar {
    /// pass→fail pairs.
    pub b: usize,
    /// fail→pass pairs.
    pub c: usize,
    pub n: usize,
    /// Two-sided exact p-value.
    pub p: f64,
}

impl McNemar {
    pub(crate) fn of(b: usize, c: usize) -> McNemar {
        McNemar {
            b,
            c,
            n: b + c,
            p: mcnemar_exact_p(b as u64, c as u64),
        }
    }

    /// One line saying what the test means for these counts.
    pub(crate) fn interpretation(&self) -> String {
        if self.n == 0 {
            "no shared task changed between pass and fail; nothing to test".into()
        } else if self.p < ALPHA {
            let which = if self.b > self.c { "worse" } else { "better" };
            format!("NEW is {which}, and unlikely to be noise (p < {ALPHA})")
        } else if min_p(self.n) >= ALPHA {
            format!(
                "too few changed tasks ({}) to tell a change from noise: p < {ALPHA} needs at least 6",
                self.n
            )
        } else {
            format!("the difference could well be noise (p >= {ALPHA})")
        }
    }
}

/// The smallest two-sided p that n discordant pairs can give (all one way).
fn min_p(n: usize) -> f64 {
    McNemar::of(0, n).p
}

/// The exact two-sided McNemar p-value for `b` pass→fail and `c` fail→pass
/// pairs: min(1, 2 · Σ_{i=0}^{min(b,c)} C(n, i) / 2^n) with n = b + c, and 1
/// when n = 0.
///
/// The terms t_i = C(n, i) / 2^n are built in log space, t_0 = -n ln 2 and
/// t_{i+1} = t_i + ln((n - i) / (i + 1)), and summed relative to the latest
/// (largest: i <= n/2) term, so nothing overflows and the only underflow is
/// a true p below f64's range (about 1e-308), returned as 0.
pub(crate) fn mcnemar_exact_p(b: u64, c: u64) -> f64 {
    let n = b.saturating_add(c);
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    let n_f = n as f64;
    let mut log_term = -n_f * std::f64::consts::LN_2;
    // Σ_{j <= i} exp(t_j - t_i): every step rescales by exp(t_i - t_{i+1}) <= 1.
    let mut scaled_sum = 1.0_f64;
    for i in 0..k {
        let i_f = i as f64;
        let next = log_term + ((n_f - i_f) / (i_f + 1.0)).ln();
        scaled_sum = scaled_sum * (log_term - next).exp() + 1.0;
        log_term = next;
    }
    let p = (std::f64::consts::LN_2 + log_term + scaled_sum.ln()).exp();
    p.min(1.0)
}

/// Changed tasks up to which the sign-flip test enumerates every sign
/// pattern (2^20, about a million); above it, it draws [`RESAMPLES`].
pub(crate) const EXACT_UP_TO: usize = 20;
/// Random sign patterns drawn above [`EXACT_UP_TO`] changed tasks.
pub(crate) const RESAMPLES: usize = 100_000;

/// The paired sign-flip permutation test on per-task score differences
/// (NEW − OLD, each in [−1, 1]).
///
/// Under "no change", each task's difference is as likely to have either
/// sign, whatever its size. The statistic is |Σ d|; the two-sided p is the
/// share of the 2^m sign patterns of the m non-zero differences whose |Σ|
/// is at least the observed one: enumerated exactly for m <=
/// [`EXACT_UP_TO`], else estimated from [`RESAMPLES`] random patterns of a
/// fixed-seed generator (so a rerun prints the same p), as (hits + 1) /
/// (resamples + 1). Tasks whose score did not change add nothing to any
/// pattern and are left out, as a sign test leaves out its ties. With 0/1
/// scores this is the exact McNemar test: the same p.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SignFlip {
    /// The name printed with the test.
    pub method: &'static str,
    /// Tasks whose score rose.
    pub rose: usize,
    /// Tasks whose score fell.
    pub fell: usize,
    /// rose + fell: the tasks in the test.
    pub n: usize,
    /// Σ (NEW − OLD) over the tasks.
    pub sum: f64,
    /// Two-sided p.
    pub p: f64,
    /// Whether every sign pattern was enumerated (else [`RESAMPLES`] drawn).
    pub exact: bool,
}

/// The method's name, as the text and the JSON give it.
pub(crate) const SIGN_FLIP: &str = "paired sign-flip permutation test";

/// A difference this close to 0 is no change (the scores are means of
/// float products).
pub(crate) const TIE: f64 = 1e-12;

impl SignFlip {
    /// The test on `diffs` (NEW − OLD per task; zeros are ties, left out).
    pub(crate) fn of(diffs: &[f64]) -> SignFlip {
        let changed: Vec<f64> = diffs.iter().copied().filter(|d| d.abs() > TIE).collect();
        let (p, exact) = sign_flip_p(&changed);
        SignFlip {
            method: SIGN_FLIP,
            rose: changed.iter().filter(|&&d| d > 0.0).count(),
            fell: changed.iter().filter(|&&d| d < 0.0).count(),
            n: changed.len(),
            sum: changed.iter().sum(),
            p,
            exact,
        }
    }

    /// One line saying what the test means here (as [`McNemar`]'s). The
    /// smallest exact p of n changed tasks (all one way) is 2 / 2^n, as
    /// McNemar's.
    pub(crate) fn interpretation(&self) -> String {
        if self.n == 0 {
            "no shared task's score changed; nothing to test".into()
        } else if self.p < ALPHA {
            let which = if self.sum > 0.0 { "better" } else { "worse" };
            format!("NEW is {which}, and unlikely to be noise (p < {ALPHA})")
        } else if self.exact && min_p(self.n) >= ALPHA {
            format!(
                "too few changed tasks ({}) to tell a change from noise: p < {ALPHA} needs at least 6",
                self.n
            )
        } else {
            format!("the difference could well be noise (p >= {ALPHA})")
        }
    }
}

/// The two-sided sign-flip p of the non-zero differences `d`, and whether
/// it is exact.
pub(crate) fn sign_flip_p(d: &[f64]) -> (f64, bool) {
    let m = d.len();
    if m == 0 {
        return (1.0, true);
    }
    let abs: Vec<f64> = d.iter().map(|x| x.abs()).collect();
    let total: f64 = abs.iter().sum();
    let observed = d.iter().sum::<f64>().abs();
    // Sums that equal the observed one in exact arithmetic may differ in
    // the last bits: count them as reaching it.
    let bar = observed - 1e-9 * total.max(1.0);
    if m <= EXACT_UP_TO {
        // Gray code: each step flips one sign, so the sum moves by 2|d_j|.
        let mut sum = total;
        let mut hits: u64 = u64::from(sum.abs() >= bar);
        let patterns: u64 = 1 << m;
        let mut signs = vec![1.0_f64; m];
        for step in 1..patterns {
            let j = step.trailing_zeros() as usize;
            sum -= 2.0 * signs[j] * abs[j];
            signs[j] = -signs[j];
            if sum.abs() >= bar {
                hits += 1;
            }
        }
        ((hits as f64 / patterns as f64).min(1.0), true)
    } else {
        let mut rng = SplitMix64(0x5b78_6469_6666_0001);
        let mut hits: u64 = 0;
        for _ in 0..RESAMPLES {
            let mut sum = 0.0;
            let mut bits = 0u64;
            for (i, a) in abs.iter().enumerate() {
                if i % 64 == 0 {
                    bits = rng.next();
                }
                if bits & 1 == 1 {
                    sum += a;
                } else {
                    sum -= a;
                }
                bits >>= 1;
            }
            if sum.abs() >= bar {
                hits += 1;
            }
        }
        ((hits as f64 + 1.0) / (RESAMPLES as f64 + 1.0), false)
    }
}

/// SplitMix64 (Steele, Lea and Flood 2014): a small generator with a fixed
/// seed, so the same reports always give the same p.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `1`, `0.0215`, `3.2e-7`: four decimals, scientific below 1e-4.
pub(crate) fn format_p(p: f64) -> String {
    if p >= 1.0 {
        "1".into()
    } else if p >= 1e-4 {
        format!("{p:.4}")
    } else if p > 0.0 {
        format!("{p:.1e}")
    } else {
        "< 1e-300".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() <= 1e-12 * expected.abs().max(1e-300)
    }

    // -- McNemar -------------------------------------------------------------

    #[test]
    fn mcnemar_known_values() {
        assert_eq!(mcnemar_exact_p(0, 0), 1.0);
        assert_eq!(mcnemar_exact_p(10, 10), 1.0);
        for (b, c, p) in [
            (0, 5, 0.0625),
            (1, 9, 0.021484375),
            (2, 8, 0.109375),
            (0, 1, 1.0),
            (0, 6, 0.03125),
            (3, 3, 1.0),
        ] {
            let got = mcnemar_exact_p(b, c);
            assert!(close(got, p), "({b}, {c}): got {got}, expected {p}");
        }
    }

    #[test]
    fn mcnemar_is_symmetric() {
        for b in 0..40 {
            for c in 0..40 {
                assert_eq!(mcnemar_exact_p(b, c), mcnemar_exact_p(c, b), "({b}, {c})");
            }
        }
    }

    #[test]
    fn mcnemar_large_n_is_finite_and_exact() {
        // References from exact rational arithmetic (Python's math.comb).
        for (b, c, p) in [
            (4900, 5100, 0.04658552770494739),
            (4950, 5050, 0.322174199795312),
            (4800, 5200, 6.593515598672442e-05),
            (40, 60, 0.05688793364098079),
            (0, 1000, 1.8665272370064378e-301),
        ] {
            let got = mcnemar_exact_p(b, c);
            assert!(
                (got - p).abs() <= 1e-10 * p,
                "({b}, {c}): got {got}, expected {p}"
            );
        }
        assert_eq!(mcnemar_exact_p(5000, 5000), 1.0);
        // Far beyond: still a number in [0, 1], never NaN.
        for (b, c) in [(0, 100_000), (49_000, 51_000), (500_000, 500_000)] {
            let p = mcnemar_exact_p(b, c);
            assert!((0.0..=1.0).contains(&p), "({b}, {c}): {p}");
        }
    }

    #[test]
    fn mcnemar_shrinks_as_the_split_gets_lopsided() {
        let ps: Vec<f64> = (0..=10).map(|b| mcnemar_exact_p(b, 20 - b)).collect();
        assert!(ps.windows(2).all(|w| w[0] <= w[1]), "{ps:?}");
    }

    #[test]
    fn interpretation_lines() {
        assert!(McNemar::of(0, 0)
            .interpretation()
            .contains("nothing to test"));
        assert!(McNemar::of(0, 6).interpretation().contains("better"));
        assert!(McNemar::of(9, 1).interpretation().contains("worse"));
        assert!(McNemar::of(0, 5).interpretation().contains("too few"));
        assert!(McNemar::of(4, 6)
            .interpretation()
            .contains("noise (p >= 0.05)"));
    }

    #[test]
    fn p_formatting() {
        assert_eq!(format_p(1.0), "1");
        assert_eq!(format_p(0.021484375), "0.0215");
        assert_eq!(format_p(6.5935e-5), "6.6e-5");
        assert_eq!(format_p(0.0), "< 1e-300");
    }

    // -- Sign-flip ---------------------------------------------------------

    #[test]
    fn sign_flip_on_0_1_scores_is_mcnemar() {
        // Up to 20 changed tasks: the exact enumeration.
        for b in 0..=10 {
            for c in 0..=10 {
                let mut d = vec![-1.0; b];
                d.extend(vec![1.0; c]);
                // Ties (unchanged tasks) change nothing.
                d.extend([0.0, 0.0]);
                let t = SignFlip::of(&d);
                let m = mcnemar_exact_p(b as u64, c as u64);
                assert!(t.exact && close(t.p, m), "({b}, {c}): {} vs {m}", t.p);
                assert_eq!((t.fell, t.rose, t.n), (b, c, b + c));
            }
        }
    }

    #[test]
    fn sign_flip_known_values() {
        // The case: one task 0.1 → 0.6, another 1.0 → 0.8. Every
        // sign pattern of (0.5, 0.2) has |sum| >= 0.3.
        let t = SignFlip::of(&[0.5, -0.2, 0.0, 0.0, 0.0]);
        assert_eq!((t.p, t.n, t.rose, t.fell), (1.0, 2, 1, 1));
        assert!(close(t.sum, 0.3));
        assert!(t.interpretation().contains("too few changed tasks (2)"));
        // (0.3, 0.1, -0.05): |sum| 0.35 is reached by 4 of the 8 patterns.
        assert!(close(SignFlip::of(&[0.3, 0.1, -0.05]).p, 0.5));
        // Six tasks all up: only the two one-sided patterns reach it.
        let up = SignFlip::of(&[0.5, 0.1, 0.2, 0.3, 0.9, 0.05]);
        assert!(close(up.p, 2.0 / 64.0), "{up:?}");
        assert!(up.interpretation().contains("NEW is better"));
        let down = SignFlip::of(&[-0.5, -0.1, -0.2, -0.3, -0.9, -0.05]);
        assert!(down.interpretation().contains("NEW is worse"));
        // The size of a change counts, not only its sign: (0.9, -0.1,
        // -0.1, -0.1) sums to 0.6, and every pattern reaches |sum| >= 0.6
        // (0.9 against at most 0.3), so p = 1, as it should with one task.
        let mixed = SignFlip::of(&[0.9, -0.1, -0.1, -0.1]);
        assert!(close(mixed.p, 1.0), "{mixed:?}");
        let none = SignFlip::of(&[0.0, 1e-15]);
        assert_eq!((none.n, none.p), (0, 1.0));
        assert!(none.interpretation().contains("nothing to test"));
    }

    #[test]
    fn sign_flip_above_the_exact_limit_draws_a_fixed_sample() {
        let all_up = vec![0.1; EXACT_UP_TO + 10];
        let t = SignFlip::of(&all_up);
        assert!(!t.exact);
        // No random pattern of 30 signs is all +: (0 + 1) / (R + 1).
        assert!(close(t.p, 1.0 / (RESAMPLES as f64 + 1.0)), "{t:?}");
        assert!(t.interpretation().contains("better"));
        let balanced: Vec<f64> = (0..40)
            .map(|i| if i % 2 == 0 { 0.25 } else { -0.25 })
            .collect();
        let b = SignFlip::of(&balanced);
        assert!(b.p > 0.9, "{b:?}");
        assert!(b.interpretation().contains("could well be noise"));
        // The same input gives the same p: the generator's seed is fixed.
        assert_eq!(SignFlip::of(&balanced).p, b.p);
        let mixed: Vec<f64> = (0..50).map(|i| (i % 7) as f64 / 10.0 - 0.2).collect();
        assert_eq!(SignFlip::of(&mixed), SignFlip::of(&mixed));
    }
}
