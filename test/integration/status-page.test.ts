import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { chromium, type Browser, type Page } from 'playwright-core';
import { STATUS_PAGE_HTML } from '../../src/http/status-page.ts';
import type { MetricDatum } from '../../src/metrics/metrics-sink.ts';
import { SQS_METRICS } from '../../src/metrics/names.ts';
import type { DaemonState } from '../../src/status/snapshot.ts';
import { RecentErrors, StatusRecorder } from '../../src/status/status-recorder.ts';

// The status page in Debian's Chromium, driven by playwright-core (Playwright's own browser download cannot reach
// its CDN from these machines). The real HTTP server is not wired into the CLI yet, so this test serves the page
// and a live /status.json itself, from a real StatusRecorder and RecentErrors fed over time the way the daemon
// feeds them: metric datums under the CloudWatch names, and pino log lines through a multistream.

const ROOT = new URL('../../', import.meta.url);
const SCREENSHOT = fileURLToPath(new URL('test-artifacts/status-page.png', ROOT));
/** Flags that work on these machines (see the polyglot machine notes): no sandbox as root, no GPU, and no
 * background networking, whose connections the closed network refuses. Playwright adds a fresh --user-data-dir. */
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** /usr/bin/chromium, installed from Debian's packages by scripts/chromium.sh when missing. */
function ensureChromium(): string {
  if (process.env['WORKERLESS_CHROMIUM']) return process.env['WORKERLESS_CHROMIUM'];
  const script = fileURLToPath(new URL('scripts/chromium.sh', ROOT));
  return execFileSync(script, ['ensure'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 15 * 60_000 }).trim();
}

/** Polls `check` until it stops throwing, or rethrows its last error after `timeoutMs`. */
async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await delay(100);
    }
  }
}

const datum = (metric: { cloudwatch: string }, queue: string, value: number): MetricDatum => ({
  name: metric.cloudwatch,
  unit: 'Count',
  value,
  dimensions: { Function: 'resize-images', Queue: queue },
});

const XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">';

