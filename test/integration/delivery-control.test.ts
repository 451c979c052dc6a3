// Issue 10 against LocalStack and the test Lambda endpoint, through the built CLI: retry back-off (the flags' and
// per queue), per-queue maximum, reserved minimum and rate, and filters with both non-match actions. Measured figures are logged
// (t.diagnostic) so a run shows how close they came to the targets.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bodies, countMessages, createQueue, messageCounts, sendMessages, type TestQueue } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { eventRecords, functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type InvocationRecord, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

const fromQueue = (q: TestQueue) => (inv: InvocationRecord) => eventRecords(inv).some((r) => r.eventSourceARN === q.arn);

/** The most invocations that overlapped in time, from the endpoint's own start and end times. */
function peakOverlap(invocations: readonly InvocationRecord[]): number {
  const edges = invocations.flatMap((i) => [
    { at: i.startedAt, d: 1 },
    { at: i.endedAt ?? Date.now(), d: -1 },
  ]);
  // Ends before starts at the same millisecond: a slot handed straight to the next invocation is not an overlap.
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let peak = 0;
  for (const e of edges) peak = Math.max(peak, (now += e.d));
  return peak;
}

function configFile(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), 'wl-delivery-')), 'workerless.json');
  writeFileSync(path, JSON.stringify(content));
  return path;
}

