// Issue 20, items 1 and 2, at the level where they happen: the dispatcher over an in-memory SQS that keeps real
// visibility timeouts (a message comes back, with a new receipt handle, when its visibility runs out) and an
// invoker that counts overlapping invocations of one message id. Time is a fake clock.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { Dispatcher } from '../../../../src/dispatch/dispatcher.ts';
import { type DispatcherOptions } from '../../../../src/dispatch/dispatcher-options.ts';
import type { InvokeResult } from '../../../../src/core/function-invoker.ts';
import { AwsCallError } from '../../../../src/core/errors.ts';
import { SQS_METRICS } from '../../../../src/core/telemetry/metric-names.ts';
import {
  FakeInvoker,
  FakeSource,
  RecordingMetrics,
  message,
  ok,
  queue,
  recordingLogger,
  throttled,
  dispatcherOptions,
} from '../../../support/factories.ts';

const START = 1_000_000;

/** Lets promise callbacks run; setImmediate is not faked. */
const flush = async () => {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
};

/** Advances the fake clock in steps, letting what each step wakes run before the next. */
async function advance(ms: number, stepMs = 50): Promise<void> {
  for (let done = 0; done < ms; done += stepMs) {
    mock.timers.tick(Math.min(stepMs, ms - done));
    await flush();
  }
}

/** Advances the fake clock until the dispatcher has drained (an invocation in flight may take a while). */
async function drain(running: Promise<void>): Promise<void> {
  let done = false;
  void running.then(() => (done = true));
  for (let i = 0; i < 600 && !done; i++) await advance(100);
  await running;
}

/** Resolves after `ms` of fake time. */
const after = (ms: number, result: InvokeResult) => new Promise<InvokeResult>((r) => setTimeout(() => r(result), ms));

function sqs500(): AwsCallError {
  return new AwsCallError('ChangeMessageVisibilityBatch', {
    kind: 'retryable',
    code: 'InternalError',
    message: 'internal error',
    status: 500,
  });
}

function start(options: Partial<DispatcherOptions>, invoker: FakeInvoker, source: FakeSource, startSec: number) {
  // One fake clock for the dispatcher and the fake SQS's long polls and visibility.
  source.now = () => Date.now();
  const { logger, lines } = recordingLogger();
  const metrics = new RecordingMetrics();
  const dispatcher = new Dispatcher(
    dispatcherOptions([queue('q', { visibilityTimeoutSec: startSec })], { concurrency: 3, ...options }),
    // random just below 1: every back-off is its ceiling.
    { source, invoker, metrics, logger, lookup: source, random: () => 0.999, now: () => Date.now() },
  );
  const stop = new AbortController();
  const running = dispatcher.run(stop.signal);
  return { lines, metrics, stop, running };
}

const invokedIds = (invoker: FakeInvoker) => invoker.payloads.flatMap((p) => p.Records.map((r) => r.messageId));
const count = (ids: string[], id: string) => ids.filter((x) => x === id).length;

