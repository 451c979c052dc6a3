// The status page at 10,000 queues, in headless Chromium (Debian's, driven by playwright-core as in
// status-page.test.ts): the HTTP server and the page as the daemon serves them, over a status recorder fed by
// 10,000 queues' worth of metrics (not 10,000 real SQS queues: what is under test is the page and /status.json).
// It must render the summary and one page of queues within a bound, page and re-sort, and keep every answer small.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { chromium, type Browser } from 'playwright-core';
import { SQS_METRICS } from '../../src/core/telemetry/metric-names.ts';
import { startHttpServer, type HttpServerHandle } from '../../src/operator/http/server.ts';
import { STATUS_PAGE_HTML } from '../../src/operator/http/status-page.ts';
import type { StatusSnapshot } from '../../src/operator/status/snapshot.ts';
import { parseStatusQuery } from '../../src/operator/status/status-query.ts';
import { StatusRecorder } from '../../src/operator/status/status-recorder.ts';

const ROOT = new URL('../../', import.meta.url);
const QUEUES = 10_000;
/** From navigation to the summary and the first page drawn; measured 0.8 s on 2 shared cores. */
const RENDER_BOUND_MS = 5_000;
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
];

function ensureChromium(): string {
  if (process.env['WORKERLESS_CHROMIUM']) return process.env['WORKERLESS_CHROMIUM'];
  const script = fileURLToPath(new URL('scripts/chromium.sh', ROOT));
  return execFileSync(script, ['ensure'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 15 * 60_000 }).trim();
}

const name = (i: number) => `tenant-${String(i).padStart(5, '0')}`;

/** 10,000 configured queues; queue i invoked i % 997 messages, every 100th failed i / 100 times, every 10th has one in flight. */
const invokedOf = (i: number) => i % 997;
const inFlightOf = (i: number) => (i % 10 === 0 ? 1 : 0);
/** The busiest first: most invoked, then most in flight, then configured order (src/operator/status/status-recorder.ts). */
const BUSIEST = Array.from({ length: QUEUES }, (_, i) => i)
  .sort((a, b) => invokedOf(b) - invokedOf(a) || inFlightOf(b) - inFlightOf(a) || a - b)
  .map(name);
const ACTIVE = Array.from({ length: QUEUES }, (_, i) => i).filter((i) => invokedOf(i) > 0 || inFlightOf(i) > 0).length;

function recorderWithTraffic(): StatusRecorder {
  const names = Array.from({ length: QUEUES }, (_, i) => name(i));
  const recorder = new StatusRecorder({ queues: names });
  const record = (metric: string, queue: string, value: number) =>
    recorder.record({ name: metric, unit: 'Count', value, dimensions: { Function: 'fn', Queue: queue } });
  for (let i = 0; i < QUEUES; i++) {
    const invoked = invokedOf(i);
    if (invoked > 0) {
      record(SQS_METRICS.polled.cloudwatch, names[i]!, invoked);
      record(SQS_METRICS.invoked.cloudwatch, names[i]!, invoked);
    }
    if (i % 100 === 0 && i > 0) record(SQS_METRICS.failedInvoke.cloudwatch, names[i]!, i / 100);
    if (inFlightOf(i) > 0) record(SQS_METRICS.inFlight.cloudwatch, names[i]!, inFlightOf(i));
  }
  return recorder;
}

