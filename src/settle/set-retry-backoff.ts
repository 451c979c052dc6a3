import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import type { MessageSource, ResolvedQueue } from '../core/queue.ts';
import type { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import type { Random } from '../receive/queue-order.ts';
import { planHandlerDelays } from './handler-delay.ts';
import { ids, receipts } from './receipts.ts';
import { MAX_VISIBILITY_SEC, planRetryBackoff, receiveCountOf, type RetryBackoff } from './retry-backoff.ts';
import { changeVisibility } from './visibility-change.ts';
import { SETTLE_DEADLINE_MS } from './settle-deadline.ts';

export interface BackOffDeps {
  /** The queue's policy, resolved (retryBackoffFor); undefined: none. */
  readonly policy: RetryBackoff | undefined;
  readonly source: MessageSource;
  readonly log: Logger;
  readonly random: Random;
  readonly now: () => number;
  /** Marks the loop's activity for liveness (src/dispatch/loop-activity.ts). */
  readonly mark: (activity: string, deadlineMs: number) => void;
  readonly metrics: Pick<DispatchMetrics, 'retryDelayInvalid' | 'retryDelayClamped'>;
}

const NO_DELAYS: ReadonlyMap<string, unknown> = new Map();

/**
 * --retry-backoff: gives messages kept after a failed invocation a visibility timeout from the back-off curve
 * (src/settle/retry-backoff.ts), so they return sooner or later than the queue's own timeout. They have
 * left the lease already, so no extension overrides it. On FIFO the delay is per message group. A queue's own
 * policy (queue-options) comes before --retry-backoff.
 *
 * A delay the function chose for a message (`retryDelaySeconds` in its batchItemFailures entry: `delays`, by id;
 * src/settle/handler-delay.ts) comes before both; an invalid one is logged and counted, and the message gets
 * the back-off as if it had none.
 */
export async function setRetryBackoff(
  batch: { readonly queue: ResolvedQueue; readonly receivedAt: number },
  kept: Message[],
  deps: BackOffDeps,
  delays: ReadonlyMap<string, unknown> = NO_DELAYS,
): Promise<void> {
  const { queue } = batch;
  const policy = deps.policy;
  if (kept.length === 0 || (policy === undefined && delays.size === 0)) return;
  // SQS refuses a timeout that ends more than 12 hours after the receive that returned the handle.
  const limitSec = Math.floor(MAX_VISIBILITY_SEC - (deps.now() - batch.receivedAt) / 1000) - 1;
  const chosen = planHandlerDelays(kept, queue.fifo, delays, limitSec);
  if (chosen.invalid.length > 0) {
    deps.metrics.retryDelayInvalid(queue.name, chosen.invalid.length);
    deps.log.warn(
      { queue: queue.name, messageIds: ids(chosen.invalid.map((i) => i.message)), reasons: chosen.invalid.map((i) => i.reason) },
      'the function gave an invalid retry delay; those messages get the retry back-off instead',
    );
  }
  if (chosen.clamped.length > 0) {
    deps.metrics.retryDelayClamped(queue.name, chosen.clamped.length);
    deps.log.warn(
      { queue: queue.name, messageIds: ids(chosen.clamped.map((c) => c.message)), delaySec: chosen.clamped.map((c) => c.sec) },
      "the function's retry delay is beyond SQS's 12-hour visibility limit; clamped to it",
    );
  }
  const changes = [
    ...chosen.changes.map((change) => ({ change, chosen: true })),
    ...(policy === undefined ? [] : planRetryBackoff(chosen.rest, queue.fifo, policy, deps.random, limitSec)).map((change) => ({
      change,
      chosen: false,
    })),
  ];
  for (const { change, chosen: byFunction } of changes) {
    // One activity per call (with its retries): on FIFO there is a call per message group.
    deps.mark('back-off', SETTLE_DEADLINE_MS);
    const context = {
      queue: queue.name,
      messageIds: ids(change.messages),
      delaySec: change.timeoutSec,
      receiveCounts: change.messages.map(receiveCountOf),
    };
    const result = await changeVisibility(deps.source, deps.log, queue, receipts(change.messages), change.timeoutSec, () =>
      deps.mark('back-off', SETTLE_DEADLINE_MS),
    );
    if (result.failed.length > 0)
      deps.log.warn(
        { ...context, failed: result.failed },
        'could not set the retry back-off of some messages; they return after their visibility timeout',
      );
    else if (byFunction) deps.log.debug(context, 'retry delay set as the function chose');
    else deps.log.debug(context, 'retry back-off set');
  }
}