describe('delivery control against LocalStack (issue 10)', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: {
        record: { handler: functionFixture('record.mjs') },
        fail: { handler: functionFixture('fail.mjs') },
        // Separate names, so the endpoint's per-function counts belong to one test each.
        'slow-capped': { handler: functionFixture('slow.mjs'), env: { SLOW_MS: '300' } },
        'slow-shared': { handler: functionFixture('slow.mjs'), env: { SLOW_MS: '300' } },
        'record-rate': { handler: functionFixture('record.mjs') },
      },
    });
  });
  after(() => endpoint.stop());

  it('retry back-off: redeliveries follow base * 2^(receiveCount-1), capped, instead of the 30 s visibility timeout', async (t) => {
    const q = await createQueue('wl-backoff', { VisibilityTimeout: '30' });
    const [id] = await sendMessages(q.url, ['poison']);
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'fail',
      '--queues',
      q.name,
      '--retry-backoff',
      '2s',
      '--retry-backoff-max',
      '6s',
      '--retry-backoff-jitter',
      '0',
    ]);
    await started(daemon);
    const runs = () => endpoint.invocations.filter((i) => eventRecords(i).some((r) => r.messageId === id));
    await until(() => runs().length >= 5, 40_000, 'five deliveries', 100);
    assert.equal(await stopDaemon(daemon), 0);
    const attempts = runs().slice(0, 5);
    assert.deepEqual(
      attempts.map((i) => eventRecords(i)[0]!.attributes['ApproximateReceiveCount']),
      ['1', '2', '3', '4', '5'],
    );
    // Each delay is set when the failed invocation ends; the next delivery starts once it is over.
    const gaps = attempts.slice(1).map((inv, k) => (inv.startedAt - attempts[k]!.endedAt!) / 1000);
    const expected = [2, 4, 6, 6];
    t.diagnostic(`redelivery gaps ${gaps.map((g) => g.toFixed(2)).join(', ')} s; curve ${expected.join(', ')} s`);
    gaps.forEach((gap, k) =>
      assert.ok(gap >= expected[k]! - 0.2 && gap <= expected[k]! + 1.5, `gap ${k + 1}: ${gap} s, expected ${expected[k]} s`),
    );
    const set = daemon.logs().filter((l) => l['msg'] === 'retry back-off set');
    assert.deepEqual(
      set.slice(0, 4).map((l) => l['delaySec']),
      [2, 4, 6, 6],
    );
  });

  it("per-queue back-off: a queue's own curve, the flags' curve for a queue without one, the visibility timeout where it is off", async (t) => {
    // Three queues with a 10 s visibility timeout, one poison message each, one daemon. The flags give 1 s flat;
    // "own" has 3 s doubling to 6 s (its jitter, 0, from the flags); "off" has retry-backoff off.
    const own = await createQueue('wl-pq-own', { VisibilityTimeout: '10' });
    const plain = await createQueue('wl-pq-plain', { VisibilityTimeout: '10' });
    const off = await createQueue('wl-pq-off', { VisibilityTimeout: '10' });
    const ids = new Map<TestQueue, string>();
    for (const q of [own, plain, off]) ids.set(q, (await sendMessages(q.url, [`poison-${q.name}`]))[0]!);
    const config = configFile({
      'queue-options': { [own.name]: { 'retry-backoff': '3s', 'retry-backoff-max': '6s' }, [off.name]: { 'retry-backoff': 'off' } },
    });
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'fail',
      '--queues',
      `${own.name}:1,${plain.name}:1,${off.name}:1`,
      '--concurrency',
      '3',
      '--retry-backoff',
      '1s',
      '--retry-backoff-max',
      '1s',
      '--retry-backoff-jitter',
      '0',
      '--config',
      config,
    ]);
    await started(daemon);
    const runs = (q: TestQueue) => endpoint.invocations.filter((i) => eventRecords(i).some((r) => r.messageId === ids.get(q)));
    await until(() => runs(own).length >= 4 && runs(plain).length >= 4 && runs(off).length >= 3, 60_000, 'redeliveries', 100);
    assert.equal(await stopDaemon(daemon), 0);
    // Gap = from the end of a failed invocation to the start of the next delivery of the same message. Off: the
    // message returns 10 s after its receive, so a little less than 10 s after the (fast) invocation ends.
    // LocalStack makes a message visible up to about a second late (measured +0.2 to +1.0 s on every gap, here
    // and in the test above), hence the wider upper bound.
    const cases: [string, TestQueue, number[], number, number][] = [
      ['own', own, [3, 6, 6], 0.2, 1.5],
      ['plain', plain, [1, 1, 1], 0.2, 1.5],
      ['off', off, [10, 10], 1, 1.5],
    ];
    for (const [label, q, expected, early, late] of cases) {
      const attempts = runs(q).slice(0, expected.length + 1);
      assert.deepEqual(
        attempts.map((i) => eventRecords(i)[0]!.attributes['ApproximateReceiveCount']),
        expected.concat(0).map((_, k) => String(k + 1)),
        `${label}: receive counts`,
      );
      const gaps = attempts.slice(1).map((inv, k) => (inv.startedAt - attempts[k]!.endedAt!) / 1000);
      t.diagnostic(`${label}: redelivery gaps ${gaps.map((g) => g.toFixed(2)).join(', ')} s; expected ${expected.join(', ')} s`);
      gaps.forEach((gap, k) =>
        assert.ok(gap >= expected[k]! - early && gap <= expected[k]! + late, `${label} gap ${k + 1}: ${gap} s, expected ${expected[k]} s`),
      );
    }
    const delays = (q: TestQueue) =>
      daemon
        .logs()
        .filter((l) => l['msg'] === 'retry back-off set' && l['queue'] === q.name)
        .map((l) => l['delaySec']);
    assert.deepEqual(delays(own).slice(0, 3), [3, 6, 6]);
    assert.deepEqual(delays(plain).slice(0, 3), [1, 1, 1]);
    assert.deepEqual(delays(off), []);
  });

  it('maximum concurrency: a queue capped at 3 never has more than 3 invocations in flight, as the endpoint counts them', async (t) => {
    const q = await createQueue('wl-max');
    await sendMessages(q.url, bodies(30, 'm'));
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'slow-capped',
      '--queues',
      q.name,
      '--concurrency',
      '10',
      '--queue-max-concurrency',
      `${q.name}=3`,
    ]);
    await started(daemon);
    await until(async () => (await countMessages(q.url)) === 0, 30_000, 'queue drained', 200);
    assert.equal(await stopDaemon(daemon), 0);
    const peak = endpoint.peakConcurrency('slow-capped');
    t.diagnostic(
      `peak in flight ${peak} (endpoint), ${peakOverlap(endpoint.invocations.filter(fromQueue(q)))} (from start/end times), cap 3, --concurrency 10`,
    );
    assert.equal(peak, 3);
  });

  it('minimum share: two full queues in strict order, a minimum of 2 on the low one: low is served with its 2 loops while high has messages', async (t) => {
    const high = await createQueue('wl-min-high');
    const low = await createQueue('wl-min-low');
    await sendMessages(high.url, bodies(60, 'h'));
    await sendMessages(low.url, bodies(60, 'l'));
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'slow-shared',
      '--queues',
      `${high.name},${low.name}`,
      '--concurrency',
      '6',
      '--queue-min-concurrency',
      `${low.name}=2`,
    ]);
    await started(daemon);
    await endpoint.waitFor((inv) => inv.filter(fromQueue(high)).length >= 40, 30_000);
    assert.equal(await stopDaemon(daemon), 0);
    const highRuns = endpoint.invocations.filter(fromQueue(high));
    const lowRuns = endpoint.invocations.filter(fromQueue(low));
    // While high still had messages (up to its 40th invocation), low ran with exactly its minimum.
    const window = highRuns[39]!.startedAt;
    const lowEarly = lowRuns.filter((i) => i.startedAt <= window);
    const share = lowEarly.length / (lowEarly.length + 40);
    t.diagnostic(
      `low: ${lowEarly.length} invocations while high ran 40 (share ${share.toFixed(2)}, 2 of 6 loops = 0.33); peak low ${peakOverlap(lowEarly)}, peak high ${peakOverlap(highRuns.slice(0, 40))}`,
    );
    assert.equal(peakOverlap(lowEarly), 2);
    assert.equal(peakOverlap(highRuns.slice(0, 40)), 4);
    assert.ok(share >= 0.25 && share <= 0.42, `low's share ${share}`);
  });

  it('rate limit: a queue limited to 10 invocations/s is invoked at 10/s within 10%', async (t) => {
    const q = await createQueue('wl-rate');
    await sendMessages(q.url, bodies(150, 'r'));
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'record-rate',
      '--queues',
      q.name,
      '--concurrency',
      '8',
      '--queue-rate',
      `${q.name}=10`,
    ]);
    await started(daemon);
    await endpoint.waitFor((inv) => inv.filter(fromQueue(q)).length >= 90, 30_000);
    assert.equal(await stopDaemon(daemon), 0);
    const starts = endpoint.invocations.filter(fromQueue(q)).map((i) => i.startedAt);
    // Steady state: from the 15th to the 85th invocation (the first ones wait for the endpoint's cold starts).
    const rate = (85 - 15) / ((starts[85]! - starts[15]!) / 1000);
    t.diagnostic(`measured ${rate.toFixed(2)} invocations/s for a limit of 10/s`);
    assert.ok(Math.abs(rate - 10) <= 1, `rate ${rate}`);
  });

  describe("filters: the trigger's documented rules, OR of 5 patterns", () => {
    const patterns = [
      { body: { RequestCode: ['BBBB'] } },
      { body: { Region: [{ prefix: 'us-' }] } },
      { body: { Price: [{ numeric: ['>', 10, '<=', 20] }] } },
      { body: { ProductName: [{ exists: true }], Weather: [{ 'anything-but': ['Raining'] }] } },
      { body: [{ prefix: 'Result: ' }] },
    ];
    const pass = [
      '{"RequestCode":"BBBB"}',
      '{"Region":"us-east-1"}',
      '{"Price":20}',
      '{"ProductName":"x","Weather":"Sunny"}',
      'Result: ok',
    ];
    const fail = [
      '{"RequestCode":"AAAA"}',
      '{"Region":"eu-west-1"}',
      '{"Price":10}',
      '{"ProductName":"x","Weather":"Raining"}',
      '{"Weather":"Sunny"}',
      'Error: no',
      '{"Result":"x"}',
    ];

    async function run(action: 'delete' | 'leave') {
      const q = await createQueue(`wl-filter-${action}`, { VisibilityTimeout: '30' });
      await sendMessages(q.url, [...pass, ...fail]);
      const config = configFile({ 'queue-options': { [q.name]: { filters: patterns, 'filter-action': action } } });
      const daemon = startDaemon(endpoint.url, ['--function', 'record', '--queues', q.name, '--batch-size', '10', '--config', config]);
      await started(daemon);
      const invokedBodies = () =>
        endpoint.invocations
          .filter(fromQueue(q))
          .flatMap(eventRecords)
          .map((r) => r.body);
      await until(() => invokedBodies().length >= pass.length, 20_000, 'matching messages invoked', 100);
      await until(
        () =>
          daemon
            .logs()
            .filter((l) => String(l['msg']).startsWith('messages matched no filter pattern'))
            .flatMap((l) => l['messageIds'] as string[]).length >= fail.length,
        20_000,
        'filtered messages settled',
        100,
      );
      assert.equal(await stopDaemon(daemon), 0);
      assert.deepEqual(invokedBodies().sort(), [...pass].sort(), 'exactly the matching messages reach the function');
      return q;
    }

    it('action delete (the trigger): non-matching messages are deleted unseen', async () => {
      const q = await run('delete');
      await until(async () => (await countMessages(q.url)) === 0, 10_000, 'queue empty', 200);
    });

    it('action leave: non-matching messages stay on the queue, never invoked', async () => {
      const q = await run('leave');
      const counts = await messageCounts(q.url);
      assert.equal(counts.visible + counts.notVisible, fail.length);
    });
  });
});
