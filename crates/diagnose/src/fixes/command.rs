//! Building a [`Fix`], and the `-b` argument a fix's command offers.

use plumb_record::diagnosis::Fix;

/// A fix on `os`: why (`note`), what the model expects afterwards, and the
/// commands.
pub(super) fn fix(os: &str, note: &str, expected: Option<f64>, commands: &[String]) -> Fix {
    Fix {
        os: os.into(),
        commands: commands.to_vec(),
        expected_bps: expected,
        note: note.into(),
    }
}

/// `-b` for `bps`, rounded down to three significant figures so the
/// command offers no more than was meant.
pub(super) fn rate_arg(bps: f64) -> String {
    let (div, unit) = if bps >= 1e9 {
        (1e9, "G")
    } else if bps >= 1e6 {
        (1e6, "M")
    } else {
        (1e3, "K")
    };
    let v = bps / div;
    let scale = 10f64.powi(2 - v.max(1.0).log10().floor() as i32);
    format!("{}{unit}", (v * scale).floor() / scale)
}
