//! The page's stylesheet, inline in its `<style>`: the Okabe–Ito palette
//! (light, dark and print), the verdict box, tables, the charts' lines and
//! the limit strip's marks.

/// The stylesheet.
pub const CSS: &str = r#"
:root{--bg:#fff;--fg:#1a1a1a;--muted:#5a5a5a;--grid:#dcdcdc;--card:#f4f6f8;--accent:#0072B2;
--c0:#0072B2;--c1:#E69F00;--c2:#009E73;--c3:#D55E00;--c4:#CC79A7;--c5:#56B4E9;--c6:#8C6D00;--c7:#000000;}
@media (prefers-color-scheme:dark){:root{--bg:#15181c;--fg:#e8e8e8;--muted:#a8a8a8;--grid:#3a3f45;--card:#1f242a;--accent:#56B4E9;
--c0:#56B4E9;--c1:#E69F00;--c2:#2FBF8F;--c3:#F07A3A;--c4:#E08BC0;--c5:#9AD3F5;--c6:#F0E442;--c7:#ffffff;}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:60rem;padding:1rem 1.25rem;background:var(--bg);color:var(--fg);
font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.2rem;margin:1.6rem 0 .4rem;border-bottom:1px solid var(--grid)}
h3{font-size:1rem;margin:1rem 0 .3rem}
.sub,.note{color:var(--muted)}
.verdict{background:var(--card);border-left:4px solid var(--accent);padding:.6rem .9rem;margin:.6rem 0}
.verdict.none{border-left-color:var(--grid)}.verdict.failed{border-left-color:var(--c3)}
.summary{font-size:1.1rem;font-weight:600;margin:.2rem 0 .5rem}
table{border-collapse:collapse}
.figures td{padding:.2rem 1.2rem .2rem 0;vertical-align:top}
.figures .k{display:block;font-size:.8rem;color:var(--muted)}
.kv td,.kv th{padding:.15rem .8rem .15rem 0;text-align:left;vertical-align:top;border-bottom:1px solid var(--grid)}
.kv td:first-child{color:var(--muted)}
.sysctl tr.differ td{font-weight:600}
.fixes{padding-left:1.1rem}.fixes li{margin:.3rem 0}
pre{background:var(--bg);border:1px solid var(--grid);padding:.3rem .5rem;overflow-x:auto;font-size:.85rem;margin:.2rem 0}
figure{margin:.8rem 0}figcaption{font-weight:600;font-size:.95rem}
svg.chart{width:100%;height:auto;display:block}
.grid{stroke:var(--grid);stroke-width:1}
.frame{fill:none;stroke:var(--muted);stroke-width:1}
.tick{fill:var(--muted);font-size:11px}
.axis{fill:var(--fg);font-size:12px}
.series{fill:none;stroke-width:2;stroke-linejoin:round}
.s0{stroke:var(--c0);fill:var(--c0)}.s1{stroke:var(--c1);fill:var(--c1)}.s2{stroke:var(--c2);fill:var(--c2)}.s3{stroke:var(--c3);fill:var(--c3)}
.s4{stroke:var(--c4);fill:var(--c4)}.s5{stroke:var(--c5);fill:var(--c5)}.s6{stroke:var(--c6);fill:var(--c6)}.s7{stroke:var(--c7);fill:var(--c7)}
path.series{fill:none}
.dash{stroke-dasharray:6 4}
svg[data-chart="tseq"] .series{stroke-width:2.5;stroke-linecap:round}
.sum{stroke:var(--fg);stroke-width:3}
.ref{stroke:var(--c3);stroke-width:2;stroke-dasharray:8 5}
.legend{list-style:none;padding:0;margin:.2rem 0 0;display:flex;flex-wrap:wrap;gap:.2rem 1.1rem;font-size:.85rem}
.legend svg{vertical-align:middle;margin-right:.35rem}
table.compare td,table.compare th{padding:.25rem .8rem .25rem 0;border-bottom:1px solid var(--grid);text-align:left;vertical-align:top}
table.lat td,table.lat tr:first-child th{text-align:right;font-variant-numeric:tabular-nums}
table.live td{font-size:.9rem}
.verdict.conn{border-left-color:var(--c2)}p.conn{margin:.1rem 0 .4rem}
.mark{stroke-width:1}.mark.none{fill:var(--grid);stroke:var(--grid)}.mark.idle{fill:none;stroke:var(--muted);stroke-dasharray:2 2}
.mark.other{fill:var(--muted);stroke:var(--muted)}.rowlabel{fill:var(--fg);font-size:11px}
footer{margin-top:2rem;font-size:.8rem;color:var(--muted)}
@page{size:A4;margin:14mm}
@media print{:root{--bg:#fff;--fg:#000;--muted:#444;--grid:#ccc;--card:#f2f2f2;--c0:#0072B2;--c1:#E69F00;--c2:#009E73;--c3:#D55E00;--c4:#CC79A7;--c5:#56B4E9;--c6:#8C6D00;--c7:#000}
body{max-width:none;padding:0;font-size:10.5pt}figure,.verdict,table{break-inside:avoid}h2{break-after:avoid}details{display:block}details>*{display:block}}
"#;
