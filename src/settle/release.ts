import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import type { MessageSource, ResolvedQueue } from '../core/queue.ts';
import type { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import type { DispatchTracer } from '../core/telemetry/tracer.ts';
import type { Receiver } from '../receive/receiver.ts';
import { ids, receipts } from './receipts.ts';
import { changeVisibility } from './visibility-change.ts';
import { SETTLE_DEADLINE_MS } from './settle-deadline.ts';
import type { VisibilityLease } from './visibility-lease.ts';

export interface ReleaseDeps {
  readonly source: MessageSource;
  readonly receiver: Pick<Receiver, 'quiet'>;
  readonly log: Logger;
  readonly metrics: Pick<DispatchMetrics, 'released'>;
  readonly tracer: Pick<DispatchTracer, 'settle'>;
  readonly functionName: string;
  /** The longest one receive pass can take (the Dispatcher's), part of the release's liveness deadline. */
  readonly receiveDeadlineMs: number;
  /** Marks the loop's activity for liveness (src/dispatch/loop-activity.ts). */
  readonly mark: (activity: string, deadlineMs: number) => void;
}

/**
 * Shutdown while a chunk could not be invoked: `unsettled` (the chunk and every later one of its batch) leave
 * the lease. `atOnce`: they are made visible at once (nothing of theirs can still run); otherwise an earlier
 * invocation may still run, and they return after their visibility timeout.
 */
export async function releaseUnsettled(
  batch: { readonly queue: ResolvedQueue; readonly lease: Pick<VisibilityLease, 'stop'> },
  messages: readonly Message[],
  unsettled: Message[],
  atOnce: boolean,
  deps: ReleaseDeps,
): Promise<void> {
  const { queue, lease } = batch;
  const context = { queue: queue.name, messageIds: ids(messages), function: deps.functionName };
  if (atOnce) {
    // Still under the lease: released only once this dispatcher's own receives have returned (Receiver.quiet).
    deps.mark('release', deps.receiveDeadlineMs + SETTLE_DEADLINE_MS);
    await deps.receiver.quiet();
  }
  await lease.stop(unsettled);
  if (atOnce) {
    await deps.tracer.settle(
      queue,
      'release',
      unsettled,
      () => changeVisibility(deps.source, deps.log, queue, receipts(unsettled), 0, () => deps.mark('release', SETTLE_DEADLINE_MS)),
      (r) => (r.failed.length > 0 ? 'entries_failed' : undefined),
    );
    deps.metrics.released(queue.name, unsettled.length);
    deps.log.warn(
      { ...context, messageIds: ids(unsettled) },
      'shutting down while the function is throttled or unusable; released the messages',
    );
  } else {
    deps.log.warn(
      { ...context, messageIds: ids(unsettled) },
      'shutting down while an earlier invocation may still run; the messages return after their visibility timeout',
    );
  }
}
