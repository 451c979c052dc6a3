// DeleteBatcher: one DeleteMessageBatch for the deletes of many worker loops. SQS's rules are those of AWS's
// DeleteMessageBatch API reference
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessageBatch.html and its
// DeleteMessageBatchRequestEntry / BatchResultErrorEntry pages): a request carries 1 to 10 entries
// (TooManyEntriesInBatchRequest, EmptyBatchRequest); each entry's Id is unique within the request
// (BatchEntryIdsNotDistinct), up to 80 characters of alphanumerics, hyphens and underscores (InvalidBatchEntryId);
// the answer is 200 with a result per entry, `Successful` or `Failed` (Id, Code, Message, SenderFault), so one
// entry can fail while the rest of the batch is deleted.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { AwsCallError, type ErrorKind } from '../../../src/core/errors.ts';
import type { EntryFailure, MessageSource, ReceiptEntry, ResolvedQueue } from '../../../src/core/queue.ts';
import { DeleteBatcher } from '../../../src/settle/delete-batcher.ts';
import type { SettleResult } from '../../../src/settle/batch-call.ts';
import { queue, recordingLogger, deferred } from '../../support/factories.ts';

const START = 1_000_000;
/** The batcher keeps a list per queue object: the dispatcher resolves each queue once and passes the same one. */
const Q = queue('q');
const QA = queue('a');
const QB = queue('b');
/** The batcher's gathering window in these tests, unless one says otherwise. */
const WINDOW_MS = 2;
/** Math.random() just below 1: each back-off is its ceiling minus 1 ms (99, 199, 399, 799, 999, 999...). */
const highest = () => 1 - 1e-9;
/** SQS's limits on an entry's Id (DeleteMessageBatchRequestEntry). */
const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;

interface DeleteCall {
  /** Milliseconds since the test started (fake clock). */
  readonly at: number;
  readonly queue: string;
  readonly entries: readonly ReceiptEntry[];
}

/**
 * A MessageSource that only deletes: records every DeleteMessageBatch call and answers it as `respond` says
 * (every entry Successful by default). It refuses a request SQS would refuse, and remembers that it did, so a
 * test cannot pass on a batch SQS would not have taken.
 */
class DeleteSource implements MessageSource {
  readonly calls: DeleteCall[] = [];
  readonly refusals: string[] = [];
  respond: (call: DeleteCall) => Promise<EntryFailure[]> | EntryFailure[] = () => [];

  async receive(): Promise<never> {
    throw new Error('the batcher never receives');
  }

  async changeVisibility(): Promise<never> {
    throw new Error('the batcher never changes visibility');
  }

  async deleteBatch(q: ResolvedQueue, entries: readonly ReceiptEntry[]): Promise<EntryFailure[]> {
    const call = { at: Date.now() - START, queue: q.name, entries: entries.map((e) => ({ ...e })) };
    this.calls.push(call);
    const refusal =
      entries.length === 0
        ? 'EmptyBatchRequest'
        : entries.length > 10
          ? 'TooManyEntriesInBatchRequest'
          : new Set(entries.map((e) => e.id)).size !== entries.length
            ? 'BatchEntryIdsNotDistinct'
            : entries.some((e) => !BATCH_ENTRY_ID.test(e.id))
              ? 'InvalidBatchEntryId'
              : undefined;
    if (refusal) {
      this.refusals.push(refusal);
      throw failure(refusal, 'fatal');
    }
    return this.respond(call);
  }
}

function failure(code: string, kind: ErrorKind): AwsCallError {
  return new AwsCallError('DeleteMessageBatch', { kind, code, message: `${code} (test)` });
}

/** The receipts of messages `from`..`from + count - 1`: id m-N, receipt handle r-N. */
function receipts(count: number, from = 0): ReceiptEntry[] {
  return Array.from({ length: count }, (_, i) => ({ id: `m-${from + i}`, receiptHandle: `r-${from + i}` }));
}

/** A delete in progress, and what it resolved to once it has (undefined until then). */
function track(promise: Promise<SettleResult>): { promise: Promise<SettleResult>; result: () => SettleResult | undefined } {
  let result: SettleResult | undefined;
  void promise.then((r) => (result = r));
  return { promise, result: () => result };
}

