// The one delete under a visibility lease (src/settle/delete-leased.ts), which the chunk's settle, the filter and
// the failure destination share.
import assert from 'node:assert/strict';
import type { Message } from '@aws-sdk/client-sqs';
import { describe, it } from 'node:test';
import type { ReceiptEntry, ResolvedQueue } from '../../../src/core/queue.ts';
import type { DispatchTracer } from '../../../src/core/telemetry/tracer.ts';
import type { SettleResult } from '../../../src/settle/batch-call.ts';
import { deleteLeased } from '../../../src/settle/delete-leased.ts';
import { SETTLE_DEADLINE_MS } from '../../../src/settle/settle-deadline.ts';
import { message, queue } from '../../support/factories.ts';

const Q = queue('q');

/** A delete batcher that records each call, runs its retry hook twice and refuses `refuse`. */
function deleter(refuse: readonly string[] = []) {
  const calls: { entries: readonly ReceiptEntry[]; retryUntil: number }[] = [];
  return {
    calls,
    delete(_q: ResolvedQueue, entries: readonly ReceiptEntry[], retryUntil?: () => number, onRetry?: () => void): Promise<SettleResult> {
      calls.push({ entries, retryUntil: retryUntil?.() ?? 0 });
      onRetry?.();
      onRetry?.();
      const failed = entries
        .filter((e) => refuse.includes(e.id))
        .map((e) => ({ id: e.id, code: 'ReceiptHandleIsInvalid', message: 'gone' }));
      return Promise.resolve({ done: entries.length - failed.length, failed });
    },
  };
}

function tracer() {
  const spans: { operation: string; messages: readonly Message[]; failure: string | undefined }[] = [];
  const t: Pick<DispatchTracer, 'settle'> = {
    async settle(_q, operation, messages, run, failure) {
      const result = await run();
      spans.push({ operation, messages, failure: failure?.(result) });
      return result;
    },
  };
  return { spans, tracer: t };
}

describe('deleteLeased', () => {
  const a = message({ MessageId: 'a', ReceiptHandle: 'ra' });
  const b = message({ MessageId: 'b', ReceiptHandle: 'rb' });
  const lease = { expiresAt: (ms: readonly Message[]) => (ms.length === 2 ? 12_345 : 0) };

  it('deletes the receipts of the messages until the lease would let them go, marking the loop at each retry', async () => {
    const d = deleter();
    const marks: [string, number][] = [];
    const result = await deleteLeased({ queue: Q, lease }, [a, b], { deleter: d, mark: (...m) => marks.push(m) }, undefined);
    assert.deepEqual(result, { done: 2, failed: [] });
    assert.deepEqual(d.calls, [
      {
        entries: [
          { id: 'a', receiptHandle: 'ra' },
          { id: 'b', receiptHandle: 'rb' },
        ],
        retryUntil: 12_345,
      },
    ]);
    assert.deepEqual(marks, [
      ['delete', SETTLE_DEADLINE_MS],
      ['delete', SETTLE_DEADLINE_MS],
      ['delete', SETTLE_DEADLINE_MS],
    ]);
  });

  it('sends the entries it is given, and draws a settle span only when given a tracer', async () => {
    const d = deleter(['b']);
    const { spans, tracer: t } = tracer();
    const entries = [{ id: 'b', receiptHandle: 'other' }];
    const result = await deleteLeased({ queue: Q, lease }, [b], { deleter: d, mark: () => {} }, t, entries);
    assert.equal(result.failed.length, 1);
    assert.deepEqual(d.calls, [{ entries, retryUntil: 0 }]);
    assert.deepEqual(spans, [{ operation: 'delete', messages: [b], failure: 'entries_failed' }]);

    await deleteLeased({ queue: Q, lease }, [a], { deleter: deleter(), mark: () => {} }, t);
    assert.deepEqual(spans.at(-1), { operation: 'delete', messages: [a], failure: undefined });
  });
});
