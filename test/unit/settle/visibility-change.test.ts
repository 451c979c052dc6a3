import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EntryFailure, MessageSource, ReceiptEntry } from '../../../src/aws/sqs-source.ts';
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
