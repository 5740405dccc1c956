//! Small descriptive statistics: mean and standard deviation, medians, weighted means, the
//! two-sided normal quantile for a confidence level, and an ordinary least-squares fit with two
//! regressors. Pure functions over slices; `None` where the input has no answer (empty, or
//! non-finite), never a panic.

use crate::StatsError;

/// Mean and sample standard deviation (`n − 1` denominator; 0 for one value) of `xs`.
/// `None` when `xs` is empty or holds a non-finite value. Units: those of `xs`.
pub fn mean_sd(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = if xs.len() > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Some((m, v.sqrt()))
}

/// The upper median of `xs` (the element at index `len / 2` after sorting; for an even count
/// the larger of the two middle values), `None` when empty.
pub fn median_u64(xs: &[u64]) -> Option<u64> {
    let mut s = xs.to_vec();
    // the element at len/2 in sorted order, without sorting the rest
    let k = s.len() / 2;
    (k < s.len()).then(|| *s.select_nth_unstable(k).1)
}

/// The upper median of the finite values of `xs` (see [`median_u64`]); `None` when none is finite.
pub fn median_f64(xs: &[f64]) -> Option<f64> {
    // the element at len/2 in `total_cmp` order, without sorting the rest: selected among
    // the values' order keys (an integer compare where `total_cmp` turns both values into
    // keys at every compare), the same element's bits
    let mut s: Vec<u64> = Vec::with_capacity(xs.len());
    s.extend(
        xs.iter()
            .filter(|x| x.is_finite())
            .map(|&x| crate::order::key(x)),
    );
    let k = s.len() / 2;
    (k < s.len()).then(|| crate::order::value(*s.select_nth_unstable(k).1))
}

/// The element at index `k` (0-based) of `values` in [`f64::total_cmp`] order, any value
/// (non-finite ones included) taken: what `select_nth_unstable_by(k, f64::total_cmp)` picks,
/// bit for bit, selected among order keys with integer compares; `None` when `k` is out of
/// range. Units: those of the values.
pub fn nth_in_total_order(values: impl Iterator<Item = f64>, k: usize) -> Option<f64> {
    let mut s: Vec<u64> = values.map(crate::order::key).collect();
    (k < s.len()).then(|| crate::order::value(*s.select_nth_unstable(k).1))
}

/// The `q` quantile of the finite values of `xs`, each weighing the same: the smallest value
/// whose share of the values at or below it reaches `q` (the inverted CDF, Hyndman & Fan type
/// 1, as [`crate::gauge::quantile`] without time weights); `None` when none is finite or `q`
/// is outside [0, 1]. Units: those of `xs`.
pub fn quantile_f64(xs: &[f64], q: f64) -> Option<f64> {
    if !(0.0..=1.0).contains(&q) {
        return None;
    }
    let mut s = finite(xs);
    if s.is_empty() {
        return None;
    }
    // the k-th smallest (1-based) with k = ceil(q n), at least 1
    let k = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    Some(*s.select_nth_unstable_by(k - 1, f64::total_cmp).1)
}

/// The median of the finite values of `xs`: the middle one, or for an even count the mean of
/// the two middle ones (so `[1, 2, 3, 40]` gives 2.5, where [`median_f64`] gives 3); `None`
/// when none is finite. Units: those of `xs`.
pub fn median_mid_f64(xs: &[f64]) -> Option<f64> {
    let mut s = finite(xs);
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    })
}

/// The finite values of `xs`, in order, in a vector sized for all of them (a filtered
/// `collect` grows by doubling, copying what it holds at every step).
fn finite(xs: &[f64]) -> Vec<f64> {
    let mut s = Vec::with_capacity(xs.len());
    s.extend(xs.iter().copied().filter(|x| x.is_finite()));
    s
}

