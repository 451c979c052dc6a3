// Issue 20, items 3-7 at the dispatcher: waiting never holds capacity, liveness is true, durations use a
// monotonic clock. Asserted by message id, with in-memory fakes.
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import type { QueueOptions } from '../../../../src/dispatch/queue-options.ts';
import { Dispatcher } from '../../../../src/dispatch/dispatcher.ts';
import { type DispatcherOptions } from '../../../../src/dispatch/dispatcher-options.ts';
import { checkLiveness } from '../../../../src/operator/health.ts';
import { compileFilter } from '../../../../src/receive/event-filter.ts';
import type { InvokeResult } from '../../../../src/core/function-invoker.ts';
import type { ReceiptEntry, ResolvedQueue } from '../../../../src/core/queue.ts';
import {
  FakeInvoker,
  FakeSource,
  RecordingMetrics,
  message,
  ok,
  queue,
  serverError,
  silentLogger,
  stopAfterTests,
  throttled,
  unusable,
  until,
  dispatcherOptions,
} from '../../../support/factories.ts';

/** The message id of a batch of one. */
const idOf = (payload: string) => (JSON.parse(payload) as { Records: { messageId: string }[] }).Records[0]!.messageId;

/** An invoker answering by message id, recording when each id was first invoked (performance.now()). */
function byId(answer: (id: string, attempt: number) => Promise<InvokeResult> | InvokeResult) {
  const attempts = new Map<string, number>();
  const firstAt = new Map<string, number>();
  const invoker = new FakeInvoker((payload) => {
    const id = idOf(payload);
    const attempt = (attempts.get(id) ?? 0) + 1;
    attempts.set(id, attempt);
    if (!firstAt.has(id)) firstAt.set(id, performance.now());
    return answer(id, attempt);
  });
  return { invoker, attempts, firstAt };
}

function start(
  options: Partial<DispatcherOptions>,
  invoker: FakeInvoker,
  extra: { source?: FakeSource; now?: () => number; queues?: ResolvedQueue[] } = {},
) {
  const source = extra.source ?? new FakeSource();
  const dispatcher = new Dispatcher(dispatcherOptions(extra.queues ?? [queue('q')], { concurrency: 4, ...options }), {
    source,
    invoker,
    metrics: new RecordingMetrics(),
    logger: silentLogger,
    ...(extra.now ? { now: extra.now } : {}),
  });
  const stop = stopAfterTests();
  const running = dispatcher.run(stop.signal);
  return { source, dispatcher, stop, running };
}

const withId = (id: string): Message => message({ MessageId: id });
const queueOptions = (name: string, options: Partial<QueueOptions>) =>
  new Map<string, QueueOptions>([[name, { filterAction: 'delete', ...options }]]);

describe('Dispatcher: waiting never holds capacity', () => {
  it('adaptive: batches held after unknown outcomes give their places to healthy messages (issue 20 item 3)', async () => {
    // 4 loops; one throttle halves the limit to 2 (3 places with the prefetch share). Three 5xx answers are then
    // held for the queue's visibility timeout (30 s): before, they kept all 3 places and "good" waited 30 s.
    const { invoker, attempts, firstAt } = byId((id, attempt) => {
      if (id === 'throttle-1') return attempt === 1 ? throttled() : ok();
      if (id.startsWith('bad-')) return serverError();
      return ok();
    });
    const { source, dispatcher, stop, running } = start({ adaptiveConcurrency: { minConcurrency: 1 } }, invoker);
    source.push('q', withId('throttle-1'));
    await until(() => dispatcher.status().concurrencyLimit === 2, 5_000, 'the throttle to lower the limit');
    await until(() => source.deleted.some((d) => d.id === 'throttle-1'), 10_000, 'throttle-1 to be settled');
    source.push('q', withId('bad-1'), withId('bad-2'), withId('bad-3'));
    await until(() => ['bad-1', 'bad-2', 'bad-3'].every((id) => attempts.get(id) === 1), 5_000, 'each bad message answered 5xx');
    const pushedAt = performance.now();
    source.push('q', withId('good-1'));
    await until(() => source.deleted.some((d) => d.id === 'good-1'), 5_000, 'good-1 to be invoked and deleted');
    const waitedMs = firstAt.get('good-1')! - pushedAt;
    assert.ok(waitedMs < 2_000, `good-1 waited ${Math.round(waitedMs)} ms`);
    // The held batches are still held (invoked once, not again, not deleted): their leases keep them.
    for (const id of ['bad-1', 'bad-2', 'bad-3']) {
      assert.equal(attempts.get(id), 1, id);
      assert.ok(!source.deleted.some((d) => d.id === id), id);
    }
    assert.equal(dispatcher.status().inFlight.length, 3, 'the three held batches still count as in flight');
    stop.abort();
    await running;
  });

  it('per-queue: a batch held after an unknown outcome parks its slot of max-concurrency 1 (issue 20 item 4)', async () => {
    const { invoker, attempts, firstAt } = byId((id) => (id === 'bad-1' ? serverError() : ok()));
    const { source, stop, running } = start({ concurrency: 3, queueOptions: queueOptions('q', { maxConcurrency: 1 }) }, invoker);
    source.push('q', withId('bad-1'));
    await until(() => attempts.get('bad-1') === 1, 5_000, 'bad-1 answered 5xx');
    const pushedAt = performance.now();
    source.push('q', withId('good-1'), withId('good-2'));
    await until(() => ['good-1', 'good-2'].every((id) => source.deleted.some((d) => d.id === id)), 5_000, 'the good messages settled');
    assert.ok(firstAt.get('good-1')! - pushedAt < 2_000, `good-1 waited ${Math.round(firstAt.get('good-1')! - pushedAt)} ms`);
    assert.equal(invoker.maxActive, 1, 'max-concurrency 1 still holds for active batches');
    assert.equal(attempts.get('bad-1'), 1, 'bad-1 is still held, not invoked again');
    stop.abort();
    await running;
  });
});

