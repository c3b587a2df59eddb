//! Line charts as hand-written, self-contained SVG.
//!
//! This module owns the chart model — series of points, the axes' scales
//! and ticks, the choice of display unit by range (Mbit/s against Gbit/s) —
//! and its drawing as an inline `<svg>` element whose colours come from CSS
//! classes (`s0`…`s7`, `sum`, `ref`), so that the page's stylesheet can
//! switch light and dark themes and printing. It knows nothing of iperf3's
//! documents: [`crate::html`] turns those into [`Chart`]s.

use std::fmt::Write as _;

/// What a number on an axis measures, and so which units it is shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// Bits per second.
    Rate,
    /// Bytes.
    Bytes,
    /// Milliseconds.
    Millis,
    /// Microseconds.
    Micros,
    /// Seconds.
    Seconds,
    /// A percentage, 0–100.
    Percent,
    /// A plain count.
    Count,
    /// A fraction, 0–1.
    Fraction,
    /// Reporting intervals of unknown length (`plumb top`'s, 1 s unless
    /// it ran with `-i`): whole steps, and the axis starts where the data does.
    Intervals,
}

/// An axis' range, ticks and display unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    /// The value at the axis' start.
    pub min: f64,
    /// The value at the axis' end.
    pub max: f64,
    /// Tick positions, in the quantity's base unit.
    pub ticks: Vec<f64>,
    /// Base units per display unit (1e6 for Mbit/s).
    pub divisor: f64,
    /// The display unit ("Mbit/s").
    pub unit: &'static str,
}

/// A "nice" tick step: 1, 2 or 5 times a power of ten, giving about
/// `target` intervals over `span`.
pub fn nice_step(span: f64, target: usize) -> f64 {
    if !(span.is_finite() && span > 0.0) {
        return 1.0;
    }
    let raw = span / target.max(1) as f64;
    let pow = 10f64.powf(raw.log10().floor());
    let m = raw / pow;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * pow
}

/// The display unit for values up to `max` of quantity `q`: the largest
/// prefix that keeps the top of the axis at 1 or more.
pub fn unit_for(q: Quantity, max: f64) -> (f64, &'static str) {
    let pick = |units: &[(f64, &'static str)]| {
        units
            .iter()
            .rev()
            .find(|(d, _)| max >= *d)
            .copied()
            .unwrap_or(units[0])
    };
    match q {
        Quantity::Rate => pick(&[
            (1.0, "bit/s"),
            (1e3, "kbit/s"),
            (1e6, "Mbit/s"),
            (1e9, "Gbit/s"),
        ]),
        Quantity::Bytes => pick(&[(1.0, "B"), (1e3, "kB"), (1e6, "MB"), (1e9, "GB")]),
        Quantity::Millis => pick(&[(1e-3, "µs"), (1.0, "ms"), (1e3, "s")]),
        Quantity::Micros => pick(&[(1.0, "µs"), (1e3, "ms"), (1e6, "s")]),
        Quantity::Seconds => (1.0, "s"),
        Quantity::Percent => (1.0, "%"),
        Quantity::Count => (1.0, ""),
        Quantity::Fraction => (1.0, ""),
        Quantity::Intervals => (1.0, "intervals"),
    }
}

impl Scale {
    /// A scale from `lo` to at least `hi` with about `target` nice ticks,
    /// both ends on a tick. Rates, sizes and counts start at zero (an axis
    /// that does not would exaggerate a dip).
    pub fn new(q: Quantity, lo: f64, hi: f64, target: usize) -> Scale {
        let (mut lo, mut hi) = (lo.min(hi), lo.max(hi));
        if !lo.is_finite() || !hi.is_finite() {
            (lo, hi) = (0.0, 1.0);
        }
        match q {
            Quantity::Percent => {
                lo = 0.0;
                hi = 100.0;
            }
            Quantity::Fraction => {
                lo = 0.0;
                hi = 1.0;
            }
            Quantity::Intervals => {}
            _ => lo = lo.min(0.0),
        }
        if hi - lo <= 0.0 {
            hi = lo + if hi.abs() > 0.0 { hi.abs() } else { 1.0 };
        }
        let mut step = nice_step(hi - lo, target);
        if matches!(q, Quantity::Count | Quantity::Intervals) {
            // No half segments.
            step = step.max(1.0);
        }
        let min = (lo / step).floor() * step;
        let max = (hi / step).ceil() * step;
        let n = ((max - min) / step).round() as usize;
        let ticks = (0..=n).map(|i| min + step * i as f64).collect();
        let (divisor, unit) = unit_for(q, max.abs().max(min.abs()));
        Scale {
            min,
            max,
            ticks,
            divisor,
            unit,
        }
    }

    /// Where `v` falls between 0 (min) and 1 (max).
    pub fn frac(&self, v: f64) -> f64 {
        if self.max > self.min {
            (v - self.min) / (self.max - self.min)
        } else {
            0.0
        }
    }

    /// A tick's label in the display unit, with no more decimals than the
    /// step between ticks needs.
    pub fn label(&self, v: f64) -> String {
        let step = match self.ticks.as_slice() {
            [a, b, ..] => (b - a) / self.divisor,
            _ => 1.0,
        };
        let decimals = if step >= 1.0 {
            0
        } else {
            (-step.log10()).ceil().clamp(0.0, 6.0) as usize
        };
        let x = v / self.divisor;
        let x = if x.abs() < 1e-12 { 0.0 } else { x };
        format!("{x:.decimals$}")
    }
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// One of the palette's colours, by index.
    Palette(usize),
    /// One of the palette's colours, dashed (a second quantity per stream).
    Dashed(usize),
    /// The sum of the streams: the foreground colour, thicker.
    Sum,
    /// A reference value (the model's prediction): dashed.
    Reference,
}

impl Style {
    /// The CSS classes that draw it.
    fn class(self) -> String {
        match self {
            Style::Palette(k) => format!("s{}", k % 8),
            Style::Dashed(k) => format!("s{} dash", k % 8),
            Style::Sum => "sum".into(),
            Style::Reference => "ref".into(),
        }
    }
}

/// One line on a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its name in the legend.
    pub name: String,
    /// (x, y) in the axes' base units, x ascending. A point that is not
    /// finite breaks the line (a gap: nothing was read there).
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: Style,
}