describe('status page with 10,000 queues in headless Chromium', { timeout: 120_000 }, () => {
  let browser: Browser;
  let server: HttpServerHandle;

  before(async () => {
    const executablePath = ensureChromium();
    const recorder = recorderWithTraffic();
    const meta = { version: 'test', functions: ['fn'], startedAt: Date.now() };
    server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'silent' }),
      maxConnections: 32,
      routes: {
        liveness: () => ({ ok: true, reasons: [] }),
        readiness: () => ({ ok: true, reasons: [] }),
        metrics: () => Promise.resolve({ contentType: 'text/plain', body: '' }),
        status: (query) => recorder.snapshot('running', meta, parseStatusQuery(query)),
        statusPage: STATUS_PAGE_HTML,
      },
    });
    browser = await chromium.launch({ executablePath, args: CHROMIUM_FLAGS, timeout: 60_000 });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('/status.json answers a summary and one bounded page, whatever the limit asked', async () => {
    const first = await fetch(`${server.url}/status.json`);
    const text = await first.text();
    const snap = JSON.parse(text) as StatusSnapshot;
    assert.equal(snap.summary.queues, QUEUES);
    assert.equal(snap.summary.active, ACTIVE, 'invoked or in flight');
    assert.equal(snap.summary.failing, 99);
    assert.equal(snap.summary.inFlight, 1000);
    assert.deepEqual(snap.page, { sort: 'busiest', offset: 0, limit: 50 });
    assert.equal(snap.queues.length, 50);
    assert.deepEqual(
      snap.queues.map((q) => q.name),
      BUSIEST.slice(0, 50),
    );
    // About 5 KB a queue (60 buckets); the whole list would be some 50 MB every 2 s.
    assert.ok(text.length < 300_000, `default answer ${text.length} bytes`);

    const tail = await (await fetch(`${server.url}/status.json?limit=100000&offset=9960`)).text();
    const page = JSON.parse(tail) as StatusSnapshot;
    assert.equal(page.page.limit, 100);
    assert.equal(page.queues.length, 40, 'the last 40 of 10,000');
    const max = await (await fetch(`${server.url}/status.json?limit=100000`)).text();
    assert.equal((JSON.parse(max) as StatusSnapshot).queues.length, 100);
    assert.ok(max.length < 600_000, `largest answer ${max.length} bytes`);
    console.log(`/status.json at ${QUEUES} queues: ${text.length} bytes (default), ${max.length} bytes (limit 100)`);

    const worst = JSON.parse(await (await fetch(`${server.url}/status.json?sort=worst&limit=2`)).text()) as StatusSnapshot;
    assert.deepEqual(
      worst.queues.map((q) => q.name),
      [name(9900), name(9800)],
    );
  });

  it('draws the summary and the 50 busiest within the bound, pages and re-sorts, with no error on the page', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    const answers: number[] = [];
    page.on('response', (res) => {
      if (res.url().includes('status.json')) void res.body().then((b) => answers.push(b.length));
    });

    const started = performance.now();
    await page.goto(`${server.url}/`);
    // Waited for with selectors, not page functions: a string predicate is eval'd on every poll after the first,
    // which the page's CSP (no 'unsafe-eval') refuses, so the wait failed whenever the page was not drawn at once.
    await page.locator('tbody#queues tr[data-queue]').nth(49).waitFor({ timeout: RENDER_BOUND_MS });
    await page.locator('#summary tr[data-summary]').first().waitFor({ timeout: RENDER_BOUND_MS });
    const renderMs = performance.now() - started;
    console.log(`status page with ${QUEUES} queues drawn in ${renderMs.toFixed(0)} ms`);
    assert.ok(renderMs < RENDER_BOUND_MS);

    const summary = page.locator('#summary tr[data-summary]');
    assert.equal(await summary.locator('td[data-field="queues"]').textContent(), String(QUEUES));
    assert.equal(await summary.locator('td[data-field="failing"]').textContent(), '99');
    assert.equal(await summary.locator('td[data-field="inFlight"]').textContent(), '1000');
    assert.ok(Number(await summary.locator('svg[data-chart="throughput"]').getAttribute('data-max')) > 0);
    assert.equal(await page.locator('#range').textContent(), `1-50 of ${QUEUES} queues`);
    const shown = () => page.locator('tbody#queues tr[data-queue] td[data-field="name"]').allTextContents();
    assert.deepEqual(await shown(), BUSIEST.slice(0, 50));
    const elements = Number(await page.evaluate("document.querySelectorAll('*').length"));
    assert.ok(elements < 3_000, `${elements} elements on the page`);

    await page.locator('#next').click();
    await page.locator('#range[data-offset="50"]').waitFor({ timeout: 5_000 });
    assert.equal(await page.locator('tbody#queues tr[data-queue]').count(), 50);
    assert.equal(await page.locator('#range').textContent(), `51-100 of ${QUEUES} queues`);
    assert.equal(await page.locator('#prev').isDisabled(), false);
    assert.deepEqual(await shown(), BUSIEST.slice(50, 100));

    await page.locator('#sort').selectOption('worst');
    await page.locator(`tbody#queues > tr:first-child[data-queue=${JSON.stringify(name(9900))}]`).waitFor({ timeout: 5_000 });
    assert.equal(await page.locator('#range').getAttribute('data-offset'), '0');
    assert.equal(await page.locator('tbody#queues tr[data-queue]').count(), 50);
    assert.equal(await page.locator('#prev').isDisabled(), true);

    assert.ok(answers.length >= 3, `${answers.length} answers`);
    assert.ok(Math.max(...answers) < 300_000, `the page's answers: ${answers.join(', ')} bytes`);
    console.log(`status.json answers to the page: ${answers.join(', ')} bytes`);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
