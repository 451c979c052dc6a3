import { inspect } from 'node:util';
import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { monotonicNow } from '../util/clock.ts';
import type { RouteConfig } from '../config/routes.ts';
import { ConcurrencyGate } from '../invoke/concurrency-gate.ts';
import { FunctionGate } from '../invoke/function-gate.ts';
import { LoopCapacity } from './loop-capacity.ts';
import { LoopActivities, receiveDeadlineMs } from './loop-activity.ts';
import type { DispatcherState, DispatcherStatus } from './status.ts';
import type { FunctionInvoker } from '../invoke/lambda-invoker.ts';
import { composeInvoke } from '../invoke/compose.ts';
import type { InvokeOutcome, RetryContext } from '../invoke/retry.ts';
import { MAX_SYNC_PAYLOAD_BYTES } from '../invoke/sqs-event.ts';
import { DispatchMetrics } from '../operator/metrics/dispatch-metrics.ts';
import type { MetricsSink } from '../operator/metrics/metrics-sink.ts';
import type { OrderMode, Random } from '../receive/queue-order.ts';
import { QueueVisibility } from '../settle/queue-visibility.ts';
import { Receiver } from '../receive/receiver.ts';
import type { MessageSource, QueueLookup, ResolvedQueue } from '../aws/sqs-source.ts';
import { ids } from '../settle/receipts.ts';
import { DeleteBatcher } from '../settle/delete-batcher.ts';
import { noopTracer, type DispatchTracer } from '../operator/tracing/tracer.ts';
import { VisibilityLease, type LeaseDeps } from '../settle/visibility-lease.ts';
import { processBatch, type Batch, type BatchDeps } from './batch.ts';
import { DispatchEvents } from './dispatch-events.ts';

/**
 * A route's options (src/config/routes.ts, where each one is defined with its default), with its queues
 * resolved. The ones whose absence means "none" or "off" may be left out.
 */
export type DispatcherOptions = Pick<
  RouteConfig,
  'functionName' | 'concurrency' | 'batchSize' | 'batchWindowMs' | 'pollForSec' | 'sleepSec' | 'visibilityRefreshMs' | 'deleteMode'
> &
  Partial<Pick<RouteConfig, 'visibilityTimeoutSec' | 'retryBackoff' | 'queueOptions' | 'adaptiveConcurrency'>> & {
    readonly queues: readonly ResolvedQueue[];
    readonly orderMode: OrderMode;
    /**
     * After a stop, how long a batch that is throttled, unreachable or paused keeps retrying before it is
     * released (absent: released at once). Releasing raises the message's receive count, so a few seconds of
     * retries usually settle it instead; main.ts leaves room for that inside --shutdown-timeout.
     */
    readonly drainRetryMs?: number | undefined;
  };

export interface DispatcherDeps {
  readonly source: MessageSource;
  readonly invoker: FunctionInvoker;
  /** Re-reads the queues' visibility timeout; without it the one read at start-up is kept. */
  readonly lookup?: Pick<QueueLookup, 'queueAttributes'> | undefined;
  readonly metrics: MetricsSink;
  readonly logger: Logger;
  readonly tracer?: DispatchTracer;
  readonly random?: Random;
  /**
   * The clock for every duration, deadline and wait: monotonic (default performance.now(), src/util/clock.ts), so a
   * wall-clock step stalls nothing. Times reach the tracer as epoch ms, converted at that boundary.
   */
  readonly now?: () => number;
}

/** Thrown by run() when a worker loop failed; the other loops drained first. */
export class DispatcherFailed extends Error {
  override readonly name = 'DispatcherFailed';
}

/**
 * The worker pool: `concurrency` async loops that each receive (Receiver), invoke, settle, repeat. Each
 * received batch holds a VisibilityLease until it is settled; invoke failures follow the invoke retry policy;
 * a function that cannot run at all pauses every loop through the FunctionGate.
 *
 * Lifecycle: run(stop) -> running; when `stop` aborts: draining (no new receives; receives in flight
 * complete and what they return is invoked and settled) -> stopped, and run() resolves. If a loop fails (a
 * bug), the others drain the same way, the state becomes failed and run() rejects with DispatcherFailed.
 */
