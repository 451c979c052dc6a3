import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { sleep } from '../util/backoff.ts';
import { RECEIVE_MARGIN_MS, type ResolvedQueue } from '../core/queue.ts';
import { EMPTY_EVENT_BYTES, recordBytes } from '../invoke/sqs-event.ts';
import type { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import type { VisibilityLease } from '../settle/visibility-lease.ts';
import { decideGather, type BatchWindow } from '../receive/batch-window.ts';
import type { Receiver } from '../receive/receiver.ts';

/** A batch being gathered: what it holds so far, and the lease that keeps it invisible. */
export interface GatheringBatch {
  readonly queue: ResolvedQueue;
  readonly messages: Message[];
  readonly receivedAt: number;
  readonly lease: Pick<VisibilityLease, 'add' | 'timeoutMs'>;
}

export interface GatherDeps {
  readonly window: BatchWindow;
  readonly receiver: Pick<Receiver, 'more' | 'gathering'>;
  readonly log: Logger;
  readonly metrics: Pick<DispatchMetrics, 'gathered'>;
  readonly now: () => number;
  /** Marks the loop's activity for liveness (src/dispatch/loop-activity.ts). */
  readonly mark: (activity: string, deadlineMs: number) => void;
  /** Reports a receive to the tracer. */
  readonly traceReceived: (queue: ResolvedQueue, messages: readonly Message[], startedAt: number) => void;
}

/**
 * --batch-window: receives more from the batch's queue until the batch is full, its window (from the first
 * receive) is over, or the next message would take the payload past Lambda's limit (src/receive/batch-window.ts).
 * What arrives joins the batch's lease at once, so a window longer than the visibility timeout hands nothing
 * out twice; the queue's slot stays with the loop. A stop ends the gathering before the next receive (one
 * already sent completes, and what it returns joins the batch), and so does a failed receive: either way what
 * was gathered is invoked and settled.
 */
export async function gather(batch: GatheringBatch, halt: AbortSignal, deps: GatherDeps): Promise<void> {
  // The window's own receives read the queue meanwhile: no idle poll beside them takes a batch of its own.
  deps.receiver.gathering(batch.queue, true);
  try {
    await gatherWindow(batch, halt, deps);
  } finally {
    deps.receiver.gathering(batch.queue, false);
  }
}

async function gatherWindow(batch: GatheringBatch, halt: AbortSignal, deps: GatherDeps): Promise<void> {
  const { queue, lease, messages } = batch;
  let bytes = EMPTY_EVENT_BYTES;
  let largestRecordBytes = 0;
  const count = (added: readonly Message[]) => {
    for (const m of added) {
      const b = recordBytes(m, queue);
      bytes += b;
      largestRecordBytes = Math.max(largestRecordBytes, b);
    }
  };
  count(messages);
  let receives = 1;
  let lastReceiveEmpty = false;
  let readSinceFirst = false;
  for (;;) {
    const decision = decideGather(
      { count: messages.length, bytes, largestRecordBytes, startedAt: batch.receivedAt, lastReceiveEmpty, readSinceFirst },
      deps.window,
      deps.now(),
    );
    const context = { queue: queue.name, messages: messages.length, bytes, receives, gatheredMs: deps.now() - batch.receivedAt };
    if (decision.action === 'invoke') {
      deps.log.debug({ ...context, reason: decision.reason }, 'batch gathered');
      return;
    }
    // Liveness: each receive of a long window is an activity of its own, with the deadline of that receive.
    deps.mark('gather', decision.delayMs + decision.waitSec * 1000 + RECEIVE_MARGIN_MS);
    await sleep(decision.delayMs, halt);
    if (halt.aborted) {
      deps.log.debug({ ...context, reason: 'stopping' }, 'batch gathered');
      return;
    }
    const startedAt = deps.now();
    const more = await deps.receiver.more(queue, decision.max, decision.waitSec, halt, lease.timeoutMs / 1000);
    receives++;
    readSinceFirst = true;
    if (more === undefined) {
      deps.log.warn(context, 'a receive for the batching window failed; invoking what was gathered');
      return;
    }
    lastReceiveEmpty = more.length === 0;
    if (lastReceiveEmpty) continue;
    lease.add(more, deps.now());
    messages.push(...more);
    count(more);
    deps.traceReceived(queue, more, startedAt);
    deps.metrics.gathered(queue.name, more.length);
  }
}
