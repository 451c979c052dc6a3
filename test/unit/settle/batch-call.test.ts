// retryBatchCall: the retry policy shared by DeleteMessageBatch (delete-batcher.ts) and
// ChangeMessageVisibilityBatch (visibility-change.ts). Their own tests prove it through them; these pin the rule
// itself: 8 attempts, then more only while a retry can still start before `retryUntil`.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { AwsCallError } from '../../../src/core/errors.ts';
import type { EntryFailure } from '../../../src/core/queue.ts';
import { retryBatchCall } from '../../../src/settle/batch-call.ts';
import { queue, recordingLogger } from '../../support/factories.ts';

const START = 1_000_000;
/** Math.random() just below 1: each back-off is its ceiling minus 1 ms (99, 199, 399, 799, 999, 999...). */
const highest = () => 1 - 1e-9;
/** When the 8 attempts are made, at the highest draw (ms after the first). */
const EIGHT_ATTEMPTS = [0, 99, 298, 697, 1496, 2495, 3494, 4493];

const flush = () => new Promise((r) => setImmediate(r));
async function advance(ms: number): Promise<void> {
  for (let done = 0; done < ms; done++) {
    mock.timers.tick(1);
    await flush();
  }
}

/** Runs retryBatchCall over a call that always fails with `error`; returns when each attempt was made and the result. */
async function failing(error: Error, retryUntil?: () => number, runForMs = 8_000) {
  const at: number[] = [];
  const told: number[] = [];
  const { logger, lines } = recordingLogger();
  let result: EntryFailure[] | undefined;
  void retryBatchCall(logger, {
    operation: 'DeleteMessageBatch',
    queue: queue('q'),
    send: () => {
      at.push(Date.now() - START);
      return Promise.reject(error);
    },
    entryCount: 3,
    ...(retryUntil ? { retryUntil } : {}),
    onRetry: () => told.push(Date.now() - START),
    now: () => Date.now(),
  }).then((r) => (result = r));
  await flush();
  await advance(runForMs);
  return { at, told, lines, result: () => result };
}

describe('retryBatchCall', () => {
  beforeEach(() => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START });
    mock.method(Math, 'random', highest);
  });
  afterEach(() => {
    mock.timers.reset();
    mock.restoreAll();
  });

  const internalError = new AwsCallError('DeleteMessageBatch', { kind: 'retryable', code: 'InternalError', message: 'boom' });

  it('returns what the call returns, the entries SQS refused, without retrying them', async () => {
    const refused = [{ id: '1', code: 'ReceiptHandleIsInvalid', message: 'invalid' }];
    let calls = 0;
    const result = await retryBatchCall(recordingLogger().logger, {
      operation: 'DeleteMessageBatch',
      queue: queue('q'),
      send: () => {
        calls++;
        return Promise.resolve(refused);
      },
      entryCount: 3,
    });
    assert.deepEqual(result, refused);
    assert.equal(calls, 1);
  });

  it('gives up after 8 attempts by default, reporting every entry failed by its Id in the request', async () => {
    const run = await failing(internalError);
    assert.deepEqual(run.at, EIGHT_ATTEMPTS);
    assert.deepEqual(run.told, EIGHT_ATTEMPTS.slice(0, -1), 'told before each retry, not when giving up');
    assert.deepEqual(
      run.result(),
      ['0', '1', '2'].map((id) => ({ id, code: 'InternalError', message: 'boom' })),
    );
    assert.deepEqual(
      run.lines.filter((l) => l.msg === 'DeleteMessageBatch failed').map((l) => [l.level, l['attempt']]),
      [...[0, 1, 2, 3, 4, 5, 6].map((attempt) => [40, attempt]), [50, 7]],
    );
  });

  it('makes a 9th attempt only if it can start before retryUntil', async () => {
    const lastWait = 999;
    // The 9th attempt would start at 4493 + 999 = 5492.
    const reached = await failing(internalError, () => START + 4493 + lastWait);
    assert.deepEqual(reached.at, EIGHT_ATTEMPTS, 'a retry that would start at retryUntil is not made');
    mock.timers.reset();
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START });
    const room = await failing(internalError, () => START + 4493 + lastWait + 1);
    assert.deepEqual(room.at, [...EIGHT_ATTEMPTS, 4493 + lastWait]);
  });

  it('gives up at once on a fatal error, whatever retryUntil allows', async () => {
    const fatal = new AwsCallError('DeleteMessageBatch', { kind: 'fatal', code: 'AccessDenied', message: 'no' });
    const run = await failing(fatal, () => START + 60_000, 100);
    assert.deepEqual(run.at, [0]);
    assert.deepEqual(run.told, []);
    assert.equal(run.result()?.length, 3);
  });

  it('classifies an error the adapter did not classify (a raw network error) as the adapter would, and retries it', async () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' });
    const run = await failing(reset);
    assert.deepEqual(run.at, EIGHT_ATTEMPTS);
    assert.equal(run.result()?.[0]?.code, 'ECONNRESET');
  });
});