/// A line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// A short machine name (`throughput`, `rtt`, …) for tests and anchors.
    pub id: String,
    /// What the chart shows.
    pub title: String,
    /// The x axis' quantity and label.
    pub x: (Quantity, String),
    /// The y axis' quantity and label.
    pub y: (Quantity, String),
    /// The lines, drawn in order.
    pub series: Vec<Series>,
    /// Plot as steps (interval values) rather than straight lines.
    pub steps: bool,
    /// Fix the x range (comparisons share one).
    pub x_range: Option<(f64, f64)>,
}

const W: f64 = 720.0;
const H: f64 = 250.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 42.0;

/// Escapes text for HTML and SVG.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

impl Chart {
    fn extent(&self, pick: fn(&(f64, f64)) -> f64) -> (f64, f64) {
        let vals = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(pick))
            .filter(|v| v.is_finite());
        vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
    }

    /// The x axis' scale.
    pub fn x_scale(&self) -> Scale {
        let (lo, hi) = self.x_range.unwrap_or_else(|| self.extent(|p| p.0));
        let mut s = Scale::new(self.x.0, lo, hi, 8);
        if hi.is_finite() && hi > 0.0 {
            // Time runs to the last interval, not to the next tick.
            s.max = hi;
            s.ticks.retain(|t| *t <= hi + 1e-9);
        }
        s
    }

    /// The y axis' scale.
    pub fn y_scale(&self) -> Scale {
        let (lo, hi) = self.extent(|p| p.1);
        Scale::new(self.y.0, lo, hi, 5)
    }

    /// The chart as an inline `<svg>` with its legend beneath, in a `<figure>`.
    pub fn to_html(&self) -> String {
        let xs = self.x_scale();
        let ys = self.y_scale();
        let pw = W - LEFT - RIGHT;
        let ph = H - TOP - BOTTOM;
        let px = |v: f64| LEFT + xs.frac(v).clamp(0.0, 1.0) * pw;
        let py = |v: f64| TOP + (1.0 - ys.frac(v).clamp(0.0, 1.0)) * ph;
        let mut s = String::new();
        let _ = write!(
            s,
            "<figure class=\"chart-box\"><figcaption>{}</figcaption>\
             <svg class=\"chart\" data-chart=\"{}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
            esc(&self.title),
            esc(&self.id),
            esc(&self.title)
        );
        // Grid and ticks.
        for t in &ys.ticks {
            let y = py(*t);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
                 <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                W - RIGHT,
                LEFT - 6.0,
                y + 4.0,
                ys.label(*t)
            );
        }
        x_grid(&mut s, &xs, px, TOP, TOP + ph);
        let _ = write!(
            s,
            "<rect class=\"frame\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\"/>"
        );
        let unit = |sc: &Scale| {
            if sc.unit.is_empty() {
                String::new()
            } else {
                format!(" ({})", sc.unit)
            }
        };
        let _ = write!(
            s,
            "<text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}{}</text>\
             <text class=\"axis\" transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}{}</text>",
            LEFT + pw / 2.0,
            H - 6.0,
            esc(&self.x.1),
            unit(&xs),
            TOP + ph / 2.0,
            esc(&self.y.1),
            unit(&ys)
        );
        for (i, ser) in self.series.iter().enumerate() {
            let class = ser.style.class();
            let (d, last) = self.path(&ser.points, px, py);
            let _ = write!(
                s,
                "<path class=\"series {class}\" data-series=\"{i}\" d=\"{d}\"><title>{}</title></path>",
                esc(&ser.name)
            );
            if ser.points.len() == 1 && ser.style != Style::Reference {
                if let Some((cx, cy)) = last {
                    let _ = write!(
                        s,
                        "<circle class=\"dot {class}\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"3\"/>"
                    );
                }
            }
        }
        s.push_str("</svg>");
        self.legend(&mut s);
        s.push_str("</figure>");
        s
    }

    /// A series' SVG path through `points` in plot coordinates (`px`,
    /// `py`), in steps when the chart draws steps; a point that is not a
    /// number breaks the line. Also the last point drawn.
    fn path(
        &self,
        points: &[(f64, f64)],
        px: impl Fn(f64) -> f64,
        py: impl Fn(f64) -> f64,
    ) -> (String, Option<(f64, f64)>) {
        let mut d = String::new();
        let mut prev: Option<(f64, f64)> = None;
        for &(x, y) in points {
            if !(x.is_finite() && y.is_finite()) {
                prev = None;
                continue;
            }
            let (cx, cy) = (px(x), py(y));
            match prev {
                None => {
                    let _ = write!(d, "M{cx:.1} {cy:.1}");
                }
                Some(_) if self.steps => {
                    let _ = write!(d, "H{cx:.1}V{cy:.1}");
                }
                Some(_) => {
                    let _ = write!(d, "L{cx:.1} {cy:.1}");
                }
            }
            prev = Some((cx, cy));
        }
        (d, prev)
    }

    /// The legend beneath the chart: each series' name beside its line.
    fn legend(&self, s: &mut String) {
        s.push_str("<ul class=\"legend\">");
        for ser in &self.series {
            let class = ser.style.class();
            let _ = write!(
                s,
                "<li><svg class=\"key\" viewBox=\"0 0 24 8\" width=\"24\" height=\"8\"><line class=\"series {class}\" x1=\"0\" x2=\"24\" y1=\"4\" y2=\"4\"/></svg>{}</li>",
                esc(&ser.name)
            );
        }
        s.push_str("</ul>");
    }
}

