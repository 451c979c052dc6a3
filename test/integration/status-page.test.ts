// The status page in Debian's Chromium (driven by playwright-core: Playwright's own browser download cannot reach
// its CDN from these machines), served by the real built CLI with --http-port while messages flow through
// LocalStack and the test Lambda endpoint. The start-up is slowed by the fault proxy so "starting" shows; a
// function that fails some messages with markup in its error type produces real recent errors; a short throttle
// window produces throttles. Saves test-artifacts/status-page.png. Also (issue 23): the security headers arrive as
// headers, a name rebound to the daemon (Chromium's --host-resolver-rules) gets 421, and another origin cannot frame it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { StatusSnapshot } from '../../src/operator/status/snapshot.ts';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createQueue, localstackEndpoint, sendMessages, type TestQueue } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { freePort } from '../support/http.ts';
import { createFleetTable, startDynalite, uniqueTableName } from '../support/dynamodb.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { sqsRecords } from '../support/message-runs.ts';

const ROOT = new URL('../../', import.meta.url);
const SCREENSHOT = fileURLToPath(new URL('test-artifacts/status-page.png', ROOT));
const REBOUND_NAME = 'rebound.attacker.test';
/** Flags that work on these machines (see the polyglot machine notes): no sandbox as root, no GPU, and no
 * background networking, whose connections the closed network refuses. Playwright adds a fresh --user-data-dir. */
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // A name of an attacker's that resolves to the daemon, as after DNS rebinding: the page must not answer it.
  `--host-resolver-rules=MAP ${REBOUND_NAME} 127.0.0.1`,
];

/** The function's error type (Lambda's errorType is the error's name), which the daemon logs and the page shows. */
const XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">';
/**
 * Fails bodies starting with "fail" with an error named XSS (its message has markup too, but the status page
 * keeps only an allow-list of log fields: errorType, not errorMessage); sleeps for "sleep-<ms>" bodies.
 */
const PAGE_FUNCTION = `export const handler = async (event) => {
  for (const r of event.Records ?? []) {
    if (r.body.startsWith('fail')) {
      const err = new Error('<script>window.__xss = 3</script> failed by body');
      err.name = process.env.ERROR_NAME;
      throw err;
    }
    const ms = Number(/^sleep-(\\d+)$/.exec(r.body)?.[1] ?? 0);
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
  }
};
`;

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

