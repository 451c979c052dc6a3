import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import type { ResolvedQueue } from '../core/queue.ts';
import type { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import type { DispatchTracer } from '../core/telemetry/tracer.ts';
import { tenantSourceText, type TenantSource, type TenantSplit } from '../invoke/tenant-split.ts';
import { epochMsOf } from '../util/clock.ts';
import type { LimitMove } from '../invoke/concurrency-gate.ts';
import type { DispatcherState } from './status.ts';
import { messageIdOf } from '../core/message.ts';

export interface DispatchEventsDeps {
  readonly log: Logger;
  readonly metrics: DispatchMetrics;
  readonly tracer: DispatchTracer;
  /** The dispatcher's monotonic clock; the tracer's spans are converted to epoch ms here, once. */
  readonly now: () => number;
  readonly functionName: string;
}

/**
 * What the loop and a batch's sequence report as they go, each turned into its log line, metric or span here,
 * so that the loop reads as a sequence: one method per event, in one place (graphile-worker's events).
 * Unlike graphile-worker's safeEmit, a report that throws is not swallowed: the sinks, the tracer and the
 * logger are this daemon's own code, and a bug in them fails the dispatcher as any bug in a loop does (the
 * failed state; test/unit/dispatch/dispatcher/loop.test.ts, 'a loop that fails (a bug, here in the metrics sink)').
 */
export class DispatchEvents {
  readonly #log: Logger;
  readonly #metrics: DispatchMetrics;
  readonly #tracer: DispatchTracer;
  readonly #now: () => number;
  readonly #fn: string;

  constructor(deps: DispatchEventsDeps) {
    this.#log = deps.log;
    this.#metrics = deps.metrics;
    this.#tracer = deps.tracer;
    this.#now = deps.now;
    this.#fn = deps.functionName;
  }

  /** The dispatcher's state changed (src/dispatch/dispatcher.ts documents the transitions). */
  state(state: DispatcherState): void {
    this.#log.info({ state }, 'dispatcher state');
  }

  /** A worker loop failed (a bug): the others drain. */
  loopFailed(err: unknown): void {
    this.#log.fatal({ err }, 'a worker loop failed; draining the others');
  }

  /** Queues left the route and others joined it (Dispatcher.setQueues): the metrics of those that left go. */
  queuesChanged(left: readonly string[], joined: readonly string[]): void {
    for (const q of joined) this.#metrics.queueJoined(q);
    for (const q of left) this.#metrics.queueLeft(q);
  }

  /** Whether the function is paused because it cannot be invoked. */
  paused(paused: boolean): void {
    this.#metrics.paused(paused);
  }

  /** Adaptive concurrency moved the limit (a throttle, invocations that succeeded, or the growth cap). */
  limitChanged(change: LimitMove): void {
    this.#metrics.limit(change.to);
    const fields = { function: this.#fn, from: change.from, to: change.to };
    if (change.byGrowthCap) this.#log.info(fields, 'concurrency growth cap moved the limit');
    else this.#log.info(fields, change.to < change.from ? 'throttled: lowering the concurrency limit' : 'raising the concurrency limit');
  }

  /** A receive that returned messages, which began at `startedAt` (monotonic). */
  received(queue: ResolvedQueue, messages: readonly Message[], startedAt: number): void {
    const now = this.#now();
    const epochNow = Date.now();
    this.#tracer.received(queue, messages, epochMsOf(startedAt, now, epochNow), epochNow);
    this.#metrics.agesAtReceive(queue.name, messages, epochNow);
  }

  /** A loop holds a new batch. */
  batchStarted(queue: ResolvedQueue, count: number): void {
    this.#metrics.polled(queue.name, count);
  }

  /** A batch is settled (deleted, kept or released): it leaves the in-flight count. */
  batchSettled(queue: ResolvedQueue, count: number, receiveToSettleMs: number): void {
    this.#metrics.settled(queue.name, count, receiveToSettleMs);
  }

  /** A chunk of a FIFO batch kept a message: the later chunks are not invoked (src/settle/fifo-rule.ts). */
  fifoStopped(queue: ResolvedQueue, messageIds: readonly string[]): void {
    this.#log.warn({ queue: queue.name, messageIds }, 'FIFO batch stopped at a failure; later messages stay on the queue');
  }

  /**
   * A message whose event is over its invocation type's payload limit (a durable route's Event invoke: 1 MB): it is
   * not invoked, and stays on the queue until its redrive policy moves it (src/dispatch/batch.ts).
   */
  oversized(queue: ResolvedQueue, messageId: string, bytes: number, limitBytes: number): void {
    this.#metrics.oversized(queue.name, 1);
    this.#log.error(
      { queue: queue.name, messageId, function: this.#fn, bytes, limitBytes },
      "event over the invocation's payload limit; not invoked, the message stays for the queue's redrive policy",
    );
  }

  /**
   * Messages without a tenant id for a tenant-isolated function, and on FIFO the later messages of their groups:
   * not invoked; they return after their visibility timeout, and after maxReceiveCount go to the queue's
   * dead-letter queue. Only the untenanted ones count in NoTenantEventCount: the others just wait behind them.
   */
  untenanted(queue: ResolvedQueue, split: Pick<TenantSplit, 'untenanted' | 'heldBehind'>, source: TenantSource): void {
    if (split.untenanted.length === 0) return;
    this.#metrics.untenanted(queue.name, split.untenanted.length);
    this.#log.error(
      {
        queue: queue.name,
        function: this.#fn,
        messageIds: split.untenanted.map((u) => messageIdOf(u.message)),
        reasons: split.untenanted.map((u) => u.reason),
        heldBehindIds: split.heldBehind.map((m) => messageIdOf(m)),
        option: '--tenant-id-from',
        tenantIdFrom: tenantSourceText(source),
      },
      'no tenant id for a tenant-isolated function; messages stay on the queue for its redrive',
    );
  }

  /** A bug while processing a batch: its messages are kept (they return after their visibility timeout). */
  batchFailed(queue: ResolvedQueue, messageIds: readonly string[], err: unknown): void {
    this.#log.error({ queue: queue.name, messageIds, function: this.#fn, err }, 'unexpected error while processing a batch');
  }
}