describe('Dispatcher: liveness is true', () => {
  it('the wait for an Invoke permit does not count against the invoke step; its deadline starts with the call (item 5)', async () => {
    let now = 1_000_000;
    const ends = new Map<string, (r: InvokeResult) => void>();
    const { invoker } = byId((id, attempt) => {
      if (id === 'throttle-1') return attempt === 1 ? throttled() : ok();
      return new Promise<InvokeResult>((resolve) => ends.set(id, resolve));
    });
    // A long visibility timeout: the lease must hold across the clock jumps below.
    const q = queue('q', { visibilityTimeoutSec: 3_600 });
    const { source, dispatcher, stop, running } = start({ concurrency: 2, adaptiveConcurrency: { minConcurrency: 1 } }, invoker, {
      now: () => now,
      queues: [q],
    });
    source.push('q', withId('throttle-1'));
    await until(() => dispatcher.status().concurrencyLimit === 1, 5_000, 'the throttle to lower the limit to 1');
    await until(() => source.deleted.some((d) => d.id === 'throttle-1'), 10_000, 'throttle-1 settled');
    source.push('q', withId('long-1'));
    await until(() => ends.has('long-1'), 5_000, 'long-1 invoking');
    source.push('q', withId('waiting-1'));
    await until(() => source.inflight.size === 2, 5_000, 'waiting-1 received, waiting for the one permit');
    now += 10 * 60_000;
    ends.get('long-1')!(ok());
    await until(() => ends.has('waiting-1'), 5_000, 'waiting-1 invoking once long-1 is over');
    now += 7 * 60_000;
    // waiting-1's Invoke is 7 minutes old: within its 16 minutes, however long it waited for the permit.
    const invoking = dispatcher.status().loops.filter((s) => s?.activity === 'invoke');
    assert.equal(invoking.length, 1);
    const probe = checkLiveness({ lagMs: 0, maxLagMs: 10_000, loops: invoking, now, graceMs: 0 });
    assert.deepEqual(probe, { ok: true, reasons: [] });
    ends.get('waiting-1')!(ok());
    await until(() => source.deleted.some((d) => d.id === 'waiting-1'), 5_000, 'waiting-1 settled');
    stop.abort();
    await running;
  });

  it('deleting filtered-out messages renews its step on each retry, as the normal delete path does (item 5)', async () => {
    let now = 1_000_000;
    let failing = true;
    class FailingDeletes extends FakeSource {
      override async deleteBatch(q: ResolvedQueue, entries: readonly ReceiptEntry[]) {
        if (failing) {
          this.deleteCalls.push(entries.length);
          throw Object.assign(new Error('unavailable'), { name: 'ServiceUnavailable', $metadata: { httpStatusCode: 503 } });
        }
        return super.deleteBatch(q, entries);
      }
    }
    const source = new FailingDeletes();
    const filter = compileFilter([{ body: { kind: ['order'] } }]).filter!;
    const q = queue('q', { visibilityTimeoutSec: 3_600 });
    const { dispatcher, stop, running } = start({ concurrency: 1, queueOptions: queueOptions('q', { filter }) }, new FakeInvoker(), {
      source,
      now: () => now,
      queues: [q],
    });
    source.push('q', message({ MessageId: 'filtered-1', Body: '{"kind":"other"}' }));
    await until(() => source.deleteCalls.length >= 2, 5_000, 'the delete to fail twice');
    // Past SETTLE_DEADLINE_MS (8 x 6 s) and its grace since the step began.
    now += 120_000;
    const calls = source.deleteCalls.length;
    await until(() => source.deleteCalls.length > calls, 5_000, 'another retry');
    const step = dispatcher.status().loops[0];
    assert.equal(step?.activity, 'delete');
    assert.deepEqual(checkLiveness({ lagMs: 0, maxLagMs: 10_000, loops: [step], now, graceMs: 0 }), { ok: true, reasons: [] });
    failing = false;
    await until(() => source.deleted.some((d) => d.id === 'filtered-1'), 10_000, 'filtered-1 deleted once SQS answers');
    stop.abort();
    await running;
  });
});

describe('Dispatcher: durations use a monotonic clock', () => {
  it('a 600 s backward step of the wall clock stalls neither the rate limiter nor the function pause (item 6)', async (t) => {
    const wall = Date.now.bind(Date);
    let offsetMs = 0;
    t.mock.method(Date, 'now', () => wall() + offsetMs);
    const { invoker, attempts } = byId((id, attempt) => {
      if (id === 'pause-1' && attempt === 1) {
        // The wall clock steps back just after the pause began.
        setTimeout(() => (offsetMs -= 600_000), 50);
        return unusable();
      }
      return ok();
    });
    const { source, stop, running } = start({ concurrency: 2, queueOptions: queueOptions('q', { ratePerSec: 5 }) }, invoker);
    source.push('q', withId('rate-1'));
    await until(() => source.deleted.some((d) => d.id === 'rate-1'), 5_000, 'rate-1 settled');
    offsetMs -= 600_000;
    source.push('q', withId('rate-2'), withId('rate-3'));
    await until(() => ['rate-2', 'rate-3'].every((id) => source.deleted.some((d) => d.id === id)), 3_000, 'the rate limiter to go on');
    source.push('q', withId('pause-1'));
    await until(() => source.deleted.some((d) => d.id === 'pause-1'), 5_000, 'the pause (at most 1 s) to end');
    assert.equal(attempts.get('pause-1'), 2);
    stop.abort();
    await running;
    mock.restoreAll();
  });
});
