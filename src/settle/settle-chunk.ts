import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import type { ResolvedQueue } from '../core/queue.ts';
import { interpretResult, type BatchVerdict } from './invoke-result.ts';
import { capText } from '../util/cap-text.ts';
import type { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import type { DispatchTracer } from '../core/telemetry/tracer.ts';
import { ids } from './receipts.ts';
import type { DeleteBatcher } from './delete-batcher.ts';
import { deleteLeased } from './delete-leased.ts';
import type { VisibilityLease } from './visibility-lease.ts';
import type { InvokeOutcome } from '../invoke/retry.ts';
import type { FailureReason } from './failure-destination.ts';
import { messageIdOf } from '../core/message.ts';

/** --delete: on-success deletes what the function processed (its batchItemFailures stay); never leaves deleting to the function. */
export type DeleteMode = 'on-success' | 'never';

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
  /**
   * Sets the retry back-off of the messages kept (src/settle/set-retry-backoff.ts); `delays`: the retry delays the
   * function chose, by id, as its batchItemFailures entries gave them.
   */
  readonly backOff: (kept: Message[], delays?: ReadonlyMap<string, unknown>) => Promise<void>;
  /**
   * The queue's failure destination (src/settle/deliver-failures.ts): sends the kept messages that failed on their
   * last allowed receive and deletes them; returns those. Undefined: the queue has none.
   */
  readonly toDestination?: ((kept: Message[], failed: ReadonlySet<string>, reason: FailureReason) => Promise<Message[]>) | undefined;
}

/**
 * Settles one invoked chunk from its outcome: the function's verdict (src/settle/invoke-result.ts) says which
 * messages are deleted and which are kept; kept ones get their retry back-off. Returns the ids kept on the
 * queue. `started`: when the chunk's invocation began, for the log.
 */
export async function settleChunk(
  batch: { readonly queue: ResolvedQueue; readonly lease: ChunkLease },
  messages: Message[],
  outcome: ChunkOutcome,
  started: number,
  deps: SettleDeps,
): Promise<string[]> {
  const { queue, lease } = batch;
  // Built after the call, so they are not kept for its whole duration.
  const messageIds = ids(messages);
  const chunk: Chunk = { queue, lease, messages, messageIds, context: { queue: queue.name, messageIds, function: deps.functionName } };
  if (outcome.kind === 'lapsed') return settleLapsedBefore(chunk, outcome.lapsed, deps);
  if (outcome.kind === 'failed') return settleFailedInvoke(chunk, outcome.error, deps);
  return settleAnswered(chunk, outcome, started, deps);
}

type ChunkLease = Pick<VisibilityLease, 'stop' | 'lapsedOf' | 'expiresAt'>;

/** The chunk being settled, with what every step logs about it. */
interface Chunk {
  readonly queue: ResolvedQueue;
  readonly lease: ChunkLease;
  readonly messages: Message[];
  readonly messageIds: string[];
  readonly context: { readonly queue: string; readonly messageIds: string[]; readonly function: string };
}

async function settleLapsedBefore(chunk: Chunk, lapsed: Message[], deps: SettleDeps): Promise<string[]> {
  // The payload holds every message of the chunk: none of it is invoked. The messages still leased
  // return after their visibility timeout with the lapsed ones (counted by the lease's onLapse).
  await chunk.lease.stop(chunk.messages);
  deps.log.error(
    { ...chunk.context, lapsedIds: ids(lapsed) },
    'the visibility lease lapsed before the invocation; not invoking these messages, SQS delivers them again',
  );
  return chunk.messageIds;
}

async function settleFailedInvoke(chunk: Chunk, error: FailedOutcome['error'], deps: SettleDeps): Promise<string[]> {
  const { queue, lease, messages, messageIds, context } = chunk;
  deps.metrics.failedInvoke(queue.name, messages.length);
  const { code, message } = error;
  deps.log.error({ ...context, err: { kind: error.kind, code, message } }, 'Invoke failed; messages stay on the queue');
  // Lambda refused these messages themselves (a 413), or the function ran and answered more than Lambda can send:
  // they failed, as a function error would have. Other Invoke failures given up on may have run the function, or
  // say nothing about the messages: they keep the queue's rules.
  const sent =
    error.kind === 'rejected' && deps.toDestination
      ? await deps.toDestination(messages, new Set(messageIds), {
          kind: error.ran ? 'invalid-response' : 'invoke-rejected',
          errorType: code,
          errorMessage: message,
          requestId: undefined,
        })
      : [];
  await lease.stop(messages);
  return messageIds.filter((id) => !sent.some((m) => m.MessageId === id));
}

type FailedOutcome = Extract<ChunkOutcome, { kind: 'failed' }>;
type AnsweredOutcome = Extract<ChunkOutcome, { kind: 'answered' }>;

async function settleAnswered(chunk: Chunk, outcome: AnsweredOutcome, started: number, deps: SettleDeps): Promise<string[]> {
  const verdict = judgeAnswer(chunk, outcome, started, deps);
  // The Sets and filters below are made only when something is kept or lapsed: this runs for every invocation,
  // and most succeed whole.
  const kept: ReadonlySet<string> = verdict.keepIds.length > 0 ? new Set(verdict.keepIds) : NONE;
  const lapsed = lapsedDuringInvoke(chunk, deps);
  const keptIds = await keepFailed(chunk, verdict, kept, lapsed, outcome.response.requestId, deps);
  if (deps.deleteMode === 'on-success' && verdict.deleteIds.length > 0) {
    await deleteProcessed(chunk, verdict.deleteIds, kept, lapsed, deps);
  }
  await chunk.lease.stop(chunk.messages);
  return keptIds;
}

