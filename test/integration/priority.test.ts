import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bodies, countMessages, createQueue, sendMessages, type TestQueue } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { eventRecords, functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type InvocationRecord, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

/** The queue each invocation's (single) record came from, in invocation order. */
function queueOrder(invocations: readonly InvocationRecord[], queues: TestQueue[]): string[] {
  return invocations.map((inv) => {
    const arn = eventRecords(inv)[0]!.eventSourceARN;
    return queues.find((q) => q.arn === arn)?.name ?? 'unknown';
  });
}

/**
 * Runs one daemon with concurrency 1 over pre-filled queues and returns the queue order of the first
 * `count` invocations. With one loop, each invocation is exactly one iteration's choice.
 */
async function firstInvocations(endpoint: LambdaEndpoint, queuesArg: string, queues: TestQueue[], count: number): Promise<string[]> {
  endpoint.reset();
  const daemon = startDaemon(endpoint.url, ['--function', 'record', '--queues', queuesArg, '--concurrency', '1']);
  await started(daemon);
  const invocations = await endpoint.waitFor((inv) => inv.length >= count, 60_000);
  assert.equal(await stopDaemon(daemon), 0);
  return queueOrder(invocations, queues).slice(0, count);
}

/**
 * Queues `<prefix>-a` and `<prefix>-b` with `n` messages each, served with weights a:`weightA`,b:`weightB`: the
 * queue order of the first `n` invocations and a's share of them.
 */
async function weightedRun(endpoint: LambdaEndpoint, prefix: string, [weightA, weightB]: [number, number], n: number) {
  const a = await createQueue(`${prefix}-a`);
  const b = await createQueue(`${prefix}-b`);
  await sendMessages(a.url, bodies(n, 'a'));
  await sendMessages(b.url, bodies(n, 'b'));
  const order = await firstInvocations(endpoint, `${a.name}:${weightA},${b.name}:${weightB}`, [a, b], n);
  return { order, share: order.filter((q) => q === a.name).length / n };
}

describe('queue priority against LocalStack', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({ functions: { record: { handler: functionFixture('record.mjs') } } });
  });
  after(() => endpoint.stop());

  it('strict: a lower queue is never served while a higher one has messages', async () => {
    const high = await createQueue('wl-strict-high');
    const mid = await createQueue('wl-strict-mid');
    const low = await createQueue('wl-strict-low');
    await sendMessages(low.url, bodies(6, 'low'));
    await sendMessages(mid.url, bodies(6, 'mid'));
    await sendMessages(high.url, bodies(6, 'high'));
    const order = await firstInvocations(endpoint, [high.name, mid.name, low.name].join(','), [high, mid, low], 18);
    assert.deepEqual(order, [...Array<string>(6).fill(high.name), ...Array<string>(6).fill(mid.name), ...Array<string>(6).fill(low.name)]);
    for (const q of [high, mid, low]) assert.equal(await countMessages(q.url), 0);
  });

  // Both queues hold more messages than the sampled invocations, so every iteration has a choice: the queue
  // drawn first is the one served. Tolerances are 4 standard deviations of the binomial share (a false failure
  // about once in 15,000 runs), still far from the other modes' shares (strict 1.0, 3:1 0.75, equal 0.5).
  it('weighted a:3,b:1 serves a about 75% of the time', async () => {
    const { share } = await weightedRun(endpoint, 'wl-weighted', [3, 1], 120);
    // expected 0.75, sd = sqrt(0.75*0.25/120) = 0.040
    assert.ok(Math.abs(share - 0.75) <= 0.16, `a's share ${share}`);
  });

  it('equal weights serve both queues about equally (random order)', async () => {
    const n = 120;
    const { order, share } = await weightedRun(endpoint, 'wl-random', [1, 1], n);
    // expected 0.5, sd = sqrt(0.25/120) = 0.046
    assert.ok(Math.abs(share - 0.5) <= 0.185, `a's share ${share}`);
    // A random order is not an alternation or a run: both queues lead somewhere in the first half.
    const firstHalf = new Set(order.slice(0, n / 2));
    assert.equal(firstHalf.size, 2);
  });
});
