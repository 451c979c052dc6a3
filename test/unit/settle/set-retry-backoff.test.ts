// The retry back-off executor (src/settle/set-retry-backoff.ts), through the Dispatcher with the in-memory fakes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeInvoker, functionError, message, ok, queue, until, startUnjittered, queueOptionsByName } from '../../support/factories.ts';

const setup = startUnjittered;
const opts = queueOptionsByName;

const counted = (n: number) => ({ Attributes: { ApproximateReceiveCount: String(n), SentTimestamp: '1' } });

describe('Dispatcher: retry back-off', () => {
  const policy = { baseSec: 2, maxSec: 60, jitter: 0 };

  it('off by default: a failed message keeps its visibility timeout (no visibility change)', async () => {
    const { source, stop, running } = setup([queue('q')], {}, new FakeInvoker(() => functionError()), (s) =>
      s.push('q', message(counted(3))),
    );
    await until(() => source.receives.length >= 2);
    stop.abort();
    await running;
    assert.deepEqual(source.visibilityChanges, []);
  });

  it('a function error sets the visibility of the batch from its receive counts', async () => {
    const a = message(counted(1));
    const b = message(counted(4));
    const { source, stop, running } = setup(
      [queue('q')],
      { retryBackoff: policy, batchSize: 10 },
      new FakeInvoker(() => functionError()),
      (s) => s.push('q', a, b),
    );
    await until(() => source.visibilityChanges.length === 2);
    stop.abort();
    await running;
    assert.deepEqual(
      source.visibilityChanges.map((c) => [c.ids, c.timeoutSec]),
      [
        [[a.MessageId], 2],
        [[b.MessageId], 16],
      ],
    );
  });

  it("per queue: a queue's own policy, none where it is off, --retry-backoff's for the others", async () => {
    const invoker = new FakeInvoker(() => functionError());
    const { source, stop, running } = setup(
      [queue('own'), queue('off'), queue('plain')],
      {
        retryBackoff: policy,
        queueOptions: opts({ own: { retryBackoff: { baseSec: 5, maxSec: 60, jitter: 0 } }, off: { retryBackoff: 'off' } }),
      },
      invoker,
      (s) => {
        s.push('own', message(counted(2)));
        s.push('off', message(counted(2)));
        s.push('plain', message(counted(2)));
      },
    );
    await until(() => invoker.payloads.length >= 3 && source.visibilityChanges.length >= 2);
    stop.abort();
    await running;
    // Receive count 2: twice the first delay. Each queue's message was invoked once (none came back yet).
    assert.equal(invoker.payloads.length, 3);
    assert.deepEqual(source.visibilityChanges.map((c) => [c.queue, c.timeoutSec]).sort(), [
      ['own', 10],
      ['plain', 4],
    ]);
  });

  it('batchItemFailures: only the listed messages back off; the others are deleted', async () => {
    const msgs = [message(counted(2)), message(counted(2)), message(counted(2))];
    const invoker = new FakeInvoker(() => ok({ batchItemFailures: [{ itemIdentifier: msgs[1]!.MessageId }] }));
    const { source, stop, running } = setup([queue('q')], { retryBackoff: policy, batchSize: 10 }, invoker, (s) => s.push('q', ...msgs));
    await until(() => source.deleted.length === 2 && source.visibilityChanges.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(source.visibilityChanges[0], { queue: 'q', ids: [msgs[1]!.MessageId], timeoutSec: 4 });
  });

  it('an invalid response backs off the whole batch', async () => {
    const msgs = [message(counted(1)), message(counted(1))];
    const invoker = new FakeInvoker(() => ok({ batchItemFailures: [{ itemIdentifier: 'not-in-batch' }] }));
    const { source, stop, running } = setup([queue('q')], { retryBackoff: policy, batchSize: 10 }, invoker, (s) => s.push('q', ...msgs));
    await until(() => source.visibilityChanges.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(source.visibilityChanges[0]!.ids.sort(), msgs.map((m) => m.MessageId).sort());
    assert.equal(source.deleted.length, 0);
  });

  it("FIFO: the failed message and every later one of its group get one delay, from the group's highest count", async () => {
    const q = queue('q.fifo');
    const g = (n: number, group: string) => message({ Attributes: { ApproximateReceiveCount: String(n), MessageGroupId: group } });
    const msgs = [g(1, 'a'), g(3, 'a'), g(1, 'b'), g(1, 'a')];
    // The second message fails: FIFO keeps it and everything after it.
    const invoker = new FakeInvoker(() => ok({ batchItemFailures: [{ itemIdentifier: msgs[1]!.MessageId }] }));
    const { source, stop, running } = setup([q], { retryBackoff: policy, batchSize: 10 }, invoker, (s) => s.push('q.fifo', ...msgs));
    await until(() => source.visibilityChanges.length === 2);
    stop.abort();
    await running;
    assert.deepEqual(
      source.deleted.map((d) => d.id),
      [msgs[0]!.MessageId],
    );
    assert.deepEqual(
      source.visibilityChanges.map((c) => [c.ids, c.timeoutSec]),
      [
        [[msgs[1]!.MessageId, msgs[3]!.MessageId], 8],
        [[msgs[2]!.MessageId], 2],
      ],
    );
  });
});

describe('Dispatcher: a retry delay the function chooses (retryDelaySeconds)', () => {
  const policy = { baseSec: 2, maxSec: 60, jitter: 0 };

  it('comes before --retry-backoff; without a delay of its own a message gets the back-off', async () => {
    const msgs = [message(counted(1)), message(counted(1))];
    const invoker = new FakeInvoker(() =>
      ok({ batchItemFailures: [{ itemIdentifier: msgs[0]!.MessageId, retryDelaySeconds: 120 }, { itemIdentifier: msgs[1]!.MessageId }] }),
    );
    const { source, stop, running } = setup([queue('q')], { retryBackoff: policy, batchSize: 10 }, invoker, (s) => s.push('q', ...msgs));
    await until(() => source.visibilityChanges.length === 2);
    stop.abort();
    await running;
    assert.deepEqual(
      source.visibilityChanges.map((c) => [c.ids, c.timeoutSec]),
      [
        [[msgs[0]!.MessageId], 120],
        [[msgs[1]!.MessageId], 2],
      ],
    );
  });

  it('applies without --retry-backoff too', async () => {
    const m = message(counted(1));
    const invoker = new FakeInvoker(() => ok({ batchItemFailures: [{ itemIdentifier: m.MessageId, retryDelaySeconds: 7 }] }));
    const { source, stop, running } = setup([queue('q')], {}, invoker, (s) => s.push('q', m));
    await until(() => source.visibilityChanges.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(source.visibilityChanges[0], { queue: 'q', ids: [m.MessageId], timeoutSec: 7 });
  });

  it('an invalid delay is counted and logged, and the message gets the back-off; a huge one is clamped and counted', async () => {
    const bad = message(counted(2));
    const huge = message(counted(1));
    const invoker = new FakeInvoker(() =>
      ok({
        batchItemFailures: [
          { itemIdentifier: bad.MessageId, retryDelaySeconds: -5 },
          { itemIdentifier: huge.MessageId, retryDelaySeconds: 1e9 },
        ],
      }),
    );
    const { source, metrics, stop, running } = setup([queue('q')], { retryBackoff: policy, batchSize: 10 }, invoker, (s) =>
      s.push('q', bad, huge),
    );
    await until(() => source.visibilityChanges.length === 2);
    stop.abort();
    await running;
    const byId = new Map(source.visibilityChanges.map((c) => [c.ids[0], c.timeoutSec]));
    assert.equal(byId.get(bad.MessageId), 4, 'the back-off for receive count 2');
    const clampedTo = byId.get(huge.MessageId) ?? 0;
    assert.ok(clampedTo > 43_100 && clampedTo < 43_200, `clamped below 12 hours from the receive: ${clampedTo}`);
    assert.equal(metrics.sum('RetryDelayInvalidCount'), 1);
    assert.equal(metrics.sum('RetryDelayClampedCount'), 1);
  });
});
