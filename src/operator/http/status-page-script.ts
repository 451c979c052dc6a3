/**
 * The status page's script (src/operator/http/status-page.ts serves it inline, allowed by its hash in the page's
 * Content-Security-Policy): polls status.json every 2 s and draws it, every value through textContent or
 * setAttribute, never innerHTML.
 */
export const STATUS_PAGE_SCRIPT = `
'use strict';
(function () {
  var POLL_MS = 2000;
  var SVG = 'http://www.w3.org/2000/svg';
  var W = 160, H = 32;
  var rows = new Map(); // queue name -> row parts; never looked up by selector, so any name is safe
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svgEl(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function fmtRate(v) { return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2); }
  function fmtTime(ms) { return new Date(ms).toLocaleTimeString(); }
  function fmtDuration(ms) {
    var s = Math.max(0, Math.floor(ms / 1000)), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    return d > 0 ? d + 'd ' + h + 'h' : h > 0 ? h + 'h ' + m + 'm' : m > 0 ? m + 'm ' + (s % 60) + 's' : s + 's';
  }
  function fmtWindow(ms) { return ms >= 60000 ? Math.round(ms / 60000) + ' min' : Math.round(ms / 1000) + ' s'; }

  // Messages per second over the current bucket and the two before it, divided by the time they really cover,
  // so the rate neither dips at the start of a bucket nor waits for it to end.
  function rate(q, snap) {
    var recent = q.buckets.slice(-3);
    if (recent.length === 0) return 0;
    var sum = 0;
    for (var i = 0; i < recent.length; i++) sum += recent[i].invoked;
    var span = Math.max(1000, snap.now - recent[0].t);
    return sum / (span / 1000);
  }
  function total(q, field) {
    var sum = 0;
    for (var i = 0; i < q.buckets.length; i++) sum += q.buckets[i][field];
    return sum;
  }
  // Points of a sparkline over the buckets, scaled to max (at least 1 so a flat zero line sits on the axis).
  function points(values, max) {
    var n = values.length, out = [];
    for (var i = 0; i < n; i++) {
      var x = n > 1 ? (i * W) / (n - 1) : W;
      var y = H - 1 - (values[i] / max) * (H - 2);
      out.push(x.toFixed(1) + ',' + y.toFixed(1));
    }
    return out.join(' ');
  }
  function chart(name, series, title) {
    var svg = svgEl('svg', { 'data-chart': name, viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none', role: 'img' });
    var t = svgEl('title', {});
    t.textContent = title;
    svg.appendChild(t);
    svg.appendChild(svgEl('line', { 'class': 'axis', x1: 0, y1: H - 0.5, x2: W, y2: H - 0.5 }));
    var lines = {};
    for (var i = 0; i < series.length; i++) {
      lines[series[i]] = svgEl('polyline', { 'data-series': series[i], points: '' });
      svg.appendChild(lines[series[i]]);
    }
    return { svg: svg, lines: lines, title: t };
  }

  // A row's cells and charts; the queue rows live in #queues, the summary row in #summary.
  function makeRow(name, attrs) {
    var tr = el('tr', attrs);
    var r = {
      tr: tr,
      cells: {
        name: el('td', { 'class': 'queue', 'data-field': 'name' }, name),
        rate: el('td', { 'class': 'num', 'data-field': 'rate' }),
        inFlight: el('td', { 'class': 'num', 'data-field': 'inFlight' }),
        errors: el('td', { 'class': 'num', 'data-field': 'errors' }),
        throttles: el('td', { 'class': 'num', 'data-field': 'throttles' }),
      },
      throughput: chart('throughput', ['invoked'], 'messages per second'),
      errors: chart('errors', ['throttled', 'failed'], 'errors and throttles per bucket'),
    };
    var c1 = el('td', {}), c2 = el('td', {});
    c1.appendChild(r.throughput.svg);
    c2.appendChild(r.errors.svg);
    tr.append(r.cells.name, r.cells.rate, r.cells.inFlight, r.cells.errors, r.cells.throttles, c1, c2);
    return r;
  }
  function row(name) {
    var r = rows.get(name);
    if (r) return r;
    r = makeRow(name, { 'data-queue': name });
    rows.set(name, r);
    return r;
  }

  function renderQueue(q, snap) {
    fill(row(q.name), q, snap);
  }
  function fill(r, q, snap) {
    var failed = total(q, 'failed'), throttled = total(q, 'throttled');
    r.cells.rate.textContent = fmtRate(rate(q, snap));
    r.cells.inFlight.textContent = String(q.inFlight);
    r.cells.errors.textContent = String(failed);
    r.cells.throttles.textContent = String(throttled);
    r.cells.errors.classList.toggle('hot', failed > 0);
    r.cells.throttles.classList.toggle('hot', throttled > 0);

    // Throughput per bucket as a rate; the current bucket over the part of it that has passed.
    var rates = q.buckets.map(function (b) {
      var span = Math.min(snap.bucketMs, Math.max(1000, snap.now - b.t));
      return b.invoked / (span / 1000);
    });
    var maxRate = Math.max.apply(null, rates.concat([1]));
    r.throughput.lines.invoked.setAttribute('points', points(rates, maxRate));
    r.throughput.svg.setAttribute('data-max', String(Math.max.apply(null, rates.concat([0]))));
    r.throughput.title.textContent = 'messages per second, peak ' + fmtRate(Math.max.apply(null, rates.concat([0])));

    var f = q.buckets.map(function (b) { return b.failed; });
    var t = q.buckets.map(function (b) { return b.throttled; });
    var maxErr = Math.max.apply(null, f.concat(t, [1]));
    r.errors.lines.failed.setAttribute('points', points(f, maxErr));
    r.errors.lines.throttled.setAttribute('points', points(t, maxErr));
    r.errors.svg.setAttribute('data-max', String(Math.max.apply(null, f.concat(t, [0]))));
    r.errors.title.textContent = 'errors (red) and throttles (orange) per ' + fmtWindow(snap.bucketMs) + ', peak ' + Math.max.apply(null, f.concat(t, [0]));
  }

  // Temporal spillover's task queues; rebuilt each time (a handful of rows), names only through textContent.
  function renderTaskQueues(list) {
    var fresh = [];
    for (var i = 0; i < list.length; i++) {
      var q = list[i];
      var tr = el('tr', { 'data-task-queue': q.name, 'data-stats': q.stats });
      tr.append(
        el('td', { 'class': 'queue', 'data-field': 'name' }, q.name),
        el('td', { 'class': 'num', 'data-field': 'backlog' }, q.stats === 'known' ? String(q.backlog) : 'unknown'),
        el('td', { 'class': 'num', 'data-field': 'workersAlive' }, String(q.workersAlive))
      );
      fresh.push(tr);
    }
    var body = $('task-queues');
    body.replaceChildren.apply(body, fresh);
    $('temporal').hidden = list.length === 0;
  }

  // The fleet (--fleet-table): one line, through textContent only.
  function renderFleet(f) {
    var section = $('fleet');
    section.hidden = !f;
    if (!f) return;
    section.setAttribute('data-mode', f.mode);
    var field = function (name, text) { section.querySelector('span[data-field="' + name + '"]').textContent = text; };
    field('name', f.name);
    field('mode', f.mode);
    field('members', String(f.members.length));
    field('owned', f.owned + ' of ' + f.queues);
    field('busy', String(f.busy));
    field('share', f.concurrency === undefined ? 'its own --concurrency' : f.share + ' of --fleet-concurrency ' + f.concurrency);
  }

  function renderErrors(list) {
    var body = $('errors-body');
    var fresh = [];
    if (list.length === 0) {
      var tr = el('tr', {});
      tr.appendChild(el('td', { colspan: '5', 'class': 'empty' }, 'No errors or warnings.'));
      fresh.push(tr);
    }
    for (var i = 0; i < list.length; i++) {
      var e = list[i];
      var line = el('tr', { 'data-error': String(i) });
      var time = el('td', { 'data-field': 'time', title: new Date(e.at).toISOString() }, fmtTime(e.at));
      var msg = el('td', { 'class': 'msg', 'data-field': 'msg' }, e.msg + (e.detail ? ': ' + e.detail : ''));
      line.append(
        time,
        el('td', { 'data-field': 'queue' }, e.queue || ''),
        el('td', { 'class': 'code', 'data-field': 'code' }, e.code || ''),
        msg,
        el('td', { 'class': 'ids', 'data-field': 'ids' }, (e.messageIds || []).join(', '))
      );
      fresh.push(line);
    }
    body.replaceChildren.apply(body, fresh);
  }

  var summaryRow = null;
  function renderSummary(snap) {
    var sum = snap.summary;
    if (!summaryRow) {
      summaryRow = makeRow('all queues', { 'data-summary': '' });
      summaryRow.counts = {
        queues: el('td', { 'class': 'num', 'data-field': 'queues' }),
        active: el('td', { 'class': 'num', 'data-field': 'active' }),
        failing: el('td', { 'class': 'num', 'data-field': 'failing' }),
      };
      summaryRow.tr.insertBefore(summaryRow.counts.failing, summaryRow.tr.children[1]);
      summaryRow.tr.insertBefore(summaryRow.counts.active, summaryRow.counts.failing);
      summaryRow.tr.insertBefore(summaryRow.counts.queues, summaryRow.counts.active);
      $('summary-body').appendChild(summaryRow.tr);
    }
    summaryRow.counts.queues.textContent = String(sum.queues);
    summaryRow.counts.active.textContent = String(sum.active);
    summaryRow.counts.failing.textContent = String(sum.failing);
    summaryRow.counts.failing.classList.toggle('hot', sum.failing > 0);
    fill(summaryRow, { inFlight: sum.inFlight, buckets: sum.buckets }, snap);
  }

  function renderPage(snap) {
    var total = snap.summary.queues, from = snap.page.offset;
    var range = $('range');
    range.textContent = total === 0 ? 'no queues' : (from + 1) + '-' + (from + snap.queues.length) + ' of ' + total + ' queues';
    range.setAttribute('data-offset', String(from));
    range.setAttribute('data-total', String(total));
    $('prev').disabled = from === 0;
    $('next').disabled = from + LIMIT >= total;
  }

  function render(snap) {
    var state = $('state');
    state.textContent = snap.state;
    state.setAttribute('data-state', snap.state);
    document.title = 'workerless: ' + snap.state;
    $('function').textContent = snap.functions.length === 0 ? 'no function' : (snap.functions.length === 1 ? 'function ' : 'functions ') + snap.functions.join(', ');
    $('version').textContent = 'v' + snap.version;
    $('uptime').textContent = 'up ' + fmtDuration(snap.now - snap.startedAt);
    var windowMs = snap.bucketMs * snap.summary.buckets.length;
    $('window-errors').textContent = 'Errors (' + fmtWindow(windowMs) + ')';
    $('window-throttles').textContent = 'Throttles (' + fmtWindow(windowMs) + ')';
    // Queues removed since the last page was asked for: step back to the last page that has some.
    if (snap.queues.length === 0 && snap.page.offset > 0 && snap.summary.queues > 0) {
      offset = Math.floor((snap.summary.queues - 1) / LIMIT) * LIMIT;
      refresh();
    }
    renderSummary(snap);
    var seen = new Set(), body = $('queues');
    for (var i = 0; i < snap.queues.length; i++) {
      renderQueue(snap.queues[i], snap);
      seen.add(snap.queues[i].name);
    }
    rows.forEach(function (r, name) { if (!seen.has(name)) { r.tr.remove(); rows.delete(name); } });
    // In the answer's order (it changes as queues get busier); appending moves a row that is already there.
    for (var j = 0; j < snap.queues.length; j++) body.appendChild(rows.get(snap.queues[j].name).tr);
    $('no-queues').hidden = snap.summary.queues > 0;
    renderPage(snap);
    renderTaskQueues(snap.taskQueues || []);
    renderFleet(snap.fleet);
    renderErrors(snap.recentErrors);
    $('updated').textContent = 'updated ' + fmtTime(snap.now);
    $('conn').textContent = '';
  }

  // One page of queues per answer; a newer request wins over an older one still on its way.
  var LIMIT = 50, sort = 'busiest', offset = 0, asked = 0;
  function refresh() {
    var n = ++asked;
    var url = 'status.json?sort=' + encodeURIComponent(sort) + '&offset=' + offset + '&limit=' + LIMIT;
    return fetch(url, { cache: 'no-store' })
      .then(function (res) {
        if (!res.ok) throw new Error('HTTP ' + res.status);
        return res.json();
      })
      .then(function (snap) { if (n === asked) render(snap); })
      .catch(function (err) {
        $('conn').textContent = 'status unavailable (' + (err && err.message ? err.message : String(err)) + '); retrying';
      });
  }
  function poll() {
    refresh().finally(function () { setTimeout(poll, POLL_MS); });
  }
  $('sort').addEventListener('change', function () { sort = $('sort').value; offset = 0; refresh(); });
  $('prev').addEventListener('click', function () { offset = Math.max(0, offset - LIMIT); refresh(); });
  $('next').addEventListener('click', function () { offset += LIMIT; refresh(); });
  poll();
})();
`;
