import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { AwsCallError } from '../../../src/core/errors.ts';
import type { EntryFailure, MessageSource, ReceiptEntry } from '../../../src/core/queue.ts';
import type { SettleResult } from '../../../src/settle/batch-call.ts';
import { changeVisibility } from '../../../src/settle/visibility-change.ts';
import { queue, recordingLogger } from '../../support/factories.ts';

describe('changeVisibility', () => {
  it('calls onChunk before each batch call after the first, so a release of many messages renews its step per call', async () => {
    const trail: string[] = [];
    const source: Pick<MessageSource, 'changeVisibility'> = {
      changeVisibility: (_q, entries: readonly ReceiptEntry[]): Promise<EntryFailure[]> => {
        trail.push(`call ${entries.length}`);
        return Promise.resolve([]);
      },
    };
    const entries = Array.from({ length: 25 }, (_, i) => ({ id: `m-${i}`, receiptHandle: `r-${i}` }));
    const result = await changeVisibility(source as MessageSource, recordingLogger().logger, queue('q'), entries, 0, () =>
      trail.push('renew'),
    );
    assert.deepEqual(result, { done: 25, failed: [] });
    // SQS batch calls take at most 10 entries.
    assert.deepEqual(trail, ['call 10', 'renew', 'call 10', 'renew', 'call 5']);
  });
});

// SQS's rules are those of AWS's ChangeMessageVisibilityBatch API reference
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibilityBatch.html):
// 1 to 10 entries a request, each Id unique within it; the answer is 200 with `Successful` and `Failed` entries
// (Id, Code, Message, SenderFault), so some entries can fail while the others change.
describe('changeVisibility, call by call', () => {
  const START = 1_000_000;
  /** Math.random() just below 1: each back-off is its ceiling minus 1 ms (99, 199, 399, 799, 999, 999...). */
  const highest = () => 1 - 1e-9;
  const q = queue('q');

  interface VisibilityCall {
    readonly at: number;
    readonly entries: readonly ReceiptEntry[];
    readonly timeoutSec: number;
  }

  /** Records each ChangeMessageVisibilityBatch call and answers it as `respond` says; refuses what SQS refuses. */
  function visibilitySource(respond: (call: VisibilityCall, index: number) => Promise<EntryFailure[]> | EntryFailure[] = () => []) {
    const calls: VisibilityCall[] = [];
    const refusals: string[] = [];
    const source: Pick<MessageSource, 'changeVisibility'> = {
      changeVisibility: async (_q, entries, timeoutSec) => {
        const call = { at: Date.now() - START, entries: entries.map((e) => ({ id: e.id, receiptHandle: e.receiptHandle })), timeoutSec };
        calls.push(call);
        if (entries.length < 1 || entries.length > 10) refusals.push('TooManyEntriesInBatchRequest');
        if (new Set(entries.map((e) => e.id)).size !== entries.length) refusals.push('BatchEntryIdsNotDistinct');
        return respond(call, calls.length - 1);
      },
    };
    return { source: source as MessageSource, calls, refusals };
  }

  const receipts = (count: number) => Array.from({ length: count }, (_, i) => ({ id: `m-${i}`, receiptHandle: `r-${i}` }));
  const flush = () => new Promise((r) => setImmediate(r));
  async function advance(ms: number): Promise<void> {
    for (let done = 0; done < ms; done++) {
      mock.timers.tick(1);
      await flush();
    }
  }

  beforeEach(() => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START });
    mock.method(Math, 'random', highest);
  });
  afterEach(() => {
    mock.timers.reset();
    mock.restoreAll();
  });

  it('makes no call for no entries', async () => {
    const s = visibilitySource();
    assert.deepEqual(await changeVisibility(s.source, recordingLogger().logger, q, [], 0), { done: 0, failed: [] });
    assert.equal(s.calls.length, 0);
  });

  it("reports each chunk's Failed entries under the caller's message ids, and passes the timeout on every call", async () => {
    // SQS refuses entry 3 of the second call: a receipt handle from an earlier receive.
    const s = visibilitySource((call, index) =>
      index === 1 ? [{ id: call.entries[3]!.id, code: 'ReceiptHandleIsInvalid', message: 'The input receipt handle is invalid.' }] : [],
    );
    const result = await changeVisibility(s.source, recordingLogger().logger, q, receipts(15), 45);
    assert.deepEqual(result, {
      done: 14,
      failed: [{ id: 'm-13', code: 'ReceiptHandleIsInvalid', message: 'The input receipt handle is invalid.' }],
    });
    assert.deepEqual(
      s.calls.map((c) => [c.timeoutSec, c.entries.map((e) => e.receiptHandle)]),
      [
        [45, receipts(10).map((r) => r.receiptHandle)],
        [
          45,
          receipts(15)
            .slice(10)
            .map((r) => r.receiptHandle),
        ],
      ],
    );
    assert.deepEqual(s.refusals, []);
  });

  it('sends the next chunk only once the one before has answered', async () => {
    let answer: (failures: EntryFailure[]) => void = () => {};
    const s = visibilitySource(() => new Promise<EntryFailure[]>((resolve) => (answer = resolve)));
    const result = changeVisibility(s.source, recordingLogger().logger, q, receipts(12), 0);
    await flush();
    assert.equal(s.calls.length, 1);
    answer([]);
    await flush();
    assert.equal(s.calls.length, 2);
    answer([]);
    assert.deepEqual(await result, { done: 12, failed: [] });
  });

  it("retries a retryable error with back-off, 8 attempts in all, then reports that chunk's entries failed and goes on to the next", async () => {
    const error = new AwsCallError('ChangeMessageVisibilityBatch', { kind: 'retryable', code: 'InternalError', message: 'boom' });
    const s = visibilitySource((call) => (call.entries.length === 10 ? Promise.reject(error) : []));
    const { logger, lines } = recordingLogger();
    let result: SettleResult | undefined;
    void changeVisibility(s.source, logger, q, receipts(15), 0).then((r) => (result = r));
    await flush();
    await advance(5_000);
    assert.deepEqual(
      s.calls.map((c) => [c.at, c.entries.length]),
      [...[0, 99, 298, 697, 1496, 2495, 3494, 4493].map((at) => [at, 10]), [4493, 5]],
    );
    assert.deepEqual(result, {
      done: 5,
      failed: receipts(10).map((r) => ({ id: r.id, code: 'InternalError', message: 'boom' })),
    });
    assert.deepEqual(
      lines.filter((l) => l.msg === 'ChangeMessageVisibilityBatch failed').map((l) => l.level),
      [40, 40, 40, 40, 40, 40, 40, 50],
    );
  });

  it('does not retry a fatal error', async () => {
    const error = new AwsCallError('ChangeMessageVisibilityBatch', { kind: 'fatal', code: 'AccessDenied', message: 'no' });
    const s = visibilitySource(() => Promise.reject(error));
    let result: SettleResult | undefined;
    void changeVisibility(s.source, recordingLogger().logger, q, receipts(3), 0).then((r) => (result = r));
    await advance(10);
    assert.equal(s.calls.length, 1);
    assert.deepEqual(result, { done: 0, failed: receipts(3).map((r) => ({ id: r.id, code: 'AccessDenied', message: 'no' })) });
  });
});
