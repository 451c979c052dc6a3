import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import type { MessageSource, ResolvedQueue } from '../core/queue.ts';
import type { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import type { HoldBatch } from '../receive/held-batch.ts';
import { ids, receipts } from './receipts.ts';
import { changeVisibility } from './visibility-change.ts';
import { VisibilityLease, type LeaseDeps } from './visibility-lease.ts';

/** What holding a waiting batch takes. */
interface WaitingBatchDeps {
  /** Every lease's deps (the source, logger and clock a release uses too); read at the first hold. */
  readonly leaseDeps: () => LeaseDeps;
  readonly metrics: Pick<DispatchMetrics, 'released'>;
}

/**
 * Holds what an idle poll returned (the port receive/ declares, src/receive/held-batch.ts): a visibility lease
 * from the poll's answer on, since the batch may wait in the ready set for a loop (and keeps the lease once one
 * takes it); at a stop, releaseWaiting makes it visible again.
 */
export function holdWaiting(deps: WaitingBatchDeps): HoldBatch<VisibilityLease> {
  return (queue, messages, visibilityTimeoutSec) => {
    const leaseDeps = deps.leaseDeps();
    const lease = new VisibilityLease(queue, messages, visibilityTimeoutSec * 1000, leaseDeps.now(), leaseDeps);
    return { lease, release: () => releaseWaiting(queue, messages, lease, leaseDeps.source, leaseDeps.logger, deps.metrics) };
  };
}

/**
 * A stop while a batch waited in the ready set for a loop: nothing of it ran, so it is made visible again at once
 * (ChangeMessageVisibility 0), never left invisible until its timeout. Its receive count stays one up.
 */
async function releaseWaiting(
  queue: ResolvedQueue,
  messages: readonly Message[],
  lease: VisibilityLease,
  source: MessageSource,
  log: Logger,
  metrics: Pick<DispatchMetrics, 'released'>,
): Promise<void> {
  await lease.end();
  await changeVisibility(source, log, queue, receipts(messages), 0);
  metrics.released(queue.name, messages.length);
  log.warn({ queue: queue.name, messageIds: ids(messages) }, 'shutting down while these messages waited for a free loop; released them');
}