export class Dispatcher {
  readonly #opts: DispatcherOptions;
  readonly #deps: DispatcherDeps;
  readonly #log: Logger;
  readonly #random: Random;
  readonly #now: () => number;
  readonly #receiver: Receiver;
  readonly #gate: FunctionGate;
  /** Undefined unless --adaptive-concurrency is on. */
  readonly #adaptive: ConcurrencyGate | undefined;
  /** Each loop's adaptive place and queue slot, given up while its batch waits (src/dispatch/loop-capacity.ts). */
  readonly #capacity: LoopCapacity;
  readonly #metrics: DispatchMetrics;
  readonly #tracer: DispatchTracer;
  /** One chunk's Invoke with its retry, permit, lease check, span and deadline (src/invoke/compose.ts). */
  readonly #invoke: (payload: string, ctx: RetryContext) => Promise<InvokeOutcome>;
  /** Where the loop's logs, metrics and spans go (src/dispatch/dispatch-events.ts). */
  readonly #events: DispatchEvents;
  readonly #inFlight = new Set<Batch>();
  /** Each loop's current activity, for liveness. */
  readonly #activities: LoopActivities;
  #state: DispatcherState = 'idle';
  /** Aborts drainRetryMs after the stop: waits between Invoke attempts end there. */
  readonly #drainOver = new AbortController();
  /** What each batch's sequence uses (src/dispatch/batch.ts). */
  readonly #batchDeps: BatchDeps;
  /** One for every lease. */
  readonly #leaseDeps: LeaseDeps;
  /** The visibility timeout each receive states, and its lease assumes. */
  readonly #visibility: QueueVisibility;