/** Lets promise callbacks and anything they chain run (setImmediate is not faked). */
const flush = () => new Promise((r) => setImmediate(r));

/** Advances the fake clock 1 ms at a time, flushing after each step so retries chained on promises get scheduled. */
async function advance(ms: number): Promise<void> {
  for (let done = 0; done < ms; done++) {
    mock.timers.tick(1);
    await flush();
  }
}

function setup(windowMs = WINDOW_MS) {
  const source = new DeleteSource();
  const { logger, lines } = recordingLogger();
  const batcher = new DeleteBatcher(source, logger, windowMs, () => Date.now());
  return { source, lines, batcher };
}

describe('DeleteBatcher', () => {
  let source: DeleteSource | undefined;
  beforeEach(() => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START });
    // The retry back-off draws its jitter from Math.random: at its highest, the delays are known to the ms.
    mock.method(Math, 'random', highest);
  });
  afterEach(() => {
    mock.timers.reset();
    mock.restoreAll();
    assert.deepEqual(source?.refusals ?? [], [], 'the batcher sent a request SQS refuses');
    source = undefined;
  });

  it('deletes nothing and makes no call for no entries', async () => {
    const s = setup();
    source = s.source;
    assert.deepEqual(await s.batcher.delete(Q, []), { done: 0, failed: [] });
    await advance(10);
    assert.equal(s.source.calls.length, 0);
  });

  it('gathers the entries of callers within the window into one call, sent when the window closes', async () => {
    const s = setup();
    source = s.source;
    const a = track(s.batcher.delete(Q, receipts(1, 0)));
    await advance(1);
    const b = track(s.batcher.delete(Q, receipts(2, 1)));
    await flush();
    assert.equal(s.source.calls.length, 0, 'nothing is sent before the window closes');
    await advance(1);
    assert.equal(s.source.calls.length, 1);
    const call = s.source.calls[0]!;
    assert.equal(call.at, WINDOW_MS, 'the window runs from the first entry');
    assert.deepEqual(
      call.entries.map((e) => e.receiptHandle),
      ['r-0', 'r-1', 'r-2'],
    );
    assert.deepEqual(await a.promise, { done: 1, failed: [] });
    assert.deepEqual(await b.promise, { done: 2, failed: [] });
  });

  it('opens a new window for entries that arrive after the last one closed', async () => {
    const s = setup();
    source = s.source;
    const a = s.batcher.delete(Q, receipts(1, 0));
    await advance(5);
    const b = s.batcher.delete(Q, receipts(1, 1));
    await advance(5);
    assert.deepEqual(
      s.source.calls.map((c) => [c.at, c.entries.map((e) => e.receiptHandle)]),
      [
        [WINDOW_MS, ['r-0']],
        [5 + WINDOW_MS, ['r-1']],
      ],
    );
    assert.deepEqual(
      [await a, await b],
      [
        { done: 1, failed: [] },
        { done: 1, failed: [] },
      ],
    );
  });

  it('gives every window its full length: a caller that joins an open window does not start a second one', async () => {
    const s = setup(4);
    source = s.source;
    const deletes = [s.batcher.delete(Q, receipts(1, 0))];
    await advance(2);
    deletes.push(s.batcher.delete(Q, receipts(1, 1)));
    await advance(3);
    // The first window closed at 4; an entry at 5 opens the next, which closes at 9, not when the joiner's would have (6).
    deletes.push(s.batcher.delete(Q, receipts(1, 2)));
    await advance(5);
    assert.deepEqual(
      s.source.calls.map((c) => [c.at, c.entries.map((e) => e.receiptHandle)]),
      [
        [4, ['r-0', 'r-1']],
        [9, ['r-2']],
      ],
    );
    assert.equal((await Promise.all(deletes)).length, 3);
  });

  it('sends a full batch of 10 at once, without waiting for the window', async () => {
    const s = setup(60_000);
    source = s.source;
    const a = track(s.batcher.delete(Q, receipts(4, 0)));
    assert.equal(s.source.calls.length, 0, 'four entries wait for the window');
    const b = track(s.batcher.delete(Q, receipts(6, 4)));
    assert.equal(s.source.calls.length, 1, 'the tenth entry sends the batch in the same turn');
    assert.equal(s.source.calls[0]!.entries.length, 10);
    await flush();
    assert.deepEqual(
      [a.result(), b.result()],
      [
        { done: 4, failed: [] },
        { done: 6, failed: [] },
      ],
    );
    assert.equal(Date.now(), START, 'no time passed');
    // The window the first caller opened finds nothing left when it closes.
    mock.timers.tick(60_000);
    await flush();
    assert.equal(s.source.calls.length, 1);
  });

  it('never puts more than 10 entries in one call: 23 within a window go out as 10 and 10 at once, then 3', async () => {
    const s = setup();
    source = s.source;
    const deletes = [s.batcher.delete(Q, receipts(8, 0)), s.batcher.delete(Q, receipts(9, 8)), s.batcher.delete(Q, receipts(6, 17))];
    assert.deepEqual(
      s.source.calls.map((c) => [c.at, c.entries.length]),
      [
        [0, 10],
        [0, 10],
      ],
    );
    await advance(WINDOW_MS);
    assert.deepEqual(
      s.source.calls.map((c) => [c.at, c.entries.length]),
      [
        [0, 10],
        [0, 10],
        [WINDOW_MS, 3],
      ],
    );
    // Every receipt handle was sent once, in the order the callers gave them.
    assert.deepEqual(
      s.source.calls.flatMap((c) => c.entries.map((e) => e.receiptHandle)),
      receipts(23).map((r) => r.receiptHandle),
    );
    assert.deepEqual(await Promise.all(deletes), [
      { done: 8, failed: [] },
      { done: 9, failed: [] },
      { done: 6, failed: [] },
    ]);
  });

  it('batches each queue on its own: a DeleteMessageBatch names one QueueUrl', async () => {
    const s = setup();
    source = s.source;
    const a = s.batcher.delete(QA, receipts(2, 0));
    const b = s.batcher.delete(QB, receipts(9, 2));
    const a2 = s.batcher.delete(QA, receipts(1, 11));
    await advance(WINDOW_MS);
    assert.deepEqual(
      s.source.calls.map((c) => [c.queue, c.entries.map((e) => e.receiptHandle)]),
      [
        ['a', ['r-0', 'r-1', 'r-11']],
        ['b', ['r-2', 'r-3', 'r-4', 'r-5', 'r-6', 'r-7', 'r-8', 'r-9', 'r-10']],
      ],
    );
    assert.deepEqual(await Promise.all([a, b, a2]), [
      { done: 2, failed: [] },
      { done: 9, failed: [] },
      { done: 1, failed: [] },
    ]);
  });

  it('gives entries Ids unique within the request, even for one message delivered twice (standard queues deliver at least once)', async () => {
    const s = setup();
    source = s.source;
    // The same MessageId with two receipt handles, as a second delivery brings; both copies are deleted together.
    const twice = [
      { id: 'm-1', receiptHandle: 'r-first' },
      { id: 'm-1', receiptHandle: 'r-second' },
    ];
    const result = s.batcher.delete(Q, twice);
    await advance(WINDOW_MS);
    const ids = s.source.calls[0]!.entries.map((e) => e.id);
    assert.equal(new Set(ids).size, 2, 'the two entries of one MessageId have distinct Ids');
    assert.deepEqual(await result, { done: 2, failed: [] });
  });

  it("reports an entry SQS refused (a Failed entry of a 200 answer) to its own caller, under the caller's id, and does not send it again", async () => {
    const s = setup();
    source = s.source;
    // SQS refuses the second entry of the call: a receipt handle that is no longer valid is the sender's fault,
    // and sending it again would fail the same way.
    s.source.respond = (call) => [
      { id: call.entries[1]!.id, code: 'ReceiptHandleIsInvalid', message: 'The input receipt handle is invalid.' },
    ];
    const a = s.batcher.delete(Q, receipts(2, 0));
    const b = s.batcher.delete(Q, receipts(1, 2));
    await advance(WINDOW_MS);
    assert.deepEqual(await a, {
      done: 1,
      failed: [{ id: 'm-1', code: 'ReceiptHandleIsInvalid', message: 'The input receipt handle is invalid.' }],
    });
    assert.deepEqual(await b, { done: 1, failed: [] });
    await advance(10_000);
    assert.equal(s.source.calls.length, 1, 'a refused entry is not retried');
  });

  it('retries a retryable error with back-off, 8 attempts in all when the callers allow no longer, then reports every entry failed', async () => {
    const s = setup();
    source = s.source;
    s.source.respond = () => Promise.reject(failure('InternalError', 'retryable'));
    const told = { a: [] as number[], b: [] as number[] };
    const a = track(s.batcher.delete(Q, receipts(2, 0), undefined, () => told.a.push(Date.now() - START)));
    const b = track(s.batcher.delete(Q, receipts(1, 2), undefined, () => told.b.push(Date.now() - START)));
    await advance(5_000);
    // Full-jitter back-off from 100 ms doubling to a 1 s cap, at its highest draw: 99, 199, 399, 799, 999...
    assert.deepEqual(
      s.source.calls.map((c) => c.at),
      [2, 101, 300, 699, 1498, 2497, 3496, 4495],
    );
    // Each retry sends the same entries again.
    for (const call of s.source.calls) assert.deepEqual(call.entries, s.source.calls[0]!.entries);
    // Every caller in the batch is told when a call failed and will be retried (liveness: it waits on AWS, it is
    // not stuck), and not when it gives up.
    const retried = s.source.calls.slice(0, -1).map((c) => c.at);
    assert.deepEqual([...new Set(told.a)], retried);
    assert.deepEqual([...new Set(told.b)], retried);
    const failed = (ids: string[]) => ids.map((id) => ({ id, code: 'InternalError', message: 'InternalError (test)' }));
    assert.deepEqual(a.result(), { done: 0, failed: failed(['m-0', 'm-1']) });
    assert.deepEqual(b.result(), { done: 0, failed: failed(['m-2']) });
    const logged = s.lines.filter((l) => l.msg === 'DeleteMessageBatch failed');
    assert.deepEqual(
      logged.map((l) => [l.level, l['attempt'], l['queue'], l['operation']]),
      [...[0, 1, 2, 3, 4, 5, 6].map((attempt) => [40, attempt, 'q', 'DeleteMessageBatch']), [50, 7, 'q', 'DeleteMessageBatch']],
      'a warning per retry, one error when it gives up',
    );
  });

  it('retries a throttling error as it does a retryable one', async () => {
    const s = setup();
    source = s.source;
    s.source.respond = (call) => (call.at < 300 ? Promise.reject(failure('RequestThrottled', 'throttled')) : Promise.resolve([]));
    const result = track(s.batcher.delete(Q, receipts(1)));
    await advance(400);
    assert.deepEqual(result.result(), { done: 1, failed: [] });
    assert.deepEqual(
      s.source.calls.map((c) => c.at),
      [2, 101, 300],
    );
  });

  it('keeps retrying beyond 8 attempts until retryUntil (the visibility the lease still holds), then gives up', async () => {
    const s = setup();
    source = s.source;
    s.source.respond = () => Promise.reject(failure('InternalError', 'retryable'));
    const until = START + 10_000;
    const result = track(s.batcher.delete(Q, receipts(1), () => until));
    await advance(12_000);
    // After the 8th attempt (at 4495) each next one goes out while it can still start before `until`: the last
    // at 9490, since a further 999 ms back-off would end past it.
    assert.deepEqual(
      s.source.calls.map((c) => c.at),
      [2, 101, 300, 699, 1498, 2497, 3496, 4495, 5494, 6493, 7492, 8491, 9490],
    );
    assert.deepEqual(result.result(), {
      done: 0,
      failed: [{ id: 'm-0', code: 'InternalError', message: 'InternalError (test)' }],
    });
  });

  it('succeeds when SQS recovers within retryUntil', async () => {
    const s = setup();
    source = s.source;
    s.source.respond = () =>
      s.source.calls.length <= 9 ? Promise.reject(failure('ServiceUnavailable', 'retryable')) : Promise.resolve([]);
    const told: number[] = [];
    const result = track(
      s.batcher.delete(
        Q,
        receipts(3),
        () => START + 30_000,
        () => told.push(Date.now() - START),
      ),
    );
    await advance(7_000);
    assert.equal(s.source.calls.length, 10);
    assert.equal(new Set(told).size, 9, 'told before each of the 9 retries');
    assert.deepEqual(result.result(), { done: 3, failed: [] });
  });

  it('retries a shared call for as long as the latest retryUntil of the callers in it allows', async () => {
    const s = setup();
    source = s.source;
    s.source.respond = () => Promise.reject(failure('InternalError', 'retryable'));
    // One caller's visibility allows no retry beyond the 8 attempts, the other's allows 10 s: a retry that can
    // still save the second from a second delivery is worth making for both.
    const a = track(s.batcher.delete(Q, receipts(1, 0), () => START));
    const b = track(s.batcher.delete(Q, receipts(1, 1), () => START + 10_000));
    await advance(12_000);
    assert.equal(s.source.calls.length, 13);
    assert.equal(s.source.calls.at(-1)!.at, 9490);
    assert.equal(a.result()?.failed.length, 1);
    assert.equal(b.result()?.failed.length, 1);
  });

  it('gives up at once on a fatal error, even with visibility left, and reports every entry of every caller failed', async () => {
    const s = setup();
    source = s.source;
    s.source.respond = () => Promise.reject(failure('AccessDenied', 'fatal'));
    let retries = 0;
    const a = s.batcher.delete(
      Q,
      receipts(2, 0),
      () => START + 60_000,
      () => retries++,
    );
    const b = s.batcher.delete(
      Q,
      receipts(1, 2),
      () => START + 60_000,
      () => retries++,
    );
    await advance(WINDOW_MS);
    const failed = (ids: string[]) => ids.map((id) => ({ id, code: 'AccessDenied', message: 'AccessDenied (test)' }));
    assert.deepEqual(await a, { done: 0, failed: failed(['m-0', 'm-1']) });
    assert.deepEqual(await b, { done: 0, failed: failed(['m-2']) });
    await advance(5_000);
    assert.equal(s.source.calls.length, 1, 'a fatal error is not retried');
    assert.equal(retries, 0);
    const logged = s.lines.filter((l) => l.msg === 'DeleteMessageBatch failed');
    assert.deepEqual(
      logged.map((l) => [l.level, l['attempt'], (l['err'] as { code?: string }).code]),
      [[50, 0, 'AccessDenied']],
    );
  });

  for (const first of [0, 1]) {
    it(`resolves each caller's promise only when its own entries are settled (the ${first === 0 ? 'first' : 'second'} call answers first)`, async () => {
      const s = setup();
      source = s.source;
      const answers: ReturnType<typeof deferred<EntryFailure[]>>[] = [];
      s.source.respond = () => {
        const answer = deferred<EntryFailure[]>();
        answers.push(answer);
        return answer.promise;
      };
      // a's 7 and b's first 3 fill a batch that goes out at once; b's last 2 and c's 1 wait for the window.
      const callers = {
        a: track(s.batcher.delete(Q, receipts(7, 0))),
        b: track(s.batcher.delete(Q, receipts(5, 7))),
        c: track(s.batcher.delete(Q, receipts(1, 12))),
      };
      const settled = () => Object.entries(callers).flatMap(([name, caller]) => (caller.result() ? [name] : []));
      await advance(WINDOW_MS);
      assert.deepEqual(
        s.source.calls.map((call) => call.entries.map((e) => e.receiptHandle)),
        [receipts(10).map((r) => r.receiptHandle), ['r-10', 'r-11', 'r-12']],
      );
      assert.deepEqual(settled(), [], 'no call has answered');

      answers[first]!.resolve([]);
      await flush();
      // a has entries only in the first call, c only in the second, b in both.
      assert.deepEqual(settled(), first === 0 ? ['a'] : ['c']);

      answers[1 - first]!.resolve([]);
      await flush();
      assert.deepEqual(settled(), ['a', 'b', 'c']);
      assert.deepEqual(
        [callers.a.result(), callers.b.result(), callers.c.result()],
        [
          { done: 7, failed: [] },
          { done: 5, failed: [] },
          { done: 1, failed: [] },
        ],
      );
    });
  }
});
