// Issue 22, "Managed Instances": a burst on the queue of a Lambda Managed Instances function, through the CLI
// against LocalStack. The Lambda test endpoint models its capacity as AWS documents it ("If your traffic more than
// doubles within 5 minutes, you may see throttles": "Scaling Lambda Managed Instances",
// https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-scaling.html; test/support/lambda-endpoint/
// managed-instances.ts), with a window of 4 s instead of 5 minutes. The ramp is measured from the endpoint's own
// record of each invocation's start and end, not from anything the daemon reports, on a function without that model
// (whose capacity would hold the ramp by throttling whatever the daemon does).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bodies, countMessages, createQueueWithDlq, sendMessages } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { eventRecords, functionFixture } from '../support/functions.ts';
import { freePort, get, sample } from '../support/http.ts';
import { startLambdaEndpoint, type InvocationRecord, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

const WINDOW_MS = 4_000;
const BASE = 2;
const MESSAGES = 320;

/** Invocations of `fn` running at `t` (epoch ms), by the endpoint's records. */
function concurrencyAt(records: readonly InvocationRecord[], t: number): number {
  return records.filter((r) => r.startedAt <= t && (r.endedAt ?? Infinity) > t).length;
}

describe('Managed Instances: the growth cap under a burst', { timeout: 180_000 }, () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    const managedInstances = { baseConcurrency: BASE, windowMs: WINDOW_MS };
    endpoint = await startLambdaEndpoint({
      functions: {
        capped: { handler: functionFixture('slow.mjs'), env: { SLOW_MS: '250' } },
        uncapped: { handler: functionFixture('slow.mjs'), env: { SLOW_MS: '250' } },
        managed: { handler: functionFixture('slow.mjs'), env: { SLOW_MS: '250' }, managedInstances },
      },
    });
  });
  after(() => endpoint.stop());

  const burst = async (fn: string, growth: string[]) => {
    const { queue: q, dlq } = await createQueueWithDlq(`wl-mi-${fn}`, 3, { VisibilityTimeout: '30' });
    const ids = await sendMessages(q.url, bodies(MESSAGES, fn));
    const port = await freePort();
    const daemon = startDaemon(endpoint.url, [
      ...['--function', fn, '--queues', q.name, '--concurrency', '16', '--adaptive-concurrency', 'on'],
      ...['--min-concurrency', String(BASE), ...growth, '--http-port', String(port)],
    ]);
    await started(daemon);
    const done = () =>
      new Set(
        endpoint.invocations
          .filter((i) => i.functionName === fn && i.status === 'success')
          .flatMap(eventRecords)
          .map((r) => r.messageId),
      );
    await endpoint.waitFor(() => done().size === MESSAGES, 150_000);
    const metrics = (await get(`http://127.0.0.1:${port}`, '/metrics'))?.body ?? '';
    assert.equal(await stopDaemon(daemon), 0);
    const records = endpoint.invocations.filter((i) => i.functionName === fn);
    const succeeded = records
      .filter((i) => i.status === 'success')
      .flatMap(eventRecords)
      .map((r) => r.messageId);
    assert.deepEqual([...new Set(succeeded)].sort(), [...ids].sort());
    assert.equal(succeeded.length, MESSAGES, 'each message processed exactly once');
    assert.equal(await countMessages(q.url), 0);
    assert.equal(await countMessages(dlq.url), 0, 'nothing went to the DLQ');
    const throttles = endpoint.rejected.filter((r) => r.functionName === fn && r.statusCode === 429);
    return { daemon, records, throttles, metrics };
  };

  it('--concurrency-growth 2x/4s: starts at --min-concurrency and at most doubles per window, as the endpoint measures it', async (t) => {
    const { records, throttles, daemon } = await burst('capped', ['--concurrency-growth', `2x/${WINDOW_MS / 1000}s`]);
    const first = Math.min(...records.map((r) => r.startedAt));
    const last = Math.max(...records.map((r) => r.endedAt ?? r.startedAt));
    const timeline: [number, number][] = [];
    for (let at = first; at <= last; at += 50) timeline.push([at, concurrencyAt(records, at)]);
    const peakBetween = (from: number, to: number) => Math.max(0, ...timeline.filter(([at]) => at >= from && at <= to).map(([, c]) => c));
    const peak = Math.max(...timeline.map(([, c]) => c));
    t.diagnostic(
      `peak ${peak}; per window: ${[0, 1, 2, 3, 4].map((w) => peakBetween(first + w * WINDOW_MS, first + (w + 1) * WINDOW_MS)).join(', ')}; ` +
        `${throttles.length} throttles; ${((last - first) / 1000).toFixed(1)} s`,
    );
    // The first window: the daemon starts idle, so no more than --min-concurrency run.
    assert.ok(peakBetween(first, first + WINDOW_MS) <= BASE, `first window peak ${peakBetween(first, first + WINDOW_MS)}`);
    // Everywhere: at most twice what ran a window earlier (its peak, give or take half a second of timing between
    // the two processes), and never less than the base.
    const checks = timeline.map(([at, c]) => ({ at, c, before: peakBetween(at - WINDOW_MS - 500, at - WINDOW_MS + 500) }));
    const tightest = checks.filter((k) => k.c > BASE).sort((a, b) => a.before * 2 - a.c - (b.before * 2 - b.c))[0];
    // How close the run came to each bound: the first moment above the base (the first window ends at +4000 ms)
    // and the 50 ms point with the least room under twice the peak a window earlier.
    const moves = daemon
      .logs()
      .filter((l) => String(l['msg']).includes('concurrency limit') || l['msg'] === 'concurrency growth cap moved the limit')
      .map((l) => `${String(l['msg']).startsWith('concurrency growth') ? 'cap' : 'adaptive'} ${String(l['from'])}->${String(l['to'])}`);
    t.diagnostic(`the daemon's limit moved: ${moves.join(', ')}`);
    const aboveBase = timeline.find(([, c]) => c > BASE)?.[0];
    t.diagnostic(
      `first above ${BASE} at +${aboveBase === undefined ? '-' : aboveBase - first} ms; tightest: ${JSON.stringify(tightest && { ...tightest, at: tightest.at - first })}`,
    );
    for (const { at, c, before } of checks) {
      assert.ok(c <= Math.max(BASE, 2 * before), `${c} in flight at +${at - first} ms, ${before} a window earlier`);
    }
    // And it does grow: the cap holds the growth, it does not stop it.
    assert.ok(peak >= 12, `peak ${peak}`);
    assert.ok(daemon.logs().some((l) => l['msg'] === 'concurrency growth cap moved the limit' && l['to'] === 4));
  });

  it('without the cap the same burst runs --concurrency at once (what the test above would see without the cap)', async (t) => {
    const { records } = await burst('uncapped', []);
    const first = Math.min(...records.map((r) => r.startedAt));
    const early = Math.max(...records.filter((r) => r.startedAt < first + WINDOW_MS).map((r) => concurrencyAt(records, r.startedAt)));
    t.diagnostic(`first window peak ${early}`);
    assert.ok(early > 2 * BASE, `first window peak ${early}`);
  });

  it('a Managed Instances function throttles a burst without the cap; the throttles carry their reason in the log and the metric', async (t) => {
    const { throttles, daemon, metrics } = await burst('managed', []);
    t.diagnostic(`${throttles.length} Managed Instances throttles`);
    assert.ok(throttles.length > 0, 'the model throttled the burst');
    // No Reason from Managed Instances here: the log carries the message, the label says none.
    const line = daemon.logs().find((l) => l['msg'] === 'function throttled, retrying');
    assert.match(String(line?.['reason']), /Lambda Managed Instances: capacity is scaling/);
    const counted = sample(metrics, 'workerless_throttled_invocations_total', { function: 'managed', reason: 'none' });
    assert.ok(counted !== undefined && counted > 0, `throttles labelled reason="none": ${counted}`);
  });
});