/** Reads the function's answer into a verdict, and counts and logs it. */
function judgeAnswer(chunk: Chunk, outcome: AnsweredOutcome, started: number, deps: SettleDeps): BatchVerdict {
  const { queue, messages, messageIds, context } = chunk;
  const verdict = interpretResult(outcome.response, messageIds, queue.fifo);
  deps.metrics.invoked(queue.name, messages.length, outcome.durationMs);
  // Built only when written: this line runs for every invocation, and debug is rarely on.
  if (deps.log.isLevelEnabled('debug')) deps.log.debug({ ...context, durationMs: deps.now() - started, result: verdict.kind }, 'invoked');
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
  return verdict;
}

/**
 * The one case a lease cannot rule out: it lapsed while the invocation ran, which cannot be recalled. The
 * result still counts: nothing is invoked again, failed messages get no back-off, and processed ones are
 * deleted with the receipt handle we hold, which SQS honours only if nobody received them since (otherwise
 * "the request succeeds, but the message will not be deleted", DeleteMessage API reference); so they are
 * not counted as deleted.
 */
function lapsedDuringInvoke(chunk: Chunk, deps: SettleDeps): ReadonlySet<Message> {
  const lapsedList = chunk.lease.lapsedOf(chunk.messages);
  const lapsed: ReadonlySet<Message> = lapsedList.length > 0 ? new Set(lapsedList) : NONE;
  if (lapsed.size > 0) {
    deps.log.warn(
      { ...chunk.context, lapsedIds: ids(lapsedList) },
      'the visibility lease lapsed while the invocation ran; its result is settled with the old receipt handles and nothing is invoked again',
    );
  }
  return lapsed;
}

/**
 * Hands the kept messages back to the queue's rules: the failure destination for those on their last allowed
 * receive, the retry back-off for the others. Returns the ids kept on the queue.
 */
async function keepFailed(
  chunk: Chunk,
  verdict: BatchVerdict,
  kept: ReadonlySet<string>,
  lapsed: ReadonlySet<Message>,
  requestId: string | undefined,
  deps: SettleDeps,
): Promise<string[]> {
  const { messages, lease } = chunk;
  let keptMessages = kept.size > 0 ? messages.filter((m) => kept.has(messageIdOf(m))) : [];
  // Those on their last allowed receive go to the failure destination while the lease still hides them.
  const sent: ReadonlySet<Message> =
    deps.toDestination && verdict.kind !== 'success'
      ? new Set(
          await deps.toDestination(
            keptMessages.filter((m) => !lapsed.has(m)),
            new Set(verdict.kind === 'partial' ? verdict.failedIds : verdict.keepIds),
            failureReason(verdict, requestId),
          ),
        )
      : NONE;
  if (sent.size > 0) keptMessages = keptMessages.filter((m) => !sent.has(m));
  // Failed messages leave the lease first: they come back after their visibility timeout, as on the trigger.
  await lease.stop(keptMessages);
  const toBackOff = lapsed.size > 0 ? keptMessages.filter((m) => !lapsed.has(m)) : keptMessages;
  if (toBackOff.length > 0) await deps.backOff(toBackOff, verdict.kind === 'partial' ? verdict.retryDelays : undefined);
  return sent.size === 0 ? verdict.keepIds : ids(keptMessages);
}

/** --delete on-success: deletes what the function processed, counting only what SQS will really delete. */
async function deleteProcessed(
  chunk: Chunk,
  deleteIds: string[],
  kept: ReadonlySet<string>,
  lapsed: ReadonlySet<Message>,
  deps: SettleDeps,
): Promise<void> {
  const { queue, messages, context } = chunk;
  const byId = new Map(messages.map((m) => [messageIdOf(m), m]));
  const entries = deleteIds.map((id) => ({ id, receiptHandle: byId.get(id)?.ReceiptHandle ?? '' }));
  const toDelete = kept.size > 0 ? messages.filter((m) => !kept.has(messageIdOf(m))) : messages;
  const result = await deleteLeased(chunk, toDelete, deps, deps.tracer, entries);
  const refused: ReadonlySet<string> = result.failed.length > 0 ? new Set(result.failed.map((f) => f.id)) : NONE;
  const counted =
    lapsed.size > 0 || refused.size > 0 ? toDelete.filter((m) => !lapsed.has(m) && !refused.has(messageIdOf(m))).length : toDelete.length;
  deps.metrics.deleted(queue.name, counted);
  if (result.failed.length > 0) {
    deps.log.error({ ...context, failed: result.failed }, 'DeleteMessageBatch refused some messages; they will be delivered again');
  }
}

/** The empty set, shared: a settle that keeps nothing makes none. */
const NONE: ReadonlySet<never> = new Set();

/** The reason a failure record gives for a verdict that kept messages. */
function failureReason(verdict: Exclude<BatchVerdict, { kind: 'success' }>, requestId: string | undefined): FailureReason {
  switch (verdict.kind) {
    case 'function-error':
      return { kind: 'function-error', errorType: verdict.errorType, errorMessage: verdict.errorMessage, requestId };
    case 'invalid-response':
      return { kind: 'invalid-response', errorType: 'InvalidResponse', errorMessage: verdict.reason, requestId };
    case 'partial':
      return { kind: 'item-failure', errorType: 'BatchItemFailure', errorMessage: '', requestId };
  }
}