describe('Dispatcher: one visibility for SQS and the lease, and a lapsed lease ends its batch', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  it("1. the queue's timeout lowered from 60 to 5 s while running: receives state 60 s until it is re-read, then 5 s with extensions; each message runs once", async () => {
    const source = new FakeSource();
    source.realVisibility = true;
    source.queueVisibilitySec.set('q', 60);
    // Each invocation runs 8 s: longer than the new 5 s timeout.
    const invoker = new FakeInvoker(() => after(8_000, ok()));
    const { lines, stop, running } = start({ visibilityRefreshMs: 10_000 }, invoker, source, 60);
    // The operator lowers the queue's timeout (console, Terraform) right after start-up; messages follow.
    source.queueVisibilitySec.set('q', 5);
    const early = [message(), message()];
    source.push('q', ...early);
    await advance(12_000);
    // Re-read at 10 s: later receives state 5 s, and their leases extend by it.
    const late = [message(), message()];
    source.push('q', ...late);
    await advance(20_000);
    stop.abort();
    await drain(running);

    const ids = invokedIds(invoker);
    for (const m of [...early, ...late]) assert.equal(count(ids, m.MessageId!), 1, `${m.MessageId} invoked once: ${ids.join(' ')}`);
    assert.deepEqual(invoker.overlaps, []);
    const stated = (id: string) => source.receives.filter((r) => r.ids.includes(id)).map((r) => r.visibilityTimeoutSec);
    for (const m of early) assert.deepEqual(stated(m.MessageId!), [60], 'received before the re-read: stated the 60 s the lease assumes');
    for (const m of late) assert.deepEqual(stated(m.MessageId!), [5], 'received after the re-read: stated 5 s');
    const extended = source.visibilityChanges.filter((c) => c.timeoutSec === 5).flatMap((c) => c.ids);
    for (const m of late)
      assert.ok(extended.includes(m.MessageId!), `${m.MessageId} extended by 5 s: ${JSON.stringify(source.visibilityChanges)}`);
    assert.equal(
      lines.filter(
        (l) => l.msg === "the queue's visibility timeout changed; receives from now on state it, leases already open keep theirs",
      ).length,
      1,
      'the change is logged once',
    );
  });

  it('2. extensions answering 500 while Lambda throttles for 12 s (4 s visibility): a lapsed batch is never invoked; 0 overlaps, each message invoked once', async () => {
    const source = new FakeSource();
    source.realVisibility = true;
    source.queueVisibilitySec.set('q', 4);
    source.visibilityError = sqs500;
    const m = message();
    source.push('q', m);
    // Throttled until 12 s, then each invocation runs 1 s.
    const ran: string[] = [];
    const invoker = new FakeInvoker((payload) => {
      if (Date.now() - START < 12_000) return throttled();
      ran.push(...(JSON.parse(payload) as { Records: { messageId: string }[] }).Records.map((r) => r.messageId));
      return after(1_000, ok());
    });
    const { lines, metrics, stop, running } = start({ concurrency: 2 }, invoker, source, 4);
    await advance(20_000);
    stop.abort();
    await drain(running);

    assert.deepEqual(invoker.overlaps, [], `no overlapping invocation: ${ran.join(' ')}`);
    assert.deepEqual(ran, [m.MessageId], 'invoked once, after Lambda stopped throttling');
    assert.ok(source.receives.filter((r) => r.ids.includes(m.MessageId!)).length >= 2, 'the message came back and was received again');
    assert.ok(metrics.sum(SQS_METRICS.lapsed.cloudwatch, 'q') >= 1, 'the lapse is counted');
    const notInvoked = lines.filter(
      (l) => l.msg === 'the visibility lease lapsed before the invocation; not invoking these messages, SQS delivers them again',
    );
    assert.ok(notInvoked.length >= 1 && notInvoked.every((l) => JSON.stringify(l['lapsedIds']) === JSON.stringify([m.MessageId])));
    assert.deepEqual(
      source.deleted.map((d) => d.id),
      [m.MessageId],
    );
  });

  it('3. the lease lapses while the invocation runs: not invoked again, the result is deleted with the old receipt handle but not counted as deleted', async () => {
    const source = new FakeSource();
    source.realVisibility = true;
    source.queueVisibilitySec.set('q', 4);
    source.visibilityError = sqs500;
    const m = message();
    source.push('q', m);
    // One loop, so nobody receives the message again while it runs for 6 s against a 4 s visibility.
    const invoker = new FakeInvoker(() => after(6_000, ok()));
    const { lines, metrics, stop, running } = start({ concurrency: 1 }, invoker, source, 4);
    await advance(6_500);
    stop.abort();
    await drain(running);

    assert.deepEqual(invokedIds(invoker), [m.MessageId]);
    assert.equal(metrics.sum(SQS_METRICS.deleted.cloudwatch, 'q'), 0, 'a delete with a lapsed receipt handle proves nothing');
    assert.equal(metrics.sum(SQS_METRICS.lapsed.cloudwatch, 'q'), 1);
    assert.deepEqual(
      source.deleted.map((d) => d.id),
      [m.MessageId],
      'nobody received it since, so the old handle was still the latest and SQS deleted it',
    );
    const warned = lines.filter(
      (l) =>
        l.msg ===
        'the visibility lease lapsed while the invocation ran; its result is settled with the old receipt handles and nothing is invoked again',
    );
    assert.deepEqual(
      warned.map((l) => l['lapsedIds']),
      [[m.MessageId]],
    );
  });

  it('4. a batch split over the 6 MB payload limit: a later chunk whose lease lapsed while the first ran is not invoked with it', async () => {
    const source = new FakeSource();
    source.realVisibility = true;
    source.queueVisibilitySec.set('q', 4);
    source.visibilityError = sqs500;
    // Seven 1 MiB messages: two payloads under Lambda's 6 MB.
    const messages = Array.from({ length: 7 }, (_, i) => message({ Body: String(i).repeat(1024 * 1024) }));
    source.push('q', ...messages);
    const handles: string[][] = [];
    const invoker = new FakeInvoker((payload) => {
      handles.push((JSON.parse(payload) as { Records: { receiptHandle: string }[] }).Records.map((r) => r.receiptHandle));
      // The first chunk runs 5 s: past the 4 s visibility that its failing extensions could not renew.
      return handles.length === 1 ? after(5_000, ok()) : ok();
    });
    const { lines, stop, running } = start({ concurrency: 1, batchSize: 10 }, invoker, source, 4);
    await advance(8_000);
    stop.abort();
    await drain(running);

    assert.ok(handles.length >= 2 && handles[0]!.length < 7, `split into chunks: ${handles.map((h) => h.length).join(', ')}`);
    const firstReceive = new Set(messages.map((m) => m.ReceiptHandle!));
    const later = handles.slice(1).flat();
    assert.deepEqual(
      later.filter((h) => firstReceive.has(h)),
      [],
      'the second chunk was invoked only after SQS delivered it again (a new receipt handle), never under the lapsed lease',
    );
    assert.ok(
      lines.some(
        (l) => l.msg === 'the visibility lease lapsed before the invocation; not invoking these messages, SQS delivers them again',
      ),
    );
  });
});