/// `Σ value × weight / Σ weight` over `(value, weight)` pairs; `None` when the weights sum to
/// zero or less.
pub fn weighted_mean(pairs: &[(f64, f64)]) -> Option<f64> {
    let w: f64 = pairs.iter().map(|p| p.1).sum();
    (w > 0.0).then(|| pairs.iter().map(|p| p.0 * p.1).sum::<f64>() / w)
}

/// Two-sided standard-normal quantile `z` with `P(|Z| ≤ z) = confidence` (1.96 for 0.95).
///
/// # Errors
/// [`StatsError::InvalidArgument`] when `confidence` is not strictly inside (0, 1).
pub fn z_value(confidence: f64) -> Result<f64, StatsError> {
    crate::check::z_value(confidence)
}

/// An ordinary least-squares fit `y = a + b·x1 + c·x2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit2 {
    /// Intercept (units of `y`).
    pub a: f64,
    /// Coefficient of `x1` (units of `y` per unit of `x1`).
    pub b: f64,
    /// Coefficient of `x2` (units of `y` per unit of `x2`).
    pub c: f64,
    /// Coefficient of determination (0 when `y` does not vary).
    pub r2: f64,
    /// Rows used.
    pub n: usize,
}

/// Rows a fit needs before it is attempted (twice the parameters).
pub const MIN_FIT_ROWS: usize = 6;

