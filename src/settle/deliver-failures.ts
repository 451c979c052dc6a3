import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { callErrorOf } from '../core/errors.ts';
import { DESTINATION_DEADLINE_MS, type ResolvedQueue } from '../core/queue.ts';
import type { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import { capText } from '../util/cap-text.ts';
import type { DeleteBatcher } from './delete-batcher.ts';
import {
  destinationMessage,
  destinationName,
  failureRecord,
  pickForDestination,
  type DestinationMessage,
  type FailureDestination,
  type FailureReason,
} from './failure-destination.ts';
import type { FailureReasons } from './failure-reasons.ts';
import { ids } from './receipts.ts';
import { deleteLeased } from './delete-leased.ts';
import type { VisibilityLease } from './visibility-lease.ts';
import { messageGroupOf, messageIdOf } from '../core/message.ts';

/**
 * Sends one message to a destination (SQS SendMessage or SNS Publish, src/aws/failure-sender.ts); resolves
 * once the destination accepted it, throws (an AwsCallError) when it did not.
 */
export type DestinationSender = (destination: FailureDestination, message: DestinationMessage, signal?: AbortSignal) => Promise<void>;

/** A queue's failure destination and the receives its messages are allowed. */
export interface FailureRoute {
  readonly destination: FailureDestination;
  readonly maxAttempts: number;
}

export interface DeliverDeps {
  readonly send: DestinationSender;
  readonly deleter: Pick<DeleteBatcher, 'delete'>;
  readonly log: Logger;
  readonly metrics: Pick<DispatchMetrics, 'failureDelivered' | 'failureNotDelivered' | 'deleted'>;
  readonly functionName: string;
  /** Wall-clock time for the record's timestamp. */
  readonly wallNow: () => number;
  readonly mark: (activity: string, deadlineMs: number) => void;
  /** Keeps the reason of each message whose record was refused, for its next record (src/settle/failure-reasons.ts). */
  readonly failureReasons?: FailureReasons | undefined;
}

/** A send has its deadline (src/aws/destination-send.ts); the loop is not stuck until a little after it. */
const SEND_ACTIVITY_MS = DESTINATION_DEADLINE_MS + 5_000;

/**
 * Of the messages kept after an invocation (`kept`, in batch order; `failed`: the ids that failed themselves;
 * `reason`: why they failed, or each one's reason), picks those on their last allowed receive
 * (pickForDestination), sends a record of each to the queue's failure destination, one at a time and in batch
 * order, then deletes the ones the destination accepted. Returns those, which are settled; the rest stay on the
 * queue under its own rules (its redrive moves them to the DLQ; without one, they come back past their allowed
 * receives and src/settle/settle-exhausted.ts sends them again, uninvoked), so nothing is lost while the
 * destination is down. The lease keeps every one of them invisible meanwhile.
 *
 * On a FIFO source, a message whose group already had a send refused is not sent: its record must not arrive
 * before the one it follows.
 */
export async function deliverFailures(
  batch: { readonly queue: ResolvedQueue; readonly lease: Pick<VisibilityLease, 'expiresAt'> },
  kept: readonly Message[],
  failed: ReadonlySet<string>,
  reason: FailureReason | ((m: Message) => FailureReason),
  route: FailureRoute,
  deps: DeliverDeps,
): Promise<Message[]> {
  const { queue } = batch;
  const messages = pickForDestination(kept, failed, queue.fifo, route.maxAttempts);
  if (messages.length === 0) return [];
  const accepted: Message[] = [];
  const refused: { id: string; code: string; message: string }[] = [];
  const blockedGroups = new Set<string>();
  const reasonOf = typeof reason === 'function' ? reason : () => reason;
  for (const m of messages) {
    const group = messageGroupOf(m);
    if (queue.fifo && blockedGroups.has(group)) {
      refused.push({ id: messageIdOf(m), code: 'GroupBlocked', message: 'an earlier message of its group was not accepted' });
      continue;
    }
    const why = reasonOf(m);
    const record = failureRecord(m, queue, why, {
      functionName: deps.functionName,
      maxAttempts: route.maxAttempts,
      nowMs: deps.wallNow(),
    });
    deps.mark('failure destination', SEND_ACTIVITY_MS);
    try {
      await deps.send(route.destination, destinationMessage(record, route.destination));
      accepted.push(m);
      deps.failureReasons?.forget(queue.arn, messageIdOf(m));
    } catch (err) {
      const e = callErrorOf(err);
      refused.push({ id: messageIdOf(m), code: e.code, message: capText(e.message) });
      blockedGroups.add(group);
      // The message comes back past its allowed receives and is not invoked again: its next record tells this.
      deps.failureReasons?.remember(queue.arn, messageIdOf(m), why);
    }
  }
  const context = { queue: queue.name, function: deps.functionName, destination: destinationName(route.destination) };
  if (refused.length > 0) {
    deps.metrics.failureNotDelivered(queue.name, refused.length);
    deps.log.error(
      { ...context, failed: refused },
      'could not send failed messages to the failure destination; they stay on the queue under its redrive policy',
    );
  }
  if (accepted.length === 0) return [];
  deps.metrics.failureDelivered(queue.name, accepted.length);
  deps.log.warn(
    { ...context, messageIds: ids(accepted), errorType: capText(reasonOf(accepted[0]!).errorType), attempts: route.maxAttempts },
    'failed messages sent to the failure destination; deleting them',
  );
  const result = await deleteLeased(batch, accepted, deps, undefined);
  const notDeleted = new Set(result.failed.map((f) => f.id));
  deps.metrics.deleted(queue.name, accepted.filter((m) => !notDeleted.has(messageIdOf(m))).length);
  if (result.failed.length > 0) {
    // Delivered, not deleted: SQS delivers it again, and its record is sent again (a FIFO destination drops the
    // copy within its 5-minute deduplication interval).
    deps.log.error({ ...context, failed: result.failed }, 'DeleteMessageBatch refused messages already sent to the failure destination');
  }
  return accepted;
}
