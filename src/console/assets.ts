/** The console's one stylesheet, served at `<base>/console.css` (the CSP allows styles from the console only). */
export const CONSOLE_CSS = `
:root { --fg:#1b1f24; --muted:#5b6470; --line:#d8dde3; --bg:#f6f8fa; --accent:#0b5cad;
  --running:#2f7bd8; --completed:#1f8a4c; --failed:#c0392b; --ambiguous:#b7791f; }
* { box-sizing:border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; color:var(--fg); background:#fff; }
header.top { display:flex; flex-wrap:wrap; gap:.4rem 1.2rem; align-items:center; padding:.6rem 1rem; background:#1b1f24; color:#fff; }
header.top a { color:#dbe7f5; text-decoration:none; }
header.top a.brand { font-weight:700; color:#fff; }
header.top nav { display:flex; flex-wrap:wrap; gap:.2rem .9rem; }
header.top nav a[aria-current] { color:#fff; border-bottom:2px solid #fff; }
header.top .who { margin-left:auto; color:#aab4c0; font-size:12px; }
header.top .who code { color:#fff; }
main { padding:1rem; max-width:1400px; margin:0 auto; }
h1 { font-size:20px; margin:.2rem 0 1rem; }
h2 { font-size:16px; margin:1.4rem 0 .5rem; }
a { color:var(--accent); }
code, pre, .mono { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12.5px; }
pre { background:var(--bg); border:1px solid var(--line); padding:.6rem; overflow:auto; max-height:24rem; white-space:pre-wrap; word-break:break-word; }
.muted { color:var(--muted); }
.table-wrap { overflow-x:auto; border:1px solid var(--line); border-radius:6px; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:.4rem .6rem; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:var(--bg); font-weight:600; white-space:nowrap; }
td.key { word-break:break-all; min-width:14rem; }
table.fields th { width:12rem; }
table.fields td { word-break:break-word; }
.badge { display:inline-block; padding:0 .45rem; border-radius:999px; font-size:12px; color:#fff; background:var(--muted); white-space:nowrap; }
.badge.running { background:var(--running); } .badge.completed { background:var(--completed); }
.badge.failed { background:var(--failed); } .badge.ambiguous { background:var(--ambiguous); }
.badge.approved { background:var(--completed); } .badge.denied { background:var(--failed); }
.banner { padding:.6rem .8rem; border-radius:6px; margin:0 0 1rem; border:1px solid; }
.banner.error { background:#fdecea; border-color:#f5c2bd; color:#7d1d12; }
.banner.ok { background:#e8f6ee; border-color:#b7e2c7; color:#14532d; }
.banner.note { background:#eef4fb; border-color:#c7dbf2; color:#173d66; }
form.filters, form.inline { display:flex; flex-wrap:wrap; gap:.5rem; align-items:flex-end; margin:0 0 1rem; }
label { display:flex; flex-direction:column; gap:.2rem; font-size:12px; color:var(--muted); }
input[type=text], input[type=search], input[type=password], textarea, select { font:inherit; padding:.35rem .5rem; border:1px solid var(--line); border-radius:4px; color:var(--fg); min-width:0; }
input[type=search].wide { width:min(40rem, 100%); }
textarea { width:100%; min-height:5rem; font-family:ui-monospace,monospace; }
button { font:inherit; padding:.4rem .8rem; border-radius:4px; border:1px solid var(--accent); background:var(--accent); color:#fff; cursor:pointer; }
button.secondary { background:#fff; color:var(--accent); }
button.danger { background:var(--failed); border-color:var(--failed); }
.cards { display:grid; grid-template-columns:repeat(auto-fit, minmax(22rem, 1fr)); gap:1rem; }
.card { border:1px solid var(--line); border-radius:6px; padding:.8rem; }
.card h3 { margin:0 0 .5rem; font-size:14px; }
.pager { display:flex; gap:1rem; margin:.8rem 0; align-items:center; }
.timeline { width:100%; height:auto; border:1px solid var(--line); border-radius:6px; background:#fff; }
.timeline text { font-size:11px; fill:var(--fg); font-family:system-ui,sans-serif; }
.timeline .axis { stroke:var(--line); }
.timeline .bar.running { fill:var(--running); } .timeline .bar.completed { fill:var(--completed); }
.timeline .bar.failed { fill:var(--failed); } .timeline .bar.ambiguous { fill:var(--ambiguous); }
.timeline .bar.awaiting_approval, .timeline .bar.approved, .timeline .bar.denied { fill:var(--muted); }
.timeline .mark.takeover { fill:#fff; stroke:#1b1f24; stroke-width:1.5; }
.timeline .mark.lost { fill:#1b1f24; }
.timeline .mark.resolved { fill:#6b21a8; }
.legend { display:flex; flex-wrap:wrap; gap:.4rem 1rem; font-size:12px; color:var(--muted); margin:.4rem 0 1rem; }
.progress { width:100%; height:1rem; }
@media (max-width: 640px) {
  main { padding:.6rem; }
  header.top .who { margin-left:0; width:100%; }
  th, td { padding:.3rem .4rem; }
  table.fields th { width:auto; }
  table.fields tr { display:flex; flex-direction:column; }
  table.fields th { border-bottom:0; padding-bottom:0; background:none; }
  .hide-narrow { display:none; }
}
`;