/// Vertical grid lines at `xs`'s ticks from `top` to `bottom` (SVG units),
/// each labelled beneath; `px` maps a value to its x. Every chart with a
/// time axis draws it so, the line charts and `plumb top`'s limit strip.
pub(crate) fn x_grid(s: &mut String, xs: &Scale, px: impl Fn(f64) -> f64, top: f64, bottom: f64) {
    for t in &xs.ticks {
        let x = px(*t);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{bottom:.1}\"/>\
             <text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bottom + 16.0,
            xs.label(*t)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_five() {
        assert_eq!(nice_step(10.0, 5), 2.0);
        assert_eq!(nice_step(9.4e9, 5), 2e9);
        assert_eq!(nice_step(0.7, 5), 0.2);
        assert_eq!(nice_step(3.0, 8), 0.5);
        assert_eq!(nice_step(0.0, 5), 1.0);
    }

    #[test]
    fn rate_unit_follows_the_range() {
        let s = Scale::new(Quantity::Rate, 0.0, 9.4e6, 5);
        assert_eq!((s.unit, s.divisor), ("Mbit/s", 1e6));
        assert_eq!(s.ticks.first(), Some(&0.0));
        assert!(s.max >= 9.4e6 && s.max < 12e6, "{s:?}");
        assert_eq!(s.label(4e6), "4");
        let s = Scale::new(Quantity::Rate, 0.0, 23.1e9, 5);
        assert_eq!(s.unit, "Gbit/s");
        assert_eq!(s.label(s.ticks[1]), "5");
        let s = Scale::new(Quantity::Rate, 0.0, 1.2e9, 5);
        assert_eq!(s.unit, "Gbit/s");
        assert_eq!(s.label(s.ticks[1]), "0.5");
    }

    #[test]
    fn fixed_ranges_and_degenerate_input() {
        let s = Scale::new(Quantity::Percent, 3.0, 7.0, 5);
        assert_eq!((s.min, s.max), (0.0, 100.0));
        let s = Scale::new(Quantity::Count, 0.0, 0.0, 5);
        assert!(s.max > s.min);
        let s = Scale::new(Quantity::Rate, f64::INFINITY, f64::NEG_INFINITY, 5);
        assert_eq!((s.min, s.max), (0.0, 1.0));
        assert_eq!(unit_for(Quantity::Micros, 15_000.0), (1e3, "ms"));
        assert_eq!(unit_for(Quantity::Millis, 0.4), (1e-3, "µs"));
    }

    #[test]
    fn svg_has_one_path_per_series_and_escapes_names() {
        let c = Chart {
            id: "t".into(),
            title: "a <b>".into(),
            x: (Quantity::Seconds, "time".into()),
            y: (Quantity::Rate, "rate".into()),
            series: vec![
                Series {
                    name: "x&y".into(),
                    points: vec![(0.5, 1e6), (1.5, 2e6)],
                    style: Style::Palette(0),
                },
                Series {
                    name: "pred".into(),
                    points: vec![(0.0, 3e6), (2.0, 3e6)],
                    style: Style::Reference,
                },
            ],
            steps: false,
            x_range: None,
        };
        let h = c.to_html();
        assert_eq!(h.matches("data-series=").count(), 2);
        assert!(h.contains("x&amp;y") && h.contains("a &lt;b&gt;"));
        assert!(h.contains("(Mbit/s)") && h.contains("time (s)"));
        assert!(!h.contains("NaN") && !h.contains("inf"));
    }

    #[test]
    fn a_point_that_is_not_finite_breaks_the_line() {
        let c = Chart {
            id: "gap".into(),
            title: "gap".into(),
            x: (Quantity::Intervals, "time".into()),
            y: (Quantity::Rate, "rate".into()),
            series: vec![Series {
                name: "a".into(),
                points: vec![
                    (3.0, 1e6),
                    (4.0, 1e6),
                    (f64::NAN, f64::NAN),
                    (6.0, 2e6),
                    (7.0, 2e6),
                ],
                style: Style::Palette(0),
            }],
            steps: true,
            x_range: None,
        };
        let h = c.to_html();
        let d = h.split(" d=\"").nth(1).and_then(|d| d.split('"').next());
        assert_eq!(d.map(|d| d.matches('M').count()), Some(2), "{h}");
        assert!(!h.contains("NaN"));
        // Intervals: whole steps, from where the data starts, with their unit.
        let xs = c.x_scale();
        assert_eq!((xs.min, xs.max, xs.unit), (3.0, 7.0, "intervals"));
        assert!(xs.ticks.windows(2).all(|w| w[1] - w[0] >= 1.0), "{xs:?}");
        assert!(h.contains("time (intervals)"));
    }
}
