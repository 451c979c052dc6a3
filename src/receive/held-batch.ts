import type { Message } from '@aws-sdk/client-sqs';
import type { ResolvedQueue } from '../core/queue.ts';

/**
 * A batch an idle poll returned, held while it waits for a loop: `lease` keeps it invisible (the dispatcher's
 * visibility lease, which the batch keeps once a loop takes it), `release` makes it visible again at once (a stop).
 */
export interface HeldBatch<L> {
  readonly lease: L;
  release(): Promise<void>;
}

/**
 * The port the idle state holds a batch by, from its poll's answer on, while it may wait in the ready set for a
 * loop (src/settle/waiting-batch.ts holds it under a visibility lease).
 */
export type HoldBatch<L> = (queue: ResolvedQueue, messages: Message[], visibilityTimeoutSec: number) => HeldBatch<L>;