/** Collects what must never happen on the page: console errors (a CSP violation), script errors, dialogs. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  return problems;
}

describe('status page of the real CLI in headless Chromium', { timeout: 180_000 }, () => {
  let browser: Browser;
  let endpoint: LambdaEndpoint;
  let workDir: string;
  let daemon: CliRun | undefined;
  let sqsProxy: FaultProxy | undefined;

  before(async () => {
    await ensureLocalStack();
    const executablePath = ensureChromium();
    workDir = await mkdtemp(join(tmpdir(), 'wl-status-page-'));
    const handler = join(workDir, 'page-function.mjs');
    await writeFile(handler, PAGE_FUNCTION);
    endpoint = await startLambdaEndpoint({ functions: { 'page-fn': { handler, timeoutSec: 20, env: { ERROR_NAME: XSS } } } });
    browser = await chromium.launch({ executablePath, args: CHROMIUM_FLAGS, timeout: 60_000 });
  });
  after(async () => {
    await browser?.close();
    await endpoint?.stop();
    await rm(workDir, { recursive: true, force: true });
  });
  afterEach(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    daemon = undefined;
    await sqsProxy?.close();
    sqsProxy = undefined;
  });

  const invocationsOf = (q: TestQueue) => endpoint.invocations.filter((i) => sqsRecords(i).some((r) => r.eventSourceARN === q.arn));

  it('shows starting then running, a row per queue with live numbers and non-empty charts, escaped real errors, then draining', async () => {
    const high = await createQueue('wl-page-high', { VisibilityTimeout: '300' });
    const low = await createQueue('wl-page-low', { VisibilityTimeout: '300' });
    // Hold the start-up checks for 5 s, so the page (polling every 2 s) sees "starting".
    sqsProxy = await startFaultProxy({ upstream: localstackEndpoint() });
    sqsProxy.inject({ operation: 'GetQueueAttributes', fault: { kind: 'delay', ms: 5_000 }, count: 1 });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const run = (daemon = startDaemon(
      endpoint.url,
      [
        '--function',
        'page-fn',
        '--queues',
        `${high.name}:2,${low.name}:1`,
        '--concurrency',
        '2',
        '--batch-size',
        '1',
        '--http-port',
        String(port),
      ],
      {
        AWS_ENDPOINT_URL_SQS: sqsProxy.url,
      },
    ));
    const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
    const problems = watch(page);

    // Traffic while the page is open: a steady stream on high, a slower one on low with some failing messages.
    // Weighted order (2:1), so low is not starved while high always has messages.
    let ticks = 0;
    let messages = 0;
    let failing = 0;
    const send = async () => {
      ticks++;
      await sendMessages(high.url, [`ok-${ticks}-a`, `ok-${ticks}-b`]);
      messages += 2;
      if (ticks % 2 === 0) {
        const fail = ticks % 6 === 0;
        await sendMessages(low.url, [fail ? `fail-SECRET-BODY-${ticks}` : `ok-${ticks}`]);
        messages += 1;
        if (fail) failing++;
      }
    };
    let sending: Promise<void> = Promise.resolve();
    const traffic = setInterval(() => {
      sending = sending.then(send);
    }, 200);

    try {
      await until(
        async () => {
          try {
            await page.goto(`${base}/`);
            return true;
          } catch {
            return false;
          }
        },
        10_000,
        'the page served',
        100,
      );
      await eventually(async () => assert.equal(await page.locator('#state').getAttribute('data-state'), 'starting'));
      await started(run);

      // A short throttle window, so the throttles column and the errors chart have data from both sources.
      await delay(1_500);
      endpoint.setReservedConcurrency('page-fn', 0);
      await until(() => endpoint.rejected.some((r) => r.statusCode === 429), 10_000, 'a throttled invocation', 20);
      await delay(500);
      endpoint.setReservedConcurrency('page-fn', undefined);

      const highRow = page.locator(`tr[data-queue="${high.name}"]`);
      const lowRow = page.locator(`tr[data-queue="${low.name}"]`);
      await eventually(async () => {
        assert.equal(await page.locator('#state').textContent(), 'running');
        assert.equal(await page.locator('#state').getAttribute('data-state'), 'running');
        assert.equal(await page.locator('tbody#queues tr[data-queue]').count(), 2);
        const points = await highRow.locator('svg[data-chart="throughput"] polyline').getAttribute('points');
        assert.ok(points && points.split(' ').length === 60, `60 points (5 s buckets over 5 minutes), got ${points}`);
        assert.ok(Number(await highRow.locator('svg[data-chart="throughput"]').getAttribute('data-max')) > 0);
        assert.ok(Number(await lowRow.locator('svg[data-chart="errors"]').getAttribute('data-max')) > 0);
        assert.ok(Number(await highRow.locator('td[data-field="rate"]').textContent()) > 0, 'high has a rate');
      }, 20_000);
      assert.ok(await highRow.isVisible());
      assert.ok(await lowRow.isVisible());
      // Some throughput points sit above the axis (y below the bottom line at 31).
      const ys = ((await highRow.locator('svg[data-chart="throughput"] polyline').getAttribute('points')) ?? '')
        .split(' ')
        .map((p) => Number(p.split(',')[1]));
      assert.ok(Math.min(...ys) < 31, `the throughput line rises: ${ys.join(' ')}`);

      // A real function error, as the daemon logged it: its errorType (with markup) is shown as text; its
      // errorMessage is not kept by the page's allow-list, and no body ever reaches the page.
      const errorRow = page
        .locator('#errors-body tr[data-error]')
        .filter({ has: page.locator('td[data-field="msg"]', { hasText: 'function error; messages stay on the queue' }) })
        .first();
      await eventually(async () => assert.equal(await errorRow.locator('td[data-field="code"]').textContent(), XSS), 10_000);
      assert.equal(await errorRow.locator('td[data-field="msg"]').textContent(), 'function error; messages stay on the queue');
      assert.equal(await errorRow.locator('td[data-field="queue"]').textContent(), low.name);
      assert.match(await errorRow.locator('td[data-field="code"]').innerHTML(), /^&lt;script&gt;window\.__xss = 1&lt;\/script&gt;&lt;img /);
      assert.match((await errorRow.locator('td[data-field="ids"]').textContent()) ?? '', /^[0-9a-f-]{36}$/, 'the message id');
      assert.equal(await page.locator('#errors script, #errors img').count(), 0, 'no element was made from the error');
      assert.equal(await page.evaluate('typeof window.__xss'), 'undefined', 'the injected script never ran');
      assert.doesNotMatch(await page.content(), /SECRET-BODY|failed by body/);

      mkdirSync(new URL('test-artifacts/', ROOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });

      // Once traffic stops and everything settled, the page's numbers equal what happened, by value.
      clearInterval(traffic);
      await sending;
      // Batch size 1 and a 300 s visibility timeout: one invocation per message sent, failed ones not back yet.
      await until(
        () => endpoint.invocations.length === messages && endpoint.invocations.every((i) => i.status !== 'running'),
        30_000,
        `all ${messages} messages invoked`,
        50,
      );
      const failedLow = invocationsOf(low).filter((i) => i.status === 'error').length;
      await until(
        async () => {
          const snap = JSON.parse(await (await fetch(`${base}/status.json`)).text()) as StatusSnapshot;
          return snap.queues.every((q) => q.inFlight === 0);
        },
        10_000,
        'every received message settled',
        100,
      );
      const snap = JSON.parse(await (await fetch(`${base}/status.json`)).text()) as StatusSnapshot;
      const throttled = (name: string) => snap.queues.find((q) => q.name === name)!.buckets.reduce((n, b) => n + b.throttled, 0);
      assert.equal(failedLow, failing, 'every "fail" message failed, and only those');
      assert.equal(throttled(high.name) + throttled(low.name), endpoint.rejected.filter((r) => r.statusCode === 429).length);
      await eventually(async () => {
        assert.equal(await highRow.locator('td[data-field="inFlight"]').textContent(), '0');
        assert.equal(await lowRow.locator('td[data-field="inFlight"]').textContent(), '0');
        assert.equal(await lowRow.locator('td[data-field="errors"]').textContent(), String(failedLow));
        assert.equal(await highRow.locator('td[data-field="errors"]').textContent(), '0');
        assert.equal(await highRow.locator('td[data-field="throttles"]').textContent(), String(throttled(high.name)));
        assert.equal(await lowRow.locator('td[data-field="throttles"]').textContent(), String(throttled(low.name)));
      }, 6_000);

      // A slow invocation in flight keeps the drain going long enough for a poll or two (every 2 s).
      await sendMessages(high.url, ['sleep-6000']);
      await until(() => endpoint.inFlight('page-fn') === 1, 10_000, 'the slow invocation running', 20);
      run.child.kill('SIGTERM');
      await eventually(async () => assert.equal(await page.locator('#state').getAttribute('data-state'), 'draining'), 5_000);
      assert.equal((await run.exited).code, 0, run.stderr());

      assert.deepEqual(problems, []);
      console.log(
        `page showed ${messages} messages, ${failedLow} errors, ${throttled(high.name) + throttled(low.name)} throttles; screenshot ${SCREENSHOT}`,
      );
    } finally {
      clearInterval(traffic);
      await page.close();
    }
  });

  it('is served with its security headers, refuses a rebound name, and cannot be framed by another origin', async () => {
    const q = await createQueue('wl-page-headers');
    const port = await freePort();
    daemon = startDaemon(endpoint.url, ['--function', 'page-fn', '--queues', q.name, '--http-port', String(port)]);
    await started(daemon);
    // Another origin (another port) whose page frames ours, as a site that tries clickjacking would.
    const framer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><iframe id="f" src="http://127.0.0.1:${port}/"></iframe>`);
    });
    await new Promise<void>((resolve) => framer.listen(0, '127.0.0.1', resolve));
    const page = await browser.newPage();
    const problems = watch(page);
    try {
      const answer = await page.goto(`http://127.0.0.1:${port}/`);
      assert.equal(answer?.status(), 200);
      const headers = answer?.headers() ?? {};
      assert.match(headers['content-security-policy'] ?? '', /(^|; )frame-ancestors 'none'(;|$)/);
      assert.match(headers['content-security-policy'] ?? '', /(^|; )script-src 'sha256-/);
      assert.equal(headers['x-content-type-options'], 'nosniff');
      assert.equal(headers['x-frame-options'], 'DENY');
      assert.equal(headers['referrer-policy'], 'no-referrer');
      assert.equal(headers['cache-control'], 'no-store');
      // The script runs under the header's policy (no <meta> policy left): the state is drawn, no violation logged.
      await eventually(async () => assert.equal(await page.locator('#state').getAttribute('data-state'), 'running'));
      assert.equal(await page.locator('meta[http-equiv]').count(), 0);
      const json = await page.request.get(`http://127.0.0.1:${port}/status.json`);
      assert.equal(json.headers()['x-content-type-options'], 'nosniff');
      assert.equal(json.headers()['content-security-policy'], "default-src 'none'; frame-ancestors 'none'");
      assert.deepEqual(problems, []);

      // DNS rebinding: the browser resolves the attacker's name to the daemon and sends that name as Host.
      for (const path of ['/', '/status.json', '/metrics']) {
        const rebound = await page.goto(`http://${REBOUND_NAME}:${port}${path}`);
        assert.equal(rebound?.status(), 421, path);
        assert.equal(await page.locator('body').textContent(), 'misdirected request\n', path);
      }
      assert.ok(
        daemon
          .logs()
          .some(
            (l) => l['msg'] === 'HTTP requests refused: their Host is not an IP address, localhost, --http-host or in --http-allowed-hosts',
          ),
      );

      // Framed by another origin: Chromium refuses to render it (frame-ancestors 'none').
      const framing = await browser.newPage();
      const refusals: string[] = [];
      framing.on('console', (m) => {
        if (m.text().includes('frame-ancestors')) refusals.push(m.text());
      });
      try {
        await framing.goto(`http://127.0.0.1:${(framer.address() as AddressInfo).port}/`);
        await eventually(async () => assert.equal(refusals.length, 1, 'the refusal to frame'), 5_000);
        const frame = framing.frames().find((f) => f !== framing.mainFrame());
        assert.ok(frame);
        assert.equal(await frame.locator('#state').count(), 0, 'nothing of the status page rendered in the frame');
      } finally {
        await framing.close();
      }
    } finally {
      await page.close();
      framer.close();
    }
  });

  it('says so when the daemon is gone, and recovers when it is back on the same port', async () => {
    const q = await createQueue('wl-page-restart');
    const port = await freePort();
    const args = ['--function', 'page-fn', '--queues', q.name, '--http-port', String(port)];
    daemon = startDaemon(endpoint.url, args);
    await started(daemon);
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${port}/`);
      await eventually(async () => assert.equal(await page.locator('#state').getAttribute('data-state'), 'running'));
      assert.equal(await stopDaemon(daemon), 0);
      await eventually(
        async () => assert.match((await page.locator('#conn').textContent()) ?? '', /^status unavailable \(.+\); retrying$/),
        6_000,
      );
      assert.equal(await page.locator('#state').getAttribute('data-state'), 'running', 'the last known state stays');
      daemon = startDaemon(endpoint.url, args);
      await started(daemon);
      await eventually(async () => assert.equal(await page.locator('#conn').textContent(), ''), 6_000);
      assert.equal(await stopDaemon(daemon), 0);
    } finally {
      await page.close();
    }
  });

  it('shows the fleet: its name as text, its mode, the live members, the queues owned and the share (issue 40)', async () => {
    const dynalite = await startDynalite();
    const page = await browser.newPage();
    const problems = watch(page);
    try {
      const table = uniqueTableName('wl-page-fleet');
      await createFleetTable(dynalite.endpoint, table);
      const queues = await Promise.all([createQueue('wl-page-fleet'), createQueue('wl-page-fleet')]);
      const port = await freePort();
      // A fleet name may hold markup (printable, no spaces): it must reach the page as text.
      const name = '<img/src=x/onerror=window.__xss=3>';
      daemon = startDaemon(
        endpoint.url,
        [
          '--function',
          'page-fn',
          '--queues',
          queues.map((q) => q.name).join(','),
          '--fleet-table',
          table,
          '--fleet-name',
          name,
          '--fleet-concurrency',
          '7',
          '--fleet-heartbeat',
          '1s',
          '--http-port',
          String(port),
        ],
        { AWS_ENDPOINT_URL_DYNAMODB: dynalite.endpoint },
      );
      await started(daemon);
      await page.goto(`http://127.0.0.1:${port}/`);
      const field = (f: string) => page.locator(`#fleet span[data-field="${f}"]`).textContent();
      // Shared after an expiry (3 heartbeats) of watching the fleet.
      await eventually(async () => assert.equal(await page.locator('#fleet').getAttribute('data-mode'), 'shared'), 15_000);
      assert.equal(await page.locator('#fleet').isVisible(), true);
      assert.equal(await field('name'), name);
      assert.equal(await field('members'), '1');
      assert.equal(await field('owned'), '2 of 2');
      assert.equal(await field('share'), '7 of --fleet-concurrency 7');
      assert.equal(await page.evaluate(() => (globalThis as { __xss?: number }).__xss), undefined, 'the name ran no script');
      assert.deepEqual(problems, []);
      assert.equal(await stopDaemon(daemon), 0);
    } finally {
      await page.close();
      await dynalite.close();
    }
  });

  it('hides the fleet without --fleet-table', async () => {
    const q = await createQueue('wl-page-nofleet');
    const port = await freePort();
    daemon = startDaemon(endpoint.url, ['--function', 'page-fn', '--queues', q.name, '--http-port', String(port)]);
    await started(daemon);
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${port}/`);
      await eventually(async () => assert.equal(await page.locator('#state').getAttribute('data-state'), 'running'));
      assert.equal(await page.locator('#fleet').isVisible(), false);
      assert.equal(await stopDaemon(daemon), 0);
    } finally {
      await page.close();
    }
  });
});