describe('status page in headless Chromium', () => {
  let browser: Browser;
  let server: Server;
  let baseUrl: string;
  let state: DaemonState = 'starting';
  let statusRequests = 0;
  /** While set, /status.json answers 503. */
  let statusDown = false;
  const recentErrors = new RecentErrors();
  /** Moves the recorder's clock back while history is recorded, then stays 0. */
  let clockOffsetMs = 0;
  // 1 s buckets over a minute, so the test draws a full chart in a minute of (partly simulated) traffic.
  const recorder = new StatusRecorder({
    bucketMs: 1000,
    windowMs: 60_000,
    queues: ['orders-high', 'emails-low'],
    recentErrors,
    now: () => Date.now() + clockOffsetMs,
  });
  const startedAt = Date.now() - 60_000;
  const logger = pino(
    { level: 'info' },
    pino.multistream([
      { stream: new Writable({ write: (_chunk, _enc, cb) => cb() }) },
      { level: 'warn', stream: recentErrors.stream },
    ]),
  );

  before(async () => {
    const executablePath = ensureChromium();
    server = createServer((req, res) => {
      if (req.url === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(STATUS_PAGE_HTML);
      } else if (req.url === '/status.json' && statusDown) {
        res.writeHead(503).end();
      } else if (req.url === '/status.json') {
        statusRequests++;
        const snapshot = recorder.snapshot(state, { version: '0.1.0', functionName: 'resize-images', startedAt });
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(snapshot));
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath, args: CHROMIUM_FLAGS, timeout: 60_000 });
  });
  after(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  it('shows the state, a row per queue with live numbers and non-empty charts, and escaped recent errors', async () => {
    const page: Page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
    const problems: string[] = [];
    // A CSP violation (a wrong script or style hash) or a script error shows up here.
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });

    // Traffic over time, as the dispatcher records it, every 100 ms; totals kept here to compare with the page
    // by value. The first 50 s are recorded at once on a clock moved by hand, so the charts have history.
    const totals = { 'orders-high': { invoked: 0, failed: 0, throttled: 0 }, 'emails-low': { invoked: 0, failed: 0, throttled: 0 } };
    let tick = 0;
    const step = () => {
      tick++;
      const high = 3 + (tick % 70 < 35 ? tick % 35 : 35 - (tick % 35)) / 5; // a slow saw-tooth, so the line is not flat
      recorder.record(datum(SQS_METRICS.polled, 'orders-high', high));
      recorder.record(datum(SQS_METRICS.invoked, 'orders-high', high));
      recorder.record(datum(SQS_METRICS.deleted, 'orders-high', high));
      recorder.record(datum(SQS_METRICS.inFlight, 'orders-high', Math.round(high)));
      totals['orders-high'].invoked += high;
      recorder.record(datum(SQS_METRICS.polled, 'emails-low', 1));
      recorder.record(datum(SQS_METRICS.invoked, 'emails-low', 1));
      totals['emails-low'].invoked += 1;
      if (tick % 40 < 6) {
        recorder.record(datum(SQS_METRICS.throttled, 'emails-low', 1));
        totals['emails-low'].throttled += 1;
      }
      if (tick % 90 === 0) {
        recorder.record(datum(SQS_METRICS.failedInvoke, 'emails-low', 2));
        totals['emails-low'].failed += 2;
      }
      recorder.record(datum(SQS_METRICS.inFlight, 'emails-low', 2));
    };
    for (clockOffsetMs = -50_000; clockOffsetMs < 0; clockOffsetMs += 100) step();
    clockOffsetMs = 0;
    const traffic = setInterval(step, 100);

    try {
      await page.goto(`${baseUrl}/`);
      await eventually(async () => assert.equal(await page.locator('#state').textContent(), 'starting'));
      state = 'running';

      // Warnings and errors reach the page through the log stream, with markup kept as text and no body.
      logger.warn({ queue: 'emails-low', messageIds: ['m-7'], err: { code: 'TooManyRequestsException', message: 'Rate exceeded' } }, 'function throttled, retrying');
      logger.error(
        { queue: 'orders-high', messageIds: ['m-1', 'm-2'], err: { code: 'ResourceNotFoundException' }, reason: 'reason <b>bold</b>', body: 'SECRET-BODY' },
        XSS,
      );
      logger.info({ queue: 'orders-high' }, 'an info line that never reaches the page');

      // Rows per queue, the state, and charts that have data (a peak above zero, not just a flat line).
      const high = page.locator('tr[data-queue="orders-high"]');
      const low = page.locator('tr[data-queue="emails-low"]');
      await eventually(async () => {
        assert.equal(await page.locator('#state').textContent(), 'running');
        assert.equal(await page.locator('#state').getAttribute('data-state'), 'running');
        assert.equal(await page.locator('tbody#queues tr[data-queue]').count(), 2);
        const points = await high.locator('svg[data-chart="throughput"] polyline').getAttribute('points');
        assert.ok(points && points.split(' ').length === 60, `60 points, got ${points}`);
        assert.ok(Number(await high.locator('svg[data-chart="throughput"]').getAttribute('data-max')) > 0);
        assert.ok(Number(await low.locator('svg[data-chart="errors"]').getAttribute('data-max')) > 0);
        assert.ok(Number(await high.locator('td[data-field="rate"]').textContent()) > 10, 'orders-high runs at 30 to 100 messages/s');
      }, 15_000);
      assert.ok(await high.isVisible());
      assert.ok(await low.isVisible());
      // Some throughput points sit above the axis (y below the bottom line at 31).
      const ys = ((await high.locator('svg[data-chart="throughput"] polyline').getAttribute('points')) ?? '').split(' ').map((p) => Number(p.split(',')[1]));
      assert.ok(Math.min(...ys) < 20, `the throughput line rises: ${ys.join(' ')}`);

      // The most recent errors, newest first, as text.
      const errorRows = page.locator('#errors-body tr[data-error]');
      await eventually(async () => assert.equal(await errorRows.count(), 2));
      const newest = errorRows.nth(0);
      assert.equal(await newest.locator('td[data-field="msg"]').textContent(), `${XSS}: reason <b>bold</b>`);
      assert.match(await newest.locator('td[data-field="msg"]').innerHTML(), /^&lt;script&gt;window\.__xss = 1&lt;\/script&gt;&lt;img /);
      assert.equal(await newest.locator('td[data-field="queue"]').textContent(), 'orders-high');
      assert.equal(await newest.locator('td[data-field="code"]').textContent(), 'ResourceNotFoundException');
      assert.equal(await newest.locator('td[data-field="ids"]').textContent(), 'm-1, m-2');
      assert.equal(await errorRows.nth(1).locator('td[data-field="code"]').textContent(), 'TooManyRequestsException');
      assert.equal(await page.locator('#errors script, #errors img, #errors b').count(), 0, 'no element was made from the message');
      assert.equal(await page.evaluate('typeof window.__xss'), 'undefined', 'the injected script never ran');
      assert.doesNotMatch(await page.content(), /SECRET-BODY|an info line/);

      mkdirSync(new URL('test-artifacts/', ROOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });

      // Once traffic stops, the page's numbers equal what was recorded, by value.
      clearInterval(traffic);
      recorder.record(datum(SQS_METRICS.inFlight, 'orders-high', 0));
      const polls = statusRequests;
      await eventually(async () => {
        assert.ok(statusRequests > polls, 'the page polled again');
        assert.equal(await high.locator('td[data-field="inFlight"]').textContent(), '0');
        assert.equal(await low.locator('td[data-field="inFlight"]').textContent(), '2');
        assert.equal(await low.locator('td[data-field="errors"]').textContent(), String(totals['emails-low'].failed));
        assert.equal(await low.locator('td[data-field="throttles"]').textContent(), String(totals['emails-low'].throttled));
        assert.equal(await high.locator('td[data-field="errors"]').textContent(), '0');
      }, 6000);
      assert.ok(totals['emails-low'].failed > 0 && totals['emails-low'].throttled > 0);

      // State changes show within a poll or two (every 2 s).
      state = 'draining';
      await eventually(async () => assert.equal(await page.locator('#state').getAttribute('data-state'), 'draining'), 6000);

      assert.deepEqual(problems, []);
    } finally {
      clearInterval(traffic);
      await page.close();
    }
  });

  it('says so when status.json cannot be fetched, and recovers', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${baseUrl}/`);
      await eventually(async () => assert.equal(await page.locator('#state').getAttribute('data-state'), state));
      statusDown = true;
      await eventually(async () => assert.match((await page.locator('#conn').textContent()) ?? '', /status unavailable \(HTTP 503\)/), 6000);
      assert.equal(await page.locator('#state').getAttribute('data-state'), state, 'the last known state stays');
      statusDown = false;
      await eventually(async () => assert.equal(await page.locator('#conn').textContent(), ''), 6000);
    } finally {
      await page.close();
    }
  });
});
