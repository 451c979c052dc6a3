import { createHash } from 'node:crypto';
import { STATUS_PAGE_SCRIPT as SCRIPT } from './status-page-script.ts';

/**
 * The status page served at GET /: one self-contained HTML document (no external resources, no framework)
 * whose script polls status.json (a StatusSnapshot, see src/operator/status/snapshot.ts) every 2 s and draws it.
 *
 * Every value from the snapshot reaches the page through textContent or setAttribute, never innerHTML, so
 * a queue name or error message holding markup shows as text. The page is served with a Content-Security-Policy
 * header (STATUS_PAGE_CSP) that allows only this script and this style (by hash) and fetches to its own origin, so
 * even a mistake in that rule could not run injected script or load anything from elsewhere, and no other site
 * may frame it.
 *
 * With thousands of queues it shows a summary of all of them and one page of queues (50, the busiest first by
 * default): status.json?sort=&offset=&limit= (src/operator/status/status-query.ts) answers only that page, so
 * neither the answer nor the page grows with the number of queues.
 *
 * Hooks for tests: #state (data-state), #updated, #conn, tr[data-queue] with td[data-field] cells and
 * svg[data-chart="throughput" | "errors"] holding polyline[data-series], the same in #summary tr[data-summary] with
 * td[data-field] queues, active, failing; #sort (a select), #prev, #next, #range (data-offset, data-total),
 * #errors tbody tr[data-error], #task-queues tr[data-task-queue] (data-stats known | unknown) with td[data-field] cells,
 * #fleet (data-mode, hidden without a fleet) with span[data-field] name, mode, members, owned, busy, share.
 */

const STYLE = `
:root { color-scheme: light dark; --ok: #1a7f37; --warn: #b35900; --bad: #cf222e; --idle: #6e7781; --info: #0969da;
  --line: #8c959f40; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; }
body { margin: 0 auto; max-width: 1100px; padding: 16px 20px 40px; }
header { display: flex; align-items: center; gap: 16px; flex-wrap: wrap; }
h1 { font-size: 20px; margin: 0; }
h2 { font-size: 15px; margin: 28px 0 8px; }
#state { font-size: 22px; font-weight: 700; padding: 4px 14px; border-radius: 6px; color: #fff; background: var(--idle);
  text-transform: uppercase; letter-spacing: .04em; }
#state[data-state="running"] { background: var(--ok); }
#state[data-state="starting"] { background: var(--info); }
#state[data-state="paused"], #state[data-state="draining"] { background: var(--warn); }
#state[data-state="failed"] { background: var(--bad); }
.meta { color: var(--idle); }
#conn { color: var(--bad); font-weight: 600; }
#conn:empty { display: none; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { white-space: nowrap; font-weight: 600; color: var(--idle); font-size: 12px; text-transform: uppercase; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.queue { font-weight: 600; word-break: break-all; }
td.hot { color: var(--bad); font-weight: 700; }
svg { display: block; width: 160px; height: 32px; overflow: visible; }
svg .axis { stroke: var(--line); stroke-width: 1; }
polyline { fill: none; stroke-width: 1.5; stroke-linejoin: round; vector-effect: non-scaling-stroke; }
polyline[data-series="invoked"] { stroke: var(--info); }
polyline[data-series="failed"] { stroke: var(--bad); }
polyline[data-series="throttled"] { stroke: var(--warn); }
.legend { font-size: 12px; color: var(--idle); }
.legend b { font-weight: 600; }
.legend .f { color: var(--bad); } .legend .t { color: var(--warn); } .legend .i { color: var(--info); }
#errors td { font-size: 13px; }
#errors td[data-field="time"], #errors td[data-field="queue"] { white-space: nowrap; }
#errors td.msg, #errors td.ids { word-break: break-word; }
#errors td.code { font-family: ui-monospace, monospace; }
.empty { color: var(--idle); font-style: italic; }
#summary td { border-bottom: 2px solid var(--line); }
.pager { display: flex; align-items: center; gap: 10px; margin: 8px 0; flex-wrap: wrap; }
.pager button, .pager select { font: inherit; padding: 2px 10px; }
#range { font-variant-numeric: tabular-nums; color: var(--idle); }
#fleet span[data-field] { font-weight: 600; }
#fleet:not([data-mode="shared"]) span[data-field="mode"] { color: var(--warn); }
`;

const BODY = `
<header>
  <h1>workerless</h1>
  <span id="state" data-state="unknown" role="status" aria-live="polite">loading</span>
  <span class="meta" id="function"></span>
  <span class="meta" id="version"></span>
  <span class="meta" id="uptime"></span>
  <span class="meta" id="updated"></span>
  <span id="conn"></span>
</header>
<h2>Queues</h2>
<table id="summary">
  <thead><tr>
    <th>All</th><th>Queues</th><th>Active</th><th>Failing</th><th>Messages/s</th><th>In flight</th><th>Errors</th><th>Throttles</th>
    <th>Throughput</th><th>Errors</th>
  </tr></thead>
  <tbody id="summary-body"></tbody>
</table>
<div class="pager">
  <label>Order <select id="sort">
    <option value="busiest">busiest first</option>
    <option value="worst">most errors first</option>
    <option value="configured">as configured</option>
  </select></label>
  <button type="button" id="prev" disabled>Previous</button>
  <span id="range" data-offset="0" data-total="0"></span>
  <button type="button" id="next" disabled>Next</button>
</div>
<table>
  <thead><tr>
    <th>Queue</th><th>Messages/s</th><th>In flight</th><th id="window-errors">Errors</th><th id="window-throttles">Throttles</th>
    <th>Throughput <span class="legend">(<b class="i">invoked</b>/s)</span></th>
    <th>Errors <span class="legend">(<b class="f">failed</b>, <b class="t">throttled</b>)</span></th>
  </tr></thead>
  <tbody id="queues"></tbody>
</table>
<p class="empty" id="no-queues">No queues yet.</p>
<section id="temporal" hidden>
<h2>Temporal task queues</h2>
<table>
  <thead><tr><th>Task queue</th><th>Backlog</th><th>Workers alive</th></tr></thead>
  <tbody id="task-queues"></tbody>
</table>
</section>
<section id="fleet" hidden>
<h2>Fleet</h2>
<p>fleet <span data-field="name"></span>: <span data-field="mode"></span>, <span data-field="members"></span> live
members; this replica keeps the idle polls of <span data-field="owned"></span> queues; <span data-field="busy"></span>
busy queues shared by all; budget <span data-field="share"></span></p>
</section>
<h2>Recent errors and warnings</h2>
<table id="errors">
  <thead><tr><th>Time</th><th>Queue</th><th>Code</th><th>Message</th><th>Message ids</th></tr></thead>
  <tbody id="errors-body"></tbody>
</table>
`;

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * The page's Content-Security-Policy, sent as a header (src/operator/http/security-headers.ts): a <meta> tag
 * cannot carry frame-ancestors.
 */
export const STATUS_PAGE_CSP: string = [
  "default-src 'none'",
  `script-src ${sha256(SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The whole status page; static, so the server can send it as is (text/html; charset=utf-8). */
export const STATUS_PAGE_HTML: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>workerless</title>
<style>${STYLE}</style>
</head>
<body>${BODY}<script>${SCRIPT}</script>
</body>
</html>
`;
