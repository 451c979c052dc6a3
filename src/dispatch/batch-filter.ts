import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import type { ResolvedQueue } from '../core/queue.ts';
import type { QueueOptions } from './queue-options.ts';
import { toRecord } from '../invoke/sqs-event.ts';
import type { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import type { DispatchTracer } from '../core/telemetry/tracer.ts';
import { ids } from '../settle/receipts.ts';
import type { DeleteBatcher } from '../settle/delete-batcher.ts';
import { deleteLeased } from '../settle/delete-leased.ts';
import type { VisibilityLease } from '../settle/visibility-lease.ts';
import { matchesRecord } from '../receive/event-filter.ts';
import { messageGroupOf } from '../core/message.ts';

/** A received batch, before its invocation. */
export interface FilteringBatch {
  readonly queue: ResolvedQueue;
  readonly messages: Message[];
  readonly lease: Pick<VisibilityLease, 'stop' | 'expiresAt'>;
}

export interface FilterDeps {
  /** The queue's own options (queue-options); no filter, nothing to do. */
  readonly options: QueueOptions | undefined;
  readonly log: Logger;
  readonly metrics: Pick<DispatchMetrics, 'filtered'>;
  readonly tracer: Pick<DispatchTracer, 'settle'>;
  readonly deleter: Pick<DeleteBatcher, 'delete'>;
  /** Marks the loop's activity for liveness (src/dispatch/loop-activity.ts). */
  readonly mark: (activity: string, deadlineMs: number) => void;
}

/**
 * The queue's filter (FilterCriteria), applied before the invocation: returns the messages to invoke. The
 * others are counted as filtered out, then deleted unseen (action delete, the trigger's semantics) or left to
 * return after their visibility timeout (action leave). On a FIFO queue with leave, the later messages of a
 * left message's group stay too, so the group keeps its order.
 */
export async function filterBatch(batch: FilteringBatch, deps: FilterDeps): Promise<Message[]> {
  const { queue, lease } = batch;
  const options = deps.options;
  if (!options?.filter) return batch.messages;
  const matched: Message[] = [];
  const filtered: Message[] = [];
  const behind: Message[] = [];
  const leftGroups = new Set<string>();
  const holdGroups = queue.fifo && options.filterAction === 'leave';
  for (const m of batch.messages) {
    const group = messageGroupOf(m);
    if (holdGroups && leftGroups.has(group)) behind.push(m);
    else if (matchesRecord(options.filter, toRecord(m, queue))) matched.push(m);
    else {
      filtered.push(m);
      if (holdGroups) leftGroups.add(group);
    }
  }
  if (filtered.length === 0) return matched;
  deps.metrics.filtered(queue.name, filtered.length);
  const context = { queue: queue.name, messageIds: ids(filtered), action: options.filterAction };
  if (options.filterAction === 'delete') {
    const result = await deleteLeased(batch, filtered, deps, deps.tracer);
    deps.log.debug(context, 'messages matched no filter pattern; deleted');
    if (result.failed.length > 0)
      deps.log.error(
        { ...context, failed: result.failed },
        'DeleteMessageBatch refused some filtered-out messages; they will be delivered again',
      );
  } else {
    deps.log.debug({ ...context, heldBehind: ids(behind) }, 'messages matched no filter pattern; left on the queue');
  }
  await lease.stop([...filtered, ...behind]);
  return matched;
}