/// Least squares over `(x1, x2, y)` rows: the 3×3 normal equations, columns scaled to their
/// largest magnitude for conditioning, solved by Gaussian elimination with partial pivoting.
/// `None` with fewer than [`MIN_FIT_ROWS`] rows, a singular system (a regressor that does not
/// vary) or a non-finite result.
pub fn least_squares_2(rows: &[(f64, f64, f64)]) -> Option<Fit2> {
    let n = rows.len();
    if n < MIN_FIT_ROWS {
        return None;
    }
    let s1 = rows.iter().map(|r| r.0.abs()).fold(0.0, f64::max).max(1.0);
    let s2 = rows.iter().map(|r| r.1.abs()).fold(0.0, f64::max).max(1.0);
    let mut m = [[0.0f64; 4]; 3];
    for &(x1, x2, y) in rows {
        let v = [1.0, x1 / s1, x2 / s2];
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += v[i] * v[j];
            }
            m[i][3] += v[i] * y;
        }
    }
    for col in 0..3 {
        let piv = (col..3).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[piv][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, piv);
        let pivot_row = m[col];
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(pivot_row.iter()).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    let a = m[0][3] / m[0][0];
    let b = m[1][3] / m[1][1] / s1;
    let c = m[2][3] / m[2][2] / s2;
    let mean = rows.iter().map(|r| r.2).sum::<f64>() / n as f64;
    let ss_tot: f64 = rows.iter().map(|r| (r.2 - mean).powi(2)).sum();
    let ss_res: f64 = rows
        .iter()
        .map(|r| (r.2 - (a + b * r.0 + c * r.1)).powi(2))
        .sum();
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        0.0
    };
    [a, b, c, r2]
        .iter()
        .all(|x| x.is_finite())
        .then_some(Fit2 { a, b, c, r2, n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_sd_of_known_values() {
        let (m, sd) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).expect("values");
        assert_eq!(m, 5.0);
        assert!((sd - 2.138_089_935_299_395).abs() < 1e-12);
        assert_eq!(mean_sd(&[3.0]), Some((3.0, 0.0)));
        assert_eq!(mean_sd(&[]), None);
        assert_eq!(mean_sd(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn medians_and_weighted_mean() {
        assert_eq!(median_u64(&[5, 1, 3]), Some(3));
        assert_eq!(median_u64(&[4, 1, 3, 2]), Some(3));
        assert_eq!(median_u64(&[]), None);
        assert_eq!(median_f64(&[f64::NAN, 2.0, 1.0]), Some(2.0));
        assert_eq!(median_f64(&[4.0, 1.0, 3.0, 2.0, 3.0]), Some(3.0));
        assert_eq!(median_f64(&[4.0, 1.0, 3.0, 2.0]), Some(3.0));
        assert_eq!(median_f64(&[f64::INFINITY]), None);
        // the element `select_nth_unstable_by(total_cmp)` picks, bit for bit: zeros of both
        // signs, ties, rates
        for n in [1usize, 2, 7, 100, 1001] {
            let xs: Vec<f64> = (0..n)
                .map(|i| match i % 4 {
                    0 => -0.0,
                    1 => 0.0,
                    2 => ((i * 7919) % 97) as f64 * 1.37,
                    _ => -(((i * 31) % 13) as f64),
                })
                .collect();
            let mut by_cmp = xs.clone();
            let k = by_cmp.len() / 2;
            let want = *by_cmp.select_nth_unstable_by(k, f64::total_cmp).1;
            assert_eq!(median_f64(&xs).map(f64::to_bits), Some(want.to_bits()));
            let mut with_nan = xs.clone();
            with_nan.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
            for k in [0, with_nan.len() / 2, with_nan.len() - 1] {
                let mut by_cmp = with_nan.clone();
                let want = *by_cmp.select_nth_unstable_by(k, f64::total_cmp).1;
                let got = nth_in_total_order(with_nan.iter().copied(), k);
                assert_eq!(got.map(f64::to_bits), Some(want.to_bits()));
            }
            assert_eq!(nth_in_total_order(xs.iter().copied(), xs.len()), None);
        }
        assert_eq!(median_mid_f64(&[40.0, 1.0, 2.0, 1.5]), Some(1.75));
        assert_eq!(median_mid_f64(&[3.0, f64::NAN, 1.0, 2.0]), Some(2.0));
        assert_eq!(median_mid_f64(&[7.0]), Some(7.0));
        assert_eq!(median_mid_f64(&[f64::NAN]), None);
        assert_eq!(median_mid_f64(&[]), None);
        assert_eq!(weighted_mean(&[(10.0, 1.0), (20.0, 3.0)]), Some(17.5));
        assert_eq!(weighted_mean(&[(10.0, 0.0)]), None);
    }

    #[test]
    fn z_for_95_percent() {
        assert!((z_value(0.95).expect("z") - 1.959_963_984_540_054).abs() < 1e-9);
        assert!(z_value(1.0).is_err());
    }

    #[test]
    fn exact_plane_is_recovered() {
        // y = 0.02 + 0.001 x1 + 1e-7 x2 on a grid: an exact fit with R² = 1.
        let rows: Vec<(f64, f64, f64)> = (1..=4)
            .flat_map(|i| (1..=3).map(move |j| (i as f64 * 10.0, j as f64 * 50_000.0)))
            .map(|(x1, x2)| (x1, x2, 0.02 + 0.001 * x1 + 1e-7 * x2))
            .collect();
        let f = least_squares_2(&rows).expect("fit");
        assert!((f.a - 0.02).abs() < 1e-9 && (f.b - 0.001).abs() < 1e-9);
        assert!((f.c - 1e-7).abs() < 1e-12 && (f.r2 - 1.0).abs() < 1e-9);
        assert_eq!(f.n, 12);
        assert_eq!(least_squares_2(&rows[..5]), None);
        // x2 constant: singular.
        let flat: Vec<_> = rows.iter().map(|r| (r.0, 7.0, r.2)).collect();
        assert_eq!(least_squares_2(&flat), None);
    }

    #[test]
    fn quantile_of_equal_weights() {
        let xs = [5.0, 1.0, 4.0, 2.0, 3.0, f64::NAN];
        assert_eq!(quantile_f64(&xs, 0.5), Some(3.0));
        assert_eq!(quantile_f64(&xs, 0.9), Some(5.0));
        assert_eq!(quantile_f64(&xs, 0.2), Some(1.0));
        assert_eq!(quantile_f64(&xs, 0.0), Some(1.0));
        assert_eq!(quantile_f64(&xs, 1.0), Some(5.0));
        assert_eq!(quantile_f64(&[], 0.5), None);
        assert_eq!(quantile_f64(&xs, 1.5), None);
    }
}
