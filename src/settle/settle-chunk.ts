import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import type { ResolvedQueue } from '../aws/sqs-source.ts';
import type { DeleteMode } from '../config/config.ts';
import { interpretResult } from '../invoke/invoke-result.ts';
import { capText } from '../util/cap-text.ts';
import type { DispatchMetrics } from '../operator/metrics/dispatch-metrics.ts';
import type { DispatchTracer } from '../operator/tracing/tracer.ts';
import { ids } from './receipts.ts';
import type { DeleteBatcher } from './delete-batcher.ts';
import { SETTLE_DEADLINE_MS } from './settle-deadline.ts';
import type { VisibilityLease } from './visibility-lease.ts';
import type { InvokeOutcome } from '../invoke/retry.ts';

/** How an invocation of a chunk ended, short of a shutdown (src/settle/release.ts settles that). */
export type ChunkOutcome = Exclude<InvokeOutcome, { kind: 'released' }>;

export interface SettleDeps {
  readonly deleteMode: DeleteMode;
  readonly functionName: string;
  readonly log: Logger;
  readonly metrics: Pick<DispatchMetrics, 'failedInvoke' | 'invoked' | 'deleted'>;
  readonly tracer: Pick<DispatchTracer, 'settle'>;
  readonly deleter: Pick<DeleteBatcher, 'delete'>;
  readonly now: () => number;
  /** Marks the loop's activity for liveness (src/dispatch/loop-activity.ts). */
  readonly mark: (activity: string, deadlineMs: number) => void;
  /** Sets the retry back-off of the messages kept (src/settle/set-retry-backoff.ts). */
  readonly backOff: (kept: Message[]) => Promise<void>;
}

/**
 * Settles one invoked chunk from its outcome: the function's verdict (src/invoke/invoke-result.ts) says which
 * messages are deleted and which are kept; kept ones get their retry back-off. Returns the ids kept on the
 * queue. `started`: when the chunk's invocation began, for the log.
 */
export async function settleChunk(
  batch: { readonly queue: ResolvedQueue; readonly lease: Pick<VisibilityLease, 'stop' | 'lapsedOf' | 'expiresAt'> },
  messages: Message[],
  outcome: ChunkOutcome,
  started: number,
  deps: SettleDeps,
): Promise<string[]> {
  const { queue, lease } = batch;
  // Built after the call, so they are not kept for its whole duration.
  const messageIds = ids(messages);
  const context = { queue: queue.name, messageIds, function: deps.functionName };
  if (outcome.kind === 'lapsed') {
    // The payload holds every message of the chunk: none of it is invoked. The messages still leased
    // return after their visibility timeout with the lapsed ones (counted by the lease's onLapse).
    await lease.stop(messages);
    deps.log.error(
      { ...context, lapsedIds: ids(outcome.lapsed) },
      'the visibility lease lapsed before the invocation; not invoking these messages, SQS delivers them again',
    );
    return messageIds;
  }
  if (outcome.kind === 'failed') {
    deps.metrics.failedInvoke(queue.name, messages.length);
    await lease.stop(messages);
    const { code, message } = outcome.error;
    deps.log.error({ ...context, err: { kind: outcome.error.kind, code, message } }, 'Invoke failed; messages stay on the queue');
    return messageIds;
  }
  const verdict = interpretResult(outcome.response, messageIds, queue.fifo);
  deps.metrics.invoked(queue.name, messages.length, outcome.durationMs);
  deps.log.debug({ ...context, durationMs: deps.now() - started, result: verdict.kind }, 'invoked');
  if (verdict.kind === 'function-error') {
    deps.log.error(
      // Both are the function's own text, of any size, and may hold payload data: capped (src/util/cap-text.ts).
      { ...context, errorType: capText(verdict.errorType), errorMessage: capText(verdict.errorMessage) },
      'function error; messages stay on the queue',
    );
  } else if (verdict.kind === 'invalid-response') {
    deps.log.error({ ...context, reason: verdict.reason }, 'invalid batchItemFailures response; the whole batch stays on the queue');
  } else if (verdict.kind === 'partial') {
    deps.log.warn({ ...context, failedMessageIds: verdict.keepIds }, 'function reported failed items; they stay on the queue');
  }
  if (verdict.kind === 'function-error' || verdict.kind === 'invalid-response') deps.metrics.failedInvoke(queue.name, messages.length);
  const kept = new Set(verdict.keepIds);
  // The one case a lease cannot rule out: it lapsed while the invocation ran, which cannot be recalled. The
  // result still counts: nothing is invoked again, failed messages get no back-off, and processed ones are
  // deleted with the receipt handle we hold, which SQS honours only if nobody received them since (otherwise
  // "the request succeeds, but the message will not be deleted", DeleteMessage API reference); so they are
  // not counted as deleted.
  const lapsed = new Set(lease.lapsedOf(messages));
  if (lapsed.size > 0) {
    deps.log.warn(
      { ...context, lapsedIds: ids([...lapsed]) },
      'the visibility lease lapsed while the invocation ran; its result is settled with the old receipt handles and nothing is invoked again',
    );
  }
  // Failed messages leave the lease first: they come back after their visibility timeout, as on the trigger.
  const keptMessages = messages.filter((m) => kept.has(m.MessageId ?? ''));
  await lease.stop(keptMessages);
  await deps.backOff(keptMessages.filter((m) => !lapsed.has(m)));
  if (deps.deleteMode === 'on-success' && verdict.deleteIds.length > 0) {
    const byId = new Map(messages.map((m) => [m.MessageId ?? '', m]));
    const entries = verdict.deleteIds.map((id) => ({ id, receiptHandle: byId.get(id)?.ReceiptHandle ?? '' }));
    // The lease keeps these invisible until the delete has completed, however long its retries take.
    deps.mark('delete', SETTLE_DEADLINE_MS);
    const toDelete = messages.filter((m) => !kept.has(m.MessageId ?? ''));
    const result = await deps.tracer.settle(
      queue,
      'delete',
      toDelete,
      () =>
        deps.deleter.delete(
          queue,
          entries,
          () => lease.expiresAt(toDelete),
          // Each retry renews the activity's deadline: a loop waiting out an SQS outage is not stuck.
          () => deps.mark('delete', SETTLE_DEADLINE_MS),
        ),
      (r) => (r.failed.length > 0 ? 'entries_failed' : undefined),
    );
    const refused = new Set(result.failed.map((f) => f.id));
    deps.metrics.deleted(queue.name, toDelete.filter((m) => !lapsed.has(m) && !refused.has(m.MessageId ?? '')).length);
    if (result.failed.length > 0) {
      deps.log.error({ ...context, failed: result.failed }, 'DeleteMessageBatch refused some messages; they will be delivered again');
    }
  }
  await lease.stop(messages);
  return verdict.keepIds;
}
