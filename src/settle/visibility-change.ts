import type { Logger } from 'pino';
import type { EntryFailure, MessageSource, ReceiptEntry, ResolvedQueue } from '../core/queue.ts';
import { retryBatchCall, type SettleResult } from './batch-call.ts';
import { SQS_BATCH_MAX } from '../core/queue.ts';

/**
 * Changes the visibility of messages (0 releases them now), in batches of 10, with retries. `onChunk` is called
 * before each batch call after the first: each has its own retries, so a caller's step deadline (liveness) is
 * renewed per call, as a delete's is per retry; 10,000 messages released during an SQS outage are not one step.
 */
export async function changeVisibility(
  source: MessageSource,
  logger: Logger,
  queue: ResolvedQueue,
  entries: readonly ReceiptEntry[],
  timeoutSec: number,
  onChunk: () => void = () => {},
): Promise<SettleResult> {
  const failed: EntryFailure[] = [];
  for (let i = 0; i < entries.length; i += SQS_BATCH_MAX) {
    if (i > 0) onChunk();
    const chunk = entries.slice(i, i + SQS_BATCH_MAX).map((e, k) => ({ id: String(k), receiptHandle: e.receiptHandle, original: e.id }));
    const failures = await retryBatchCall(logger, {
      operation: 'ChangeMessageVisibilityBatch',
      queue,
      send: () => source.changeVisibility(queue, chunk, timeoutSec),
      entryCount: chunk.length,
    });
    for (const f of failures) failed.push({ ...f, id: chunk[Number(f.id)]?.original ?? f.id });
  }
  return { done: entries.length - failed.length, failed };
}