  constructor(options: DispatcherOptions, deps: DispatcherDeps) {
    this.#opts = options;
    this.#deps = deps;
    this.#log = deps.logger;
    this.#random = deps.random ?? Math.random;
    this.#now = deps.now ?? monotonicNow;
    const limits = options.queues.map((q) => options.queueOptions?.get(q.name));
    this.#visibility = new QueueVisibility(options.queues, options.visibilityTimeoutSec, { lookup: deps.lookup, logger: deps.logger });
    this.#receiver = new Receiver(
      { ...options, limits, visibilityOf: (queue) => this.#visibility.timeoutSec(queue) },
      { source: deps.source, logger: deps.logger, random: this.#random, now: this.#now },
    );
    this.#gate = new FunctionGate({ logger: deps.logger, random: this.#random, now: this.#now });
    this.#metrics = new DispatchMetrics(deps.metrics, options.functionName, options.concurrency);
    this.#tracer = deps.tracer ?? noopTracer;
    this.#events = new DispatchEvents({
      log: deps.logger,
      metrics: this.#metrics,
      tracer: this.#tracer,
      now: this.#now,
      functionName: options.functionName,
    });
    const adaptive = options.adaptiveConcurrency;
    this.#adaptive = adaptive
      ? new ConcurrencyGate(
          { max: options.concurrency, min: Math.min(adaptive.minConcurrency, options.concurrency) },
          { now: this.#now, onChange: (change) => this.#events.limitChanged(change) },
        )
      : undefined;
    this.#leaseDeps = {
      source: deps.source,
      logger: deps.logger,
      now: this.#now,
      random: this.#random,
      onLapse: (queue, messages) => this.#metrics.lapsed(queue.name, messages.length),
    };
    this.#activities = new LoopActivities(options.concurrency, this.#now);
    this.#capacity = new LoopCapacity(options.concurrency, this.#adaptive, this.#receiver);
    this.#invoke = composeInvoke({
      invoker: deps.invoker,
      tracer: this.#tracer,
      adaptive: this.#adaptive,
      logger: this.#log,
      functionName: options.functionName,
      now: this.#now,
      random: this.#random,
      gate: this.#gate,
      capacity: this.#capacity,
      drainOver: this.#drainOver.signal,
      events: {
        activity: (loop, activity, deadlineMs) => this.#step(loop, activity, deadlineMs),
        throttled: (queue) => this.#metrics.throttled(queue),
        paused: (paused) => this.#metrics.paused(paused),
      },
    });
    this.#batchDeps = {
      window: {
        batchSize: options.batchSize,
        windowMs: options.batchWindowMs,
        maxBytes: MAX_SYNC_PAYLOAD_BYTES,
        // ReceiveMessage waits 20 s at most.
        maxWaitSec: Math.max(1, Math.min(20, options.pollForSec)),
      },
      receiver: this.#receiver,
      source: deps.source,
      deleter: new DeleteBatcher(deps.source, deps.logger, undefined, this.#now),
      log: this.#log,
      metrics: this.#metrics,
      tracer: this.#tracer,
      now: this.#now,
      random: this.#random,
      functionName: options.functionName,
      deleteMode: options.deleteMode,
      queueOptions: options.queueOptions,
      retryBackoff: options.retryBackoff,
      receiveDeadlineMs: receiveDeadlineMs(options),
      activities: this.#activities,
      capacity: this.#capacity,
      events: this.#events,
      traceReceived: (queue, messages, startedAt) => this.#events.received(queue, messages, startedAt),
      invoke: (batch, messages, unsettledIds, payload, halt) => this.#invokeWithRetry(batch, messages, unsettledIds, payload, halt),
    };
  }

  /** What the dispatcher is doing now: one snapshot for the probes, the status page and the shutdown report. */
  status(): DispatcherStatus {
    const inFlight = [...this.#inFlight];
    return {
      state: this.#state,
      functionName: this.#opts.functionName,
      functionPaused: this.#gate.paused,
      receivable: this.#receiver.anyHealthy,
      concurrencyLimit: this.#adaptive?.limit ?? this.#opts.concurrency,
      loops: this.#activities.snapshot(),
      // Listed only when read (the shutdown report): the probes read status() too, and a batch may hold 10,000 ids.
      get inFlight() {
        return inFlight.map((b) => ({ queue: b.queue.name, messageIds: ids(b.lease.messages) }));
      },
    };
  }

  async run(stop: AbortSignal): Promise<void> {
    if (this.#state !== 'idle') throw new Error(`Dispatcher.run called in state ${this.#state}`);
    this.#setState('running');
    const failed = new AbortController();
    const halt = AbortSignal.any([stop, failed.signal]);
    const onHalt = () => {
      this.#setState('draining');
      const retryMs = this.#opts.drainRetryMs ?? 0;
      if (retryMs <= 0) this.#drainOver.abort();
      else setTimeout(() => this.#drainOver.abort(), retryMs).unref();
    };
    halt.addEventListener('abort', onHalt, { once: true });
    if (halt.aborted) onHalt();
    let failure: unknown;
    const refreshing = this.#visibility.run(this.#opts.visibilityRefreshMs, halt);
    await Promise.all(
      Array.from({ length: this.#opts.concurrency }, (_, loop) =>
        this.#loop(loop, halt).catch((err: unknown) => {
          if (failure === undefined) {
            failure = err;
            this.#events.loopFailed(err);
          }
          failed.abort();
        }),
      ),
    );
    halt.removeEventListener('abort', onHalt);
    await refreshing;
    if (failure !== undefined) {
      this.#setState('failed');
      throw new DispatcherFailed(`a worker loop failed: ${failure instanceof Error ? failure.message : inspect(failure)}`, {
        cause: failure,
      });
    }
    this.#setState('stopped');
  }

  #setState(state: DispatcherState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#events.state(state);
  }

  /**
   * Marks a loop's activity, for liveness (src/dispatch/loop-activity.ts). Kept under its old name for the two
   * invoke methods below, which src/invoke/'s wrappers replace.
   */
  #step(loop: number, step: string | undefined, deadlineMs = 0): void {
    this.#activities.mark(loop, step, deadlineMs);
  }

  async #loop(loop: number, halt: AbortSignal): Promise<void> {
    // Every check of `halt` happens before a receive, never between a receive and its settlement: a batch
    // that was received is always invoked and settled (SIGTERM semantics of the original Workerless).
    while (!halt.aborted) {
      if (this.#gate.paused) {
        this.#events.paused(true);
        // Renewed for each stretch of the pause: another loop's failed probe may lengthen it.
        await this.#gate.wait(halt, (ms) => this.#step(loop, 'paused', ms));
        this.#events.paused(this.#gate.paused);
        continue;
      }
      // Over the adaptive limit (and its prefetch share) the loop does not receive: messages the function cannot
      // take now stay on the queue, visible to other replicas and to this one once a place frees.
      if (!(await this.#capacity.enter(loop, halt))) continue;
      try {
        this.#step(loop, 'receive', this.#batchDeps.receiveDeadlineMs);
        const startedAt = this.#now();
        const received = await this.#receiver.next(halt);
        this.#step(loop, undefined);
        if (received) {
          this.#events.received(received.queue, received.messages, startedAt);
          await this.#process(this.#track(loop, received.queue, received.messages, received.visibilityTimeoutSec), halt);
        }
      } finally {
        this.#capacity.free(loop);
      }
    }
    this.#step(loop, undefined);
  }

  /** `visibilityTimeoutSec`: what the receive stated, so the lease assumes what SQS applied. */
  #track(loop: number, queue: ResolvedQueue, messages: Message[], visibilityTimeoutSec: number): Batch {
    const receivedAt = this.#now();
    const lease = new VisibilityLease(queue, messages, visibilityTimeoutSec * 1000, receivedAt, this.#leaseDeps);
    const batch: Batch = { loop, queue, messages, receivedAt, lease };
    this.#inFlight.add(batch);
    this.#events.batchStarted(queue, messages.length);
    return batch;
  }

  /** One batch's sequence (src/dispatch/batch.ts), then it leaves the in-flight set and its loop's capacity. */
  async #process(batch: Batch, halt: AbortSignal): Promise<void> {
    try {
      await processBatch(batch, halt, this.#batchDeps);
    } finally {
      this.#inFlight.delete(batch);
      this.#step(batch.loop, undefined);
      this.#events.batchSettled(batch.queue, batch.messages.length, this.#now() - batch.receivedAt);
      this.#capacity.settled(batch.loop, batch.queue);
    }
  }

  #invokeWithRetry(batch: Batch, messages: readonly Message[], unsettledIds: string[], payload: string, halt: AbortSignal) {
    const { loop, queue, lease } = batch;
    return this.#invoke(payload, { loop, queue, lease, messages, unsettledIds, halt });
  }
}
