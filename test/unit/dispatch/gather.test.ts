// The batching window in the Dispatcher, with the in-memory fakes: what is gathered, when it is invoked, the
// lease over a window longer than the visibility timeout, a stop or a failed receive while gathering.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { FUNCTION_METRICS, SQS_METRICS } from '../../../src/core/telemetry/metric-names.ts';
import { MAX_SYNC_PAYLOAD_BYTES } from '../../../src/invoke/sqs-event.ts';
import { FakeInvoker, functionError, message, ok, queue, startDispatcher, throttled, until } from '../../support/factories.ts';

const sizes = (invoker: FakeInvoker) => invoker.payloads.map((p) => p.Records.length);
const many = (n: number, body?: string) => Array.from({ length: n }, () => message(body === undefined ? {} : { Body: body }));

/** An invoker that records when each invocation started, relative to `t0()`. */
function timedInvoker() {
  const starts: number[] = [];
  let t0 = Date.now();
  const invoker = new FakeInvoker(() => {
    starts.push(Date.now() - t0);
    return ok();
  });
  return { invoker, starts, reset: () => (t0 = Date.now()) };
}

describe('Dispatcher with a batching window', () => {
  it('messages that arrive during the window join the batch, which is invoked when the window ends', async () => {
    const { invoker, starts, reset } = timedInvoker();
    const { source, stop, running } = startDispatcher([queue('q')], { batchSize: 25, batchWindowMs: 1_500 }, invoker);
    reset();
    source.push('q', ...many(3));
    await delay(300);
    source.push('q', ...many(4));
    await delay(300);
    source.push('q', ...many(4));
    await until(() => source.deleted.length === 11, 5_000, 'the batch deleted');
    stop.abort();
    await running;
    assert.deepEqual(sizes(invoker), [11]);
    assert.ok(starts[0]! >= 1_450 && starts[0]! < 2_300, `invoked ${starts[0]} ms after the first message, window 1500 ms`);
    // Every receive asks for at most 10, and only the first of a batch went through next(); the rest long-poll the same queue.
    assert.ok(
      source.receives.every((r) => r.max <= 10 && r.queue === 'q'),
      JSON.stringify(source.receives),
    );
  });

  it('a batch that waited for the busy loop gathers only what is left of its window, counted from its receive', async () => {
    // Lambda's trigger: MaximumBatchingWindowInSeconds is the most time spent gathering records before the invocation,
    // from the first record (docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html, "Batching window").
    // The loop is busy invoking the first batch when the second message arrives: an idle poll receives it and it
    // waits in the ready set; its window runs from there, not from when the loop takes it.
    const starts: number[] = [];
    const t0 = Date.now();
    const invoker = new FakeInvoker(async () => {
      starts.push(Date.now() - t0);
      if (starts.length === 1) await delay(1_200);
      return ok();
    });
    const { source, stop, running } = startDispatcher([queue('q')], { batchSize: 25, batchWindowMs: 1_500, concurrency: 1 }, invoker);
    // The loop has found the queue empty and gone idle: the idle state's polls have started.
    await delay(300);
    source.push('q', message());
    await until(() => starts.length === 1, 5_000, 'the first batch invoked');
    await delay(200);
    const secondAt = Date.now() - t0;
    source.push('q', message());
    await until(() => source.deleted.length === 2, 10_000, 'both deleted');
    stop.abort();
    await running;
    assert.deepEqual(sizes(invoker), [1, 1]);
    // Received about 1,700 ms in; the loop is free again at about 2,700: its window (1,500 from the receive) ends
    // at 3,200, not at 4,200 (1,500 from the take).
    const wait = starts[1]! - secondAt;
    assert.ok(wait >= 1_400 && wait < 2_100, `the second batch invoked ${wait} ms after its message was sent, window 1500 ms`);
  });

  it('a batch whose window ran out while it waited for the busy loop still takes what arrived in its window', async () => {
    // The first Invoke outlasts the second batch's window: without one more read the second batch would go alone
    // and the message sent in its window would be left for a batch of its own.
    const starts: number[] = [];
    const t0 = Date.now();
    const invoker = new FakeInvoker(async () => {
      starts.push(Date.now() - t0);
      if (starts.length === 1) await delay(2_500);
      return ok();
    });
    const { source, stop, running } = startDispatcher([queue('q')], { batchSize: 25, batchWindowMs: 1_000, concurrency: 1 }, invoker);
    await delay(300);
    source.push('q', message());
    await until(() => starts.length === 1, 5_000, 'the first batch invoked');
    await delay(200);
    source.push('q', message());
    await delay(500);
    source.push('q', message());
    await until(() => source.deleted.length === 3, 10_000, 'all deleted');
    stop.abort();
    await running;
    assert.deepEqual(sizes(invoker), [1, 2]);
  });

  it('a full batch is invoked at once; the rest waits for its window', async () => {
    const { invoker, starts, reset } = timedInvoker();
    const { source, stop, running } = startDispatcher([queue('q')], { batchSize: 30, batchWindowMs: 1_500 }, invoker, (s) =>
      s.push('q', ...many(75)),
    );
    reset();
    await until(() => source.deleted.length === 75, 5_000, 'everything deleted');
    stop.abort();
    await running;
    assert.deepEqual(sizes(invoker), [30, 30, 15]);
    assert.ok(starts[0]! < 500 && starts[1]! < 500, `full batches invoked at ${starts[0]} and ${starts[1]} ms`);
    assert.ok(starts[2]! >= 1_450, `the last batch waited for its window: ${starts[2]} ms`);
    // DeleteMessageBatch takes 10 entries at most.
    assert.ok(Math.max(...source.deleteCalls) <= 10);
  });

  it('a 1 s window (the least above 10) on a full queue fills its batch: the last partial second keeps receiving', async () => {
    const { invoker, starts, reset } = timedInvoker();
    const { source, stop, running } = startDispatcher([queue('q')], { batchSize: 100, batchWindowMs: 1_000 }, invoker, (s) =>
      s.push('q', ...many(60)),
    );
    reset();
    await until(() => source.deleted.length === 60, 5_000, 'everything deleted');
    stop.abort();
    await running;
    assert.deepEqual(sizes(invoker), [60]);
    assert.ok(starts[0]! >= 950 && starts[0]! < 1_500, `invoked at ${starts[0]} ms, window 1000 ms`);
  });

  it('a batch is invoked without waiting for the window once the next message would pass 6 MB', async () => {
    const { invoker, starts, reset } = timedInvoker();
    const body = 'x'.repeat(300_000);
    const { source, stop, running } = startDispatcher([queue('q')], { batchSize: 100, batchWindowMs: 5_000 }, invoker, (s) =>
      s.push('q', ...many(40, body)),
    );
    reset();
    await until(() => source.deleted.length === 40, 15_000, 'everything deleted');
    stop.abort();
    await running;
    // 20 records of 300 kB make 6.0 MB; a 21st would pass 6 MiB.
    assert.deepEqual(sizes(invoker), [20, 20]);
    // Well before the 5 s window (serialising 12 MB takes a while on a loaded CI machine).
    assert.ok(
      starts.every((s) => s < 2_500),
      `invoked at ${starts.join(', ')} ms, window 5000 ms`,
    );
    const payloadBytes = invoker.payloads.map((p) => Buffer.byteLength(JSON.stringify(p)));
    assert.ok(
      payloadBytes.every((b) => b <= MAX_SYNC_PAYLOAD_BYTES),
      `payloads ${payloadBytes.join(', ')} bytes`,
    );
  });

  it('keeps gathered messages invisible through a window longer than the visibility timeout', async () => {
    const q = queue('q', { visibilityTimeoutSec: 1 });
    const { source, invoker, stop, running } = startDispatcher([q], { batchSize: 20, batchWindowMs: 2_500 });
    const first = message();
    const second = message();
    source.push('q', first);
    await delay(1_200);
    source.push('q', second);
    await until(() => source.deleted.length === 2, 5_000, 'the batch deleted');
    stop.abort();
    await running;
    assert.deepEqual(sizes(invoker), [2]);
    const extended = (id: string) => source.visibilityChanges.filter((c) => c.ids.includes(id) && c.timeoutSec === 1).length;
    // The first message is extended every half second from its receive, the second from its own.
    assert.ok(extended(first.MessageId!) >= 4, `first extended ${extended(first.MessageId!)} times`);
    assert.ok(extended(second.MessageId!) >= 2, `second extended ${extended(second.MessageId!)} times`);
    assert.equal(source.visibilityChanges.filter((c) => c.timeoutSec === 0).length, 0, 'nothing released');
  });

  it('a stop while gathering sends no new receive; the one in flight completes, and everything gathered is invoked and deleted', async () => {
    const { source, invoker, dispatcher, stop, running } = startDispatcher(
      [queue('q')],
      { batchSize: 50, batchWindowMs: 60_000 },
      undefined,
      (s) => s.push('q', ...many(3)),
    );
    await until(() => dispatcher.status().loops[0]?.activity === 'gather', 2_000, 'gathering');
    source.push('q', ...many(2));
    // The first receive (3), a gathering one (2), and the next gathering long poll, in flight.
    await until(() => source.receives.length === 3 && source.inflight.size === 5, 2_000, 'a gathering receive in flight');
    stop.abort();
    // What the receive in flight returns joins the batch.
    source.push('q', message());
    await running;
    assert.equal(source.receives.length, 3, 'no receive after the stop');
    assert.deepEqual(sizes(invoker), [6]);
    assert.equal(source.deleted.length, 6);
    assert.equal(dispatcher.status().state, 'stopped');
  });

  it('a failed receive while gathering invokes what was gathered', async () => {
    const { invoker, starts, reset } = timedInvoker();
    const { source, stop, running } = startDispatcher([queue('q')], { batchSize: 50, batchWindowMs: 10_000 }, invoker);
    reset();
    source.push('q', ...many(4));
    await until(() => source.receives.length >= 1 && source.inflight.size === 4, 2_000, 'the first receive');
    source.receiveError = () => Object.assign(new Error('internal'), { name: 'InternalError', $metadata: { httpStatusCode: 500 } });
    await until(() => source.deleted.length === 4, 3_000, 'the batch deleted');
    stop.abort();
    await running;
    assert.deepEqual(sizes(invoker), [4]);
    assert.ok(starts[0]! < 2_000, `invoked after ${starts[0]} ms, window 10000 ms`);
  });

  it('FIFO queues never gather: one receive per batch, as on the trigger', async () => {
    const { invoker, starts, reset } = timedInvoker();
    const { source, stop, running } = startDispatcher([queue('q.fifo')], { batchSize: 10, batchWindowMs: 5_000 }, invoker);
    reset();
    source.push('q.fifo', ...many(3));
    await until(() => source.deleted.length === 3, 2_000, 'deleted');
    stop.abort();
    await running;
    assert.deepEqual(sizes(invoker), [3]);
    assert.ok(starts[0]! < 500);
  });

  it('each gathering receive is a liveness step of its own, so a long window never looks stuck', async () => {
    const { source, dispatcher, stop, running } = startDispatcher([queue('q')], { batchSize: 50, batchWindowMs: 60_000 }, undefined, (s) =>
      s.push('q', message()),
    );
    await until(() => dispatcher.status().loops[0]?.activity === 'gather', 2_000, 'gathering');
    await delay(2_500);
    const step = dispatcher.status().loops[0]!;
    assert.equal(step.activity, 'gather');
    // Renewed by each 1 s long poll (--poll-for 1): its deadline is that receive's, not the 60 s window's.
    // Steps are on the monotonic clock (src/util/clock.ts).
    assert.ok(performance.now() - step.since < 1_500, `step began ${performance.now() - step.since} ms ago`);
    assert.ok(step.deadlineAt - performance.now() < 20_000, `deadline in ${step.deadlineAt - performance.now()} ms`);
    stop.abort();
    await running;
    assert.equal(source.deleted.length, 1);
  });

  it('a batch above 10 is backed off and released in calls of at most 10 entries', async () => {
    const backedOff = startDispatcher(
      [queue('q')],
      { batchSize: 25, batchWindowMs: 1_000, retryBackoff: { baseSec: 5, maxSec: 60, jitter: 0 } },
      new FakeInvoker(() => functionError()),
      (s) => s.push('q', ...many(25)),
    );
    await until(() => backedOff.source.visibilityChanges.filter((c) => c.timeoutSec === 5).flatMap((c) => c.ids).length === 25);
    backedOff.stop.abort();
    await backedOff.running;
    assert.deepEqual(sizes(backedOff.invoker), [25]);
    assert.ok(backedOff.source.visibilityChanges.every((c) => c.ids.length <= 10));

    // Throttled until the stop: the whole batch is released (visibility 0) in calls of 10, 10 and 5.
    const released = startDispatcher([queue('q')], { batchSize: 25, batchWindowMs: 1_000 }, new FakeInvoker(() => throttled()), (s) =>
      s.push('q', ...many(25)),
    );
    await until(() => released.invoker.payloads.length > 0, 3_000, 'an invocation');
    released.stop.abort();
    await released.running;
    const releases = released.source.visibilityChanges.filter((c) => c.timeoutSec === 0);
    assert.deepEqual(
      releases.map((c) => c.ids.length),
      [10, 10, 5],
    );
    assert.equal(released.source.visible.get('q')?.length, 25, 'back on the queue');
  });

  it('the loop is busy once per batch in the metrics, and every gathered message is counted as polled', async () => {
    const { source, metrics, stop, running } = startDispatcher([queue('q')], { batchSize: 25, batchWindowMs: 1_000 }, undefined, (s) =>
      s.push('q', ...many(25)),
    );
    await until(() => source.deleted.length === 25, 5_000, 'deleted');
    stop.abort();
    await running;
    assert.equal(metrics.sum(SQS_METRICS.polled.cloudwatch, 'q'), 25);
    const inUse = metrics.data.filter((d) => d.name === FUNCTION_METRICS.concurrencyInUse.cloudwatch).map((d) => d.value);
    assert.equal(Math.max(...inUse), 1);
    assert.equal(inUse.at(-1), 0);
  });
});
