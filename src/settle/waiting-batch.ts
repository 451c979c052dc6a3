import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import type { MessageSource, ResolvedQueue } from '../core/queue.ts';
import type { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import { ids, receipts } from './receipts.ts';
import { changeVisibility } from './visibility-change.ts';
import type { VisibilityLease } from './visibility-lease.ts';

/**
 * A stop while a batch waited in the ready set for a loop: nothing of it ran, so it is made visible again at once
 * (ChangeMessageVisibility 0), never left invisible until its timeout. Its receive count stays one up.
 */
export async function releaseWaiting(
  queue: ResolvedQueue,
  messages: readonly Message[],
  lease: VisibilityLease,
  source: MessageSource,
  log: Logger,
  metrics: DispatchMetrics,
): Promise<void> {
  await lease.end();
  await changeVisibility(source, log, queue, receipts(messages), 0);
  metrics.released(queue.name, messages.length);
  log.warn({ queue: queue.name, messageIds: ids(messages) }, 'shutting down while these messages waited for a free loop; released them');
}
