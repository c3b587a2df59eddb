//! The page: one self-contained HTML document from one or more `-J`
//! documents ([`render`]): the comparison of the tests among them first
//! ([`compare_section`]), then each document's panels. It loads nothing:
//! inline SVG and CSS, no script, and a Content-Security-Policy that
//! forbids any request.

use std::fmt::Write as _;

use super::charts::compare_chart;
use super::extract::bad::BadDocument;
use super::extract::{Document, Input};
use super::panels::PANELS;
use super::style::CSS;
use crate::chart::esc;
use crate::format::rate;

/// The whole page for one or more documents.
pub fn render(inputs: &[Input]) -> Result<String, BadDocument> {
    let docs: Vec<Document> = inputs
        .iter()
        .map(|i| Document::of(i).map_err(|e| BadDocument(format!("{}: {e}", i.name))))
        .collect::<Result<_, _>>()?;
    // Only tests are compared: a `plumb top` log or a live-connections page
    // has no test's throughput, limit or verdict to set beside one (its
    // column and line were empty).
    let tests: Vec<&Document> = docs.iter().filter(|d| d.is_test()).collect();
    let title = if docs.len() == 1 {
        format!("plumb report: {}", docs[0].name)
    } else if tests.len() == docs.len() {
        format!("plumb report: {} runs compared", docs.len())
    } else {
        format!("plumb report: {} documents", docs.len())
    };
    let mut s = head(&title);
    if tests.len() > 1 {
        s.push_str(&compare_section(&tests));
    }
    for d in &docs {
        let _ = write!(
            s,
            "<article class=\"run\"><h2>{}</h2><p class=\"sub\">{}</p>",
            esc(&d.name),
            esc(&d.run.producer)
        );
        for panel in PANELS {
            if let Some(html) = panel(d) {
                s.push_str(&html);
            }
        }
        s.push_str("</article>");
    }
    s.push_str("<footer>Written by plumb report. Everything on this page is inline: it loads nothing.</footer></body></html>\n");
    Ok(s)
}

/// The page's head and title, up to the first section: the stylesheet
/// inline and a Content-Security-Policy that forbids any request.
pub fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"color-scheme\" content=\"light dark\">\
         <title>{}</title><style>{CSS}</style></head><body><h1>{}</h1>",
        esc(title),
        esc(title)
    )
}

/// The tests side by side: their throughput overlaid, and a table of each
/// one's limit, rates, verdict, Linux fix and writer.
pub fn compare_section(docs: &[&Document]) -> String {
    let mut s = String::from("<section class=\"compare\"><h2>Compared</h2>");
    s.push_str(&compare_chart(docs).to_html());
    s.push_str("<table class=\"compare\"><tr><th></th>");
    for d in docs {
        let _ = write!(s, "<th>{}</th>", esc(&d.name));
    }
    s.push_str("</tr>");
    type Cell = fn(&Document) -> String;
    let rows: [(&str, Cell); 6] = [
        ("limit", |d| {
            d.diagnosis
                .as_ref()
                .and_then(|g| g.limit.as_deref())
                .map_or("–".into(), |l| l.replace('_', " "))
        }),
        ("measured", |d| {
            d.diagnosis
                .as_ref()
                .and_then(|g| g.measured_bps)
                .or(d.received_bps)
                .map_or("–".into(), rate)
        }),
        ("predicted", |d| {
            d.diagnosis
                .as_ref()
                .and_then(|g| g.predicted_bps)
                .or(d.model_predicted_bps)
                .map_or("–".into(), rate)
        }),
        ("verdict", |d| {
            d.diagnosis
                .as_ref()
                .and_then(|g| g.summary.clone())
                .unwrap_or_else(|| "–".into())
        }),
        ("fix (Linux)", |d| {
            d.diagnosis
                .as_ref()
                .and_then(|g| g.linux_fix())
                .map_or("–".into(), |f| {
                    let e = f
                        .expected_bps
                        .map_or(String::new(), |e| format!(" → about {}", rate(e)));
                    format!("{}{e}", f.note)
                })
        }),
        ("written by", |d| {
            d.version.clone().unwrap_or_else(|| "–".into())
        }),
    ];
    for (name, f) in rows {
        let _ = write!(s, "<tr><th>{name}</th>");
        for d in docs {
            let _ = write!(s, "<td>{}</td>", esc(&f(d)));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table></section>");
    s
}
