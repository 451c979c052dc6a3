import { inspect } from 'node:util';
import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { sleep } from '../util/backoff.ts';
import { monotonicNow } from '../util/clock.ts';
import type { RouteConfig } from '../config/routes.ts';
import { ConcurrencyGate, type InvokeVerdict } from '../invoke/concurrency-gate.ts';
import { FunctionGate } from '../invoke/function-gate.ts';
import { LoopCapacity } from './loop-capacity.ts';
import { LoopActivities, receiveDeadlineMs } from './loop-activity.ts';
import type { DispatcherState, DispatcherStatus } from './status.ts';
import { NO_ATTEMPTS, countAttempt, nextInvokeStep, safeToRelease, type InvokeAttempts } from '../invoke/invoke-retry.ts';
import type { InvocationResponse } from '../invoke/invoke-result.ts';
import type { FunctionInvoker, InvokeError, InvokeResult } from '../invoke/lambda-invoker.ts';
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

/** Lambda runs a function for at most 15 minutes: an Invoke with no answer a minute after that is dead. */
const INVOKE_TIMEOUT_MS = 16 * 60_000;
/** Unknown Invoke outcomes after which a batch is left to the queue's redrive rules. */
const MAX_UNKNOWN_OUTCOMES = 3;

/** Thrown by run() when a worker loop failed; the other loops drained first. */
export class DispatcherFailed extends Error {
  override readonly name = 'DispatcherFailed';
}

