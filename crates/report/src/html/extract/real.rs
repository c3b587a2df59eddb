//! The record's numbers as the page reads them: a `null` in the document
//! reads as NaN in [`Real`], and the page draws no point for it.

use plumb_record::Real;

/// A finite number, or nothing (a `null` read as NaN).
pub(crate) fn num(v: Real) -> Option<f64> {
    Some(v.get()).filter(|x| x.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(num(Real::float(1.5)), Some(1.5));
        assert_eq!(num(Real::float(f64::NAN)), None);
        assert_eq!(num(Real::int(3)), Some(3.0));
    }
}
