import type { Message } from '@aws-sdk/client-sqs';
import type { ReceiptEntry, ResolvedQueue } from '../core/queue.ts';
import type { DispatchTracer } from '../core/telemetry/tracer.ts';
import type { SettleResult } from './batch-call.ts';
import type { DeleteBatcher } from './delete-batcher.ts';
import { receipts } from './receipts.ts';
import { SETTLE_DEADLINE_MS } from './settle-deadline.ts';
import type { VisibilityLease } from './visibility-lease.ts';

export interface LeasedDeleteDeps {
  readonly deleter: Pick<DeleteBatcher, 'delete'>;
  /** Marks the loop's activity for liveness (src/dispatch/loop-activity.ts). */
  readonly mark: (activity: string, deadlineMs: number) => void;
}

/**
 * Deletes messages that the batch's visibility lease still hides: the processed ones of a chunk
 * (src/settle/settle-chunk.ts), the filtered-out ones (src/dispatch/batch-filter.ts), the ones the failure
 * destination accepted (src/settle/deliver-failures.ts). The lease keeps them invisible until the delete has
 * completed, however long its retries take: the delete batcher retries until the first of them would be visible
 * again, and each retry renews the loop's 'delete' activity, so a loop waiting out an SQS outage is not stuck.
 * `tracer`: the settle span around the call, where the caller draws one. `entries`: what is deleted, by default
 * the receipts of `messages`. Resolves with what SQS refused; the caller logs and counts it.
 */
export function deleteLeased(
  batch: { readonly queue: ResolvedQueue; readonly lease: Pick<VisibilityLease, 'expiresAt'> },
  messages: readonly Message[],
  deps: LeasedDeleteDeps,
  tracer: Pick<DispatchTracer, 'settle'> | undefined,
  entries: readonly ReceiptEntry[] = receipts(messages),
): Promise<SettleResult> {
  const { queue, lease } = batch;
  deps.mark('delete', SETTLE_DEADLINE_MS);
  const call = () =>
    deps.deleter.delete(
      queue,
      entries,
      () => lease.expiresAt(messages),
      () => deps.mark('delete', SETTLE_DEADLINE_MS),
    );
  return tracer ? tracer.settle(queue, 'delete', messages, call, (r) => (r.failed.length > 0 ? 'entries_failed' : undefined)) : call();
}
