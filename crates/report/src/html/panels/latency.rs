//! The latency section: what kind of test timed it, its headline figures,
//! a table of percentiles with one column per distribution (idle against
//! loaded, connect against request/response), and its charts.

use std::fmt::Write as _;

use crate::chart::esc;
use crate::format::{figures_trimmed, rate, thousands, time_us};
use crate::html::charts::{latency_chart, latency_interval_chart};
use crate::html::extract::latency::{Distribution, Figure, LatencyKind};
use crate::html::extract::Document;

impl std::fmt::Display for Figure {
    /// A count with thousands separators (`12,345`), a time by size
    /// (`8 ms`), a load with its share (`12 kbit/s (0.5 % of the load)`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Figure::Count(n) => f.write_str(&thousands(n)),
            Figure::Time(us) => f.write_str(&time_us(us)),
            Figure::Load { bps, share: None } => f.write_str(&rate(bps)),
            Figure::Load {
                bps,
                share: Some(s),
            } => write!(
                f,
                "{} ({} % of the load)",
                rate(bps),
                figures_trimmed(s * 100.0)
            ),
        }
    }
}

/// Latency: what was timed, the headline figures, percentiles side by
/// side, the CDF and the percentiles per interval.
pub fn latency_panel(d: &Document) -> Option<String> {
    let l = d.latency.as_ref()?;
    let what = match &l.kind {
        LatencyKind::Crr => "a new TCP connection per transaction (--crr)".to_string(),
        LatencyKind::RequestResponse {
            test,
            request_bytes,
            response_bytes,
        } => format!(
            "request/response ({}, {} B out, {} B back)",
            test.replace('_', " ").to_uppercase(),
            request_bytes.as_deref().unwrap_or("?"),
            response_bytes.as_deref().unwrap_or("?")
        ),
        LatencyKind::UnderLoad {
            idle_every_ms,
            loaded_every_ms,
        } => {
            let every = |m: &Option<f64>| m.map_or("–".into(), |m| time_us(m * 1e3));
            format!(
                "under load (--latency): 1-byte probes every {} before the load, every {} during it",
                every(idle_every_ms),
                every(loaded_every_ms)
            )
        }
        LatencyKind::Other => "latency".into(),
    };
    let mut s = format!(
        "<section class=\"latency\"><h3>Latency</h3><p class=\"sub\">{}</p>",
        esc(&what)
    );
    if !l.figures.is_empty() {
        s.push_str("<table class=\"figures\"><tr>");
        for (k, v) in &l.figures {
            let _ = write!(
                s,
                "<td><span class=\"k\">{}</span><b>{}</b></td>",
                esc(k),
                esc(&v.to_string())
            );
        }
        s.push_str("</tr></table>");
    }
    // Percentiles side by side, one column per distribution (idle against loaded).
    let mut ps: Vec<f64> = l
        .sets
        .iter()
        .flat_map(|d| d.percentiles.iter().map(|p| p.0))
        .collect();
    ps.sort_by(f64::total_cmp);
    ps.dedup();
    s.push_str("<table class=\"compare lat\"><tr><th></th>");
    for d in &l.sets {
        let _ = write!(s, "<th>{}</th>", esc(&d.name));
    }
    s.push_str("</tr>");
    let cell = |v: Option<f64>| v.map_or("–".to_string(), time_us);
    let row = |s: &mut String, name: &str, f: &dyn Fn(&Distribution) -> Option<String>| {
        if l.sets.iter().all(|d| f(d).is_none()) {
            return;
        }
        let _ = write!(s, "<tr><th>{}</th>", esc(name));
        for d in &l.sets {
            let _ = write!(s, "<td>{}</td>", esc(&f(d).unwrap_or_else(|| "–".into())));
        }
        s.push_str("</tr>");
    };
    row(&mut s, "min", &|d| d.min_us.map(|v| cell(Some(v))));
    for p in ps {
        let name = format!("p{p}");
        row(&mut s, &name, &|d| {
            d.percentiles
                .iter()
                .find(|x| x.0 == p)
                .map(|x| cell(Some(x.1)))
        });
    }
    row(&mut s, "max", &|d| d.max_us.map(|v| cell(Some(v))));
    row(&mut s, "mean", &|d| d.mean_us.map(|v| cell(Some(v))));
    row(&mut s, "samples", &|d| d.count.map(thousands));
    s.push_str("</table>");
    if let Some(c) = latency_chart(l) {
        s.push_str(&c.to_html());
    }
    if let Some(c) = latency_interval_chart(l) {
        s.push_str(&c.to_html());
    }
    s.push_str("</section>");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_as_the_page_shows_them() {
        assert_eq!(Figure::Count(12_345.4).to_string(), "12,345");
        assert_eq!(Figure::Time(8000.0).to_string(), "8 ms");
        let load = |share| Figure::Load { bps: 12e3, share }.to_string();
        assert_eq!(load(None), "12.0 kbit/s");
        assert_eq!(load(Some(0.005)), "12.0 kbit/s (0.5 % of the load)");
    }
}
