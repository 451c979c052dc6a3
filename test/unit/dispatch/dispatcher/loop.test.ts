import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { Dispatcher, DispatcherFailed } from '../../../../src/dispatch/dispatcher.ts';
import { type DispatcherOptions } from '../../../../src/dispatch/dispatcher-options.ts';
import { SQS_METRICS } from '../../../../src/core/telemetry/metric-names.ts';
import type { MetricDatum, MetricsSink } from '../../../../src/core/telemetry/metrics-sink.ts';
import {
  FakeInvoker,
  FakeSource,
  functionError,
  message,
  ok,
  queue,
  silentLogger,
  serverError,
  throttled,
  until,
  startDispatcher,
  dispatcherOptions,
} from '../../../support/factories.ts';

const setup = startDispatcher;

const idsOf = (invoker: FakeInvoker) => invoker.payloads.flatMap((p) => p.Records.map((r) => r.messageId));

describe('Dispatcher', () => {
  it('strict order: a lower queue is never served while a higher one has messages', async () => {
    const highMsgs = Array.from({ length: 5 }, () => message());
    const lowMsgs = Array.from({ length: 5 }, () => message());
    const { source, invoker, stop, running } = setup([queue('high'), queue('low')], {}, new FakeInvoker(), (s) => {
      s.push('low', ...lowMsgs);
      s.push('high', ...highMsgs);
    });
    await until(() => invoker.payloads.length === 10, 5000, '10 invocations');
    stop.abort();
    await running;
    assert.deepEqual(
      idsOf(invoker),
      [...highMsgs, ...lowMsgs].map((m) => m.MessageId),
    );
    assert.equal(source.deleted.length, 10);
  });

  it('builds payloads with the queue ARN and invokes batches of --batch-size', async () => {
    const q = queue('q');
    const { source, invoker, stop, running } = setup([q], { batchSize: 3 });
    source.push('q', ...Array.from({ length: 5 }, () => message()));
    await until(() => source.deleted.length === 5, 5000, 'deletes');
    stop.abort();
    await running;
    assert.deepEqual(
      invoker.payloads.map((p) => p.Records.length),
      [3, 2],
    );
    assert.equal(invoker.payloads[0]!.Records[0]!.eventSourceARN, q.arn);
  });

  it('never runs more invocations at once than --concurrency', async () => {
    const invoker = new FakeInvoker(async () => {
      await delay(20);
      return ok();
    });
    const { source, stop, running } = setup([queue('q')], { concurrency: 4 }, invoker);
    source.push('q', ...Array.from({ length: 30 }, () => message()));
    await until(() => source.deleted.length === 30, 10_000, 'deletes');
    stop.abort();
    await running;
    assert.equal(invoker.maxActive, 4);
  });

  it('a function error deletes nothing and counts an invocation error', async () => {
    const invoker = new FakeInvoker(() => functionError('TypeError', 'bad'));
    const { source, metrics, stop, running } = setup([queue('q')], {}, invoker);
    const m = message();
    source.push('q', m);
    await until(() => invoker.payloads.length === 1);
    stop.abort();
    await running;
    assert.equal(source.deleted.length, 0);
    assert.ok(source.inflight.has(m.ReceiptHandle!), 'message stays in flight until its visibility timeout');
    assert.equal(metrics.sum(SQS_METRICS.failedInvoke.cloudwatch, 'q'), 1);
  });

  it('batchItemFailures keeps exactly the listed messages', async () => {
    const msgs = Array.from({ length: 4 }, () => message());
    const invoker = new FakeInvoker(() => ok({ batchItemFailures: [{ itemIdentifier: msgs[1]!.MessageId }] }));
    const { source, stop, running } = setup([queue('q')], { batchSize: 10 }, invoker);
    source.push('q', ...msgs);
    await until(() => source.deleted.length === 3);
    stop.abort();
    await running;
    assert.deepEqual(source.deleted.map((d) => d.id).sort(), [msgs[0], msgs[2], msgs[3]].map((m) => m!.MessageId).sort());
  });

  it('--delete never deletes nothing', async () => {
    const { source, invoker, stop, running } = setup([queue('q')], { deleteMode: 'never' });
    source.push('q', message(), message());
    await until(() => invoker.payloads.length === 2);
    stop.abort();
    await running;
    assert.equal(source.deleted.length, 0);
    assert.equal(source.deleteCalls.length, 0);
  });

  it('records received, deleted and duration metrics per queue', async () => {
    const { source, metrics, stop, running } = setup([queue('a'), queue('b')], { concurrency: 2 });
    source.push('a', message(), message());
    source.push('b', message());
    await until(() => source.deleted.length === 3);
    stop.abort();
    await running;
    assert.equal(metrics.sum(SQS_METRICS.polled.cloudwatch, 'a'), 2);
    assert.equal(metrics.sum(SQS_METRICS.polled.cloudwatch, 'b'), 1);
    assert.equal(metrics.sum(SQS_METRICS.deleted.cloudwatch, 'a'), 2);
    assert.equal(metrics.data.filter((d) => d.name === SQS_METRICS.receiveToSettle.cloudwatch && d.dimensions['Queue'] === 'a').length, 2);
    assert.ok(metrics.data.every((d) => (d.name === SQS_METRICS.receiveToSettle.cloudwatch ? d.unit === 'Milliseconds' : true)));
  });

  it('with concurrency >= queues, idle loops long-poll every queue', async () => {
    const qs = [queue('a'), queue('b'), queue('c')];
    const { source, stop, running } = setup(qs, { concurrency: 3, pollForSec: 5 });
    await until(() => source.receives.filter((r) => r.waitSec === 5).length >= 3, 2000, 'three long polls');
    const longPolled = new Set(source.receives.filter((r) => r.waitSec === 5).map((r) => r.queue));
    assert.deepEqual([...longPolled].sort(), ['a', 'b', 'c']);
    stop.abort();
    await running; // long polls are aborted: this resolves well before 5 s
  });

  it('stop during an invocation: the batch is still invoked to the end and deleted, then run() resolves', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const invoker = new FakeInvoker(async () => {
      await gate;
      return ok();
    });
    const { source, dispatcher, stop, running } = setup([queue('q')], {}, invoker);
    const m = message();
    source.push('q', m);
    await until(() => invoker.active === 1);
    stop.abort();
    assert.equal(dispatcher.status().state, 'draining');
    assert.deepEqual(dispatcher.status().inFlight, [{ queue: 'q', messageIds: [m.MessageId] }]);
    let resolved = false;
    void running.then(() => (resolved = true));
    await delay(50);
    assert.equal(resolved, false, 'run() waits for the in-flight batch');
    release();
    await running;
    assert.equal(dispatcher.status().state, 'stopped');
    assert.deepEqual(
      source.deleted.map((d) => d.id),
      [m.MessageId],
    );
    const receivesAfter = source.receives.length;
    await delay(20);
    assert.equal(source.receives.length, receivesAfter, 'no receive after stop');
  });

  it('throttling is retried without giving the message back, and succeeds once capacity returns', async () => {
    const invoker = new FakeInvoker((_p, call) => (call <= 3 ? throttled() : ok()));
    const { source, stop, running } = setup([queue('q')], {}, invoker);
    const m = message();
    source.push('q', m);
    await until(() => source.deleted.length === 1, 5000);
    stop.abort();
    await running;
    assert.equal(invoker.payloads.length, 4);
    assert.equal(source.receives.filter((r) => r.queue === 'q' && r.waitSec === 0).length >= 1, true);
    assert.deepEqual(source.visibilityChanges, [], 'no release while throttled');
  });

  it('throttled on shutdown: the batch is released at once', async () => {
    const invoker = new FakeInvoker(() => throttled());
    const { source, stop, running } = setup([queue('q')], {}, invoker);
    const m = message();
    source.push('q', m);
    await until(() => invoker.payloads.length >= 2);
    stop.abort();
    await running;
    assert.deepEqual(source.visibilityChanges.at(-1), { queue: 'q', ids: [m.MessageId], timeoutSec: 0 });
    assert.equal(source.visible.get('q')?.[0]?.MessageId, m.MessageId);
  });

  it('extends visibility while a throttle outlasts it', async () => {
    const t0 = Date.now();
    const invoker = new FakeInvoker(() => (Date.now() - t0 < 1500 ? throttled() : ok()));
    const { source, stop, running } = setup([queue('q', { visibilityTimeoutSec: 1 })], {}, invoker);
    source.push('q', message());
    // The throttle back-off is jittered and doubles up to 5 s: the first try after the 1.5 s can come at 6.5 s.
    await until(() => source.deleted.length === 1, 10_000);
    stop.abort();
    await running;
    assert.ok(source.visibilityChanges.length >= 1);
    assert.ok(source.visibilityChanges.every((c) => c.timeoutSec === 1));
  });

  it("keeps a slow invocation's messages invisible until it finishes", async () => {
    const invoker = new FakeInvoker(async () => {
      await delay(1300);
      return ok();
    });
    const { source, stop, running } = setup([queue('q', { visibilityTimeoutSec: 1 })], {}, invoker);
    const m = message();
    source.push('q', m);
    await until(() => source.deleted.length === 1, 5000);
    stop.abort();
    await running;
    assert.ok(source.visibilityChanges.length >= 2, `extensions ${source.visibilityChanges.length}`);
    assert.deepEqual(source.visibilityChanges[0], { queue: 'q', ids: [m.MessageId], timeoutSec: 1 });
    assert.equal(invoker.payloads.length, 1);
  });

  it('stops extending visibility (instead of retrying at once) when SQS refuses an extension', async () => {
    const invoker = new FakeInvoker(async () => {
      await delay(1500);
      return ok();
    });
    const { source, stop, running } = setup([queue('q', { visibilityTimeoutSec: 1 })], {}, invoker);
    source.refuseVisibility = 'ReceiptHandleIsInvalid';
    source.push('q', message());
    await until(() => invoker.payloads.length === 1 && invoker.active === 0, 5000);
    stop.abort();
    await running;
    assert.equal(source.visibilityChanges.length, 1, 'one refused extension, then no more');
  });

  it('an unknown Invoke outcome is held for a visibility timeout before the next try, and given up after 3 holds', async () => {
    const at: number[] = [];
    const invoker = new FakeInvoker(() => {
      at.push(Date.now());
      return serverError();
    });
    const { source, metrics, stop, running } = setup([queue('q', { visibilityTimeoutSec: 1 })], {}, invoker);
    source.push('q', message());
    await until(() => metrics.sum(SQS_METRICS.failedInvoke.cloudwatch, 'q') === 1, 10_000, 'the invocation error');
    stop.abort();
    await running;
    assert.equal(invoker.payloads.length, 4);
    for (let i = 1; i < at.length; i++)
      assert.ok(at[i]! - at[i - 1]! >= 990, `invocation ${i} came ${at[i]! - at[i - 1]!} ms after the one before`);
    assert.equal(source.deleted.length, 0);
    assert.equal(source.inflight.size, 1, 'the message returns after its visibility timeout');
  });

  it('a receive error backs off and the loop carries on', async () => {
    const { source, invoker, stop, running } = setup([queue('q')]);
    let failures = 2;
    source.receiveError = () =>
      failures-- > 0 ? Object.assign(new Error('down'), { name: 'InternalError', $metadata: { httpStatusCode: 500 } }) : undefined;
    source.push('q', message());
    await until(() => invoker.payloads.length === 1, 10_000);
    stop.abort();
    await running;
    assert.equal(source.deleted.length, 1);
  });

  it('a broken queue is skipped while it backs off, and never stalls the others', async () => {
    // random() = 0.999: the first back-off is just under 200 ms, longer than draining the healthy queue takes.
    const { source, invoker, stop, running } = setup(
      [queue('gone'), queue('ok')],
      { concurrency: 3 },
      new FakeInvoker(),
      () => {},
      () => 0.999,
    );
    source.receiveError = (q) =>
      q === 'gone'
        ? Object.assign(new Error('The specified queue does not exist.'), { name: 'QueueDoesNotExist', $metadata: { httpStatusCode: 400 } })
        : undefined;
    source.push('ok', ...Array.from({ length: 20 }, () => message()));
    await until(() => source.deleted.length === 20, 5000, 'the healthy queue drained');
    stop.abort();
    await running;
    assert.equal(invoker.payloads.length, 20);
    const goneReceives = source.receives.filter((r) => r.queue === 'gone').length;
    // Strict order puts the broken queue first in every pass; during its back-off passes skip it.
    const okReceives = source.receives.filter((r) => r.queue === 'ok').length;
    assert.ok(goneReceives * 2 < okReceives, `the broken queue was read ${goneReceives} times in ${okReceives} passes`);
  });

  it('deletes from several loops share DeleteMessageBatch calls', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const invoker = new FakeInvoker(async () => {
      await gate;
      return ok();
    });
    const { source, stop, running } = setup([queue('q')], { concurrency: 10 }, invoker);
    source.push('q', ...Array.from({ length: 10 }, () => message()));
    await until(() => invoker.active === 10);
    release();
    await until(() => source.deleted.length === 10);
    stop.abort();
    await running;
    assert.ok(source.deleteCalls.length <= 2, `delete calls ${source.deleteCalls.join(',')}`);
  });

  it('a loop that fails (a bug, here in the metrics sink) fails the dispatcher once the other loops have settled their batches', async () => {
    // Errors inside a batch are caught and logged per batch; what escapes a loop is a bug in what the loop calls
    // outside that handling. This sink throws on the first ProcessingDuration, as a broken aggregate map would.
    const bug = new RangeError('Map maximum size exceeded');
    let thrown = false;
    const metrics: MetricsSink = {
      record(d: MetricDatum) {
        if (d.name === SQS_METRICS.receiveToSettle.cloudwatch && !thrown) {
          thrown = true;
          throw bug;
        }
      },
    };
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const [a, b, c, late] = [message(), message(), message(), message()];
    const invoker = new FakeInvoker(async (payload) => {
      const id = (JSON.parse(payload) as { Records: { messageId: string }[] }).Records[0]?.messageId;
      if (id !== c.MessageId) await gate;
      return ok();
    });
    const source = new FakeSource();
    const options: DispatcherOptions = dispatcherOptions([queue('q')], { concurrency: 3 });
    const dispatcher = new Dispatcher(options, { source, invoker, metrics, logger: silentLogger });
    const running = dispatcher.run(new AbortController().signal);
    let outcome: unknown;
    void running.then(
      () => (outcome = 'resolved'),
      (err: unknown) => (outcome = err),
    );
    source.push('q', a, b);
    await until(() => invoker.active === 2, 2000, 'two loops holding a batch');
    source.push('q', c); // the third loop takes it, settles it, and then fails
    await until(() => dispatcher.status().state === 'draining', 2000, 'draining after the failure');
    assert.deepEqual(
      source.deleted.map((d) => d.id),
      [c.MessageId],
    );
    assert.deepEqual(
      dispatcher
        .status()
        .inFlight.flatMap((f) => f.messageIds)
        .sort(),
      [a.MessageId, b.MessageId].sort(),
    );
    source.push('q', late);
    await delay(1200); // longer than a long poll: any loop still receiving would have taken it
    assert.equal(outcome, undefined, 'run() waits for the batches the other loops hold');
    release();
    await assert.rejects(
      running,
      (err: unknown) => err instanceof DispatcherFailed && err.cause === bug && err.message.includes(bug.message),
    );
    assert.equal(dispatcher.status().state, 'failed');
    assert.deepEqual(
      source.deleted.map((d) => d.id).sort(),
      [a.MessageId, b.MessageId, c.MessageId].sort(),
      'the other loops settled their batches',
    );
    assert.deepEqual(dispatcher.status().inFlight, []);
    assert.ok(!idsOf(invoker).includes(late.MessageId!), 'nothing is received after the failure');
    assert.deepEqual(
      source.visible.get('q')?.map((m) => m.MessageId),
      [late.MessageId],
    );
  });
});

describe('Dispatcher.queueCount', () => {
  it('follows setQueues, so the metrics per queue switch to aggregated when discovery finds more than their bound', async () => {
    // The route's poll share is told the same count: one number for both, the Receiver's.
    const told: number[] = [];
    const pollShare = { set: (n: number) => void told.push(n), max: () => Infinity };
    const { dispatcher, stop, running } = setup([queue('a'), queue('b')], { pollShare });
    assert.equal(dispatcher.queueCount, 2);
    const found = Array.from({ length: 250 }, (_, i) => queue(`tenant-${i}`));
    dispatcher.setQueues(found);
    assert.equal(dispatcher.queueCount, 250);
    dispatcher.setQueues(found.slice(0, 3));
    assert.equal(dispatcher.queueCount, 3);
    assert.deepEqual(told, [2, 250, 3]);
    stop.abort();
    await running;
  });
});