/** What an attempt returns when the lease lapsed before it: nothing was sent (never seen by callers outside). */
const NOT_INVOKED: InvokeResult = {
  ok: false,
  error: { kind: 'not-sent', code: 'LeaseLapsed', message: 'the visibility lease lapsed; not invoked' },
};

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

  /**
   * Invokes until the function answers or the retry policy gives up (src/invoke/invoke-retry.ts). The lease
   * keeps the messages invisible meanwhile, so throttles, pauses and holds cost no receive count. An
   * invocation in flight is never cut short by shutdown; only waiting between attempts is.
   */
  async #invokeWithRetry(
    batch: Batch,
    messages: readonly Message[],
    unsettledIds: string[],
    payload: string,
    halt: AbortSignal,
  ): Promise<
    | { kind: 'answered'; response: InvocationResponse; durationMs: number }
    | { kind: 'failed'; error: InvokeError }
    | { kind: 'interrupted'; release: boolean }
    | { kind: 'lapsed'; lapsed: Message[] }
  > {
    const { queue } = batch;
    let attempts: InvokeAttempts = NO_ATTEMPTS;
    const policy = { unknownHoldMs: batch.lease.timeoutMs, maxUnknown: MAX_UNKNOWN_OUTCOMES };
    for (;;) {
      if (this.#capacity.isAside(batch.loop)) {
        this.#step(batch.loop, 'waiting for capacity', Infinity);
        await this.#capacity.rejoin(batch.loop, queue);
      }
      // Waiting for an Invoke permit (adaptive concurrency) is a step of its own.
      if (this.#adaptive) this.#step(batch.loop, 'waiting for an Invoke permit', Infinity);
      let started = this.#now();
      let lapsed: Message[] = [];
      const invoke = () => {
        // The lease is asked right before every attempt (the first, and each after a throttle, pause, hold or
        // back-off, after any wait for a permit): a message it cannot prove hidden may be another consumer's now.
        lapsed = batch.lease.confirm(messages);
        if (lapsed.length > 0) return Promise.resolve(NOT_INVOKED);
        // After the wait for a permit: the duration and the invoke step's deadline are the Invoke's own.
        this.#step(batch.loop, 'invoke', INVOKE_TIMEOUT_MS);
        started = this.#now();
        // A Set: a batch may hold 10,000 messages. Made here, not kept for the whole call.
        const unsettled = new Set(unsettledIds);
        return this.#tracer.process(
          queue,
          this.#opts.functionName,
          batch.lease.messages.filter((m) => unsettled.has(m.MessageId ?? '')),
          () => this.#invokeWithDeadline(payload),
          (r) => (r.ok ? (r.response.functionError ? 'function_error' : undefined) : r.error.kind),
        );
      };
      // With adaptive concurrency the call waits for a permit, and its outcome moves the limit.
      const result = this.#adaptive ? await this.#adaptive.invoke(invoke, invokeVerdict) : await invoke();
      if (lapsed.length > 0) return { kind: 'lapsed', lapsed };
      if (result.ok) {
        this.#gate.resume();
        this.#metrics.paused(false);
        return { kind: 'answered', response: result.response, durationMs: this.#now() - started };
      }
      const error = result.error;
      attempts = countAttempt(attempts, error);
      const step = nextInvokeStep(error, attempts, policy, this.#random);
      if (step.action === 'give-up') return { kind: 'failed', error };
      const context = {
        queue: queue.name,
        messageIds: unsettledIds,
        function: this.#opts.functionName,
        err: { kind: error.kind, code: error.code, message: error.message },
      };
      // Draining: an unknown outcome is not held (the messages keep their visibility); other failures may retry
      // until the drain's retry time is over.
      const stopped = () => (error.kind === 'unknown' ? halt.aborted : this.#drainOver.signal.aborted);
      if (stopped()) return { kind: 'interrupted', release: safeToRelease(attempts) };
      const waitSignal = error.kind === 'unknown' ? halt : this.#drainOver.signal;
      if (error.kind === 'throttled') this.#metrics.throttled(queue.name);
      // Waiting never holds capacity: healthy batches use the place and the slot meanwhile.
      this.#capacity.stepAside(batch.loop, queue);
      if (step.action === 'pause-function') {
        this.#gate.pause(error);
        this.#metrics.paused(true);
        await this.#gate.wait(waitSignal, (ms) => this.#step(batch.loop, 'paused', ms));
      } else {
        if (error.kind === 'unknown') {
          this.#log.warn(
            { ...context, holdMs: step.delayMs, attempt: attempts.unknown },
            'Invoke outcome unknown (the function may still be running); holding the messages before invoking them again',
          );
        } else {
          this.#log.warn(
            { ...context, delayMs: step.delayMs, attempt: attempts.throttled + attempts.notSent },
            error.kind === 'throttled' ? 'function throttled, retrying' : 'Invoke could not reach Lambda, retrying',
          );
        }
        this.#step(batch.loop, 'invoke back-off', step.delayMs);
        if (this.#adaptive && error.kind === 'throttled') await this.#adaptive.throttledBackOff(step.delayMs, waitSignal);
        else await sleep(step.delayMs, waitSignal);
      }
      if (stopped()) return { kind: 'interrupted', release: safeToRelease(attempts) };
    }
  }

  /**
   * One Invoke under INVOKE_TIMEOUT_MS. The timer is cleared as soon as the call ends: AbortSignal.timeout()
   * would keep a 16-minute timer per invocation alive long after its message was settled. Not an async
   * function: a suspended one keeps its frame for the whole call, thousands at a time at high concurrency.
   */
  #invokeWithDeadline(payload: string): Promise<InvokeResult> {
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException('no answer in time', 'TimeoutError')), INVOKE_TIMEOUT_MS);
    // The call itself keeps the process alive while it runs; the deadline must not do so on its own.
    timer.unref();
    const clear = () => clearTimeout(timer);
    let call: Promise<InvokeResult>;
    try {
      call = this.#deps.invoker.invoke(payload, deadline.signal);
    } catch (err) {
      // As an async function would: a throw becomes a rejection.
      call = Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return call.then(
      (result) => {
        clear();
        return result;
      },
      (err: unknown) => {
        clear();
        throw err;
      },
    );
  }
}

/** What an Invoke result tells adaptive concurrency: only Lambda's answers and throttles speak about the budget. */
function invokeVerdict(result: InvokeResult): InvokeVerdict {
  if (result.ok) return 'accepted';
  return result.error.kind === 'throttled' ? 'throttled' : 'failed';
}
