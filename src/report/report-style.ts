/** The report page's stylesheet (inlined: the page makes no request). */
export const REPORT_STYLE = `
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #f6f8fa; --card: #ffffff; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px; background: var(--bg); color: var(--fg); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header, section.card, footer { max-width: 1360px; margin: 0 auto 16px; }
header { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; }
h1 { margin: 0 0 12px; font-size: 22px; }
h1 .product { font-size: 14px; font-weight: normal; color: var(--muted); margin-left: 8px; }
h2 { margin: 0 0 6px; font-size: 17px; }
dl.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 6px 24px; margin: 0; }
dl.facts div { display: flex; gap: 10px; }
dt { flex: 0 0 105px; color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
section.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; }
.chart { position: relative; width: 100%; margin: 8px 0 12px; }
.note { color: var(--muted); margin: 4px 0 8px; font-size: 13px; }
.empty { font-size: 15px; padding: 12px 14px; background: #fff8e1; border: 1px solid #ffe082; border-radius: 6px; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 5px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #f0f3f6; font-weight: 600; white-space: nowrap; }
th.st { white-space: normal; min-width: 5.5em; }
.pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 12px; }
section.attention { border-left: 5px solid #b42318; }
section.attention.quiet { border-left-color: #1a7f37; }
ul.circuits { margin: 6px 0 10px; padding-left: 20px; }
ul.circuits li { margin-bottom: 6px; }
span.error { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; color: var(--muted); font-weight: normal; overflow-wrap: anywhere; }
details > summary { cursor: pointer; color: var(--muted); margin: 4px 0 8px; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { overflow-wrap: anywhere; min-width: 9em; }
td.model { overflow-wrap: anywhere; min-width: 13em; }
td.status { white-space: nowrap; }
td.error { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; min-width: 16em; }
td.time { white-space: nowrap; font-variant-numeric: tabular-nums; }
.zero { color: #8c959f; }
.bad { color: #b42318; font-weight: 600; }
.warn { color: #9a6700; font-weight: 600; }
.good { color: #1a7f37; font-weight: 600; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; vertical-align: baseline; }
.mark.esc { color: #ffb300; -webkit-text-stroke: 0.6px #6d4c00; }
.mark.open { color: #4527a0; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; background: #eff1f3; padding: 1px 4px; border-radius: 4px; }
footer { color: var(--muted); font-size: 12px; }
@media print { body { background: #fff; padding: 0; } header, section.card { border: none; break-inside: avoid; } }
`;
