import { inspect } from 'node:util';
import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { sleep } from '../util/backoff.ts';
import { epochMsOf, monotonicNow } from '../util/clock.ts';
import type { DeleteMode } from '../config/config.ts';
import type { QueueOptions } from '../config/delivery-options.ts';
import { matchesRecord } from '../receive/event-filter.ts';
import { MAX_VISIBILITY_SEC, planRetryBackoff, receiveCountOf, retryBackoffFor, type RetryBackoff } from '../settle/retry-backoff.ts';
import { ConcurrencyGate, type InvokeVerdict } from '../invoke/concurrency-gate.ts';
import type { AdaptiveConcurrency, LimitChange } from './concurrency-limit.ts';
import { FunctionGate } from '../invoke/function-gate.ts';
import { LoopCapacity } from './loop-capacity.ts';
import { LoopActivities, type LoopActivity } from './loop-activity.ts';
import { NO_ATTEMPTS, countAttempt, nextInvokeStep, safeToRelease, type InvokeAttempts } from '../invoke/invoke-retry.ts';
import { interpretResult, type InvocationResponse } from '../invoke/invoke-result.ts';
import type { FunctionInvoker, InvokeError, InvokeResult } from '../invoke/lambda-invoker.ts';
import { EMPTY_EVENT_BYTES, MAX_SYNC_PAYLOAD_BYTES, buildSqsEvents, recordBytes, toRecord } from '../invoke/sqs-event.ts';
import { DispatchMetrics } from '../operator/metrics/dispatch-metrics.ts';
import type { MetricsSink } from '../operator/metrics/metrics-sink.ts';
import { gathers, nextGatherStep, type BatchWindow } from '../receive/batch-window.ts';
import { idsToKeep } from '../settle/fifo-rule.ts';
import type { OrderMode, Random } from '../receive/queue-order.ts';
import { QueueVisibility } from '../settle/queue-visibility.ts';
import { Receiver } from '../receive/receiver.ts';
import {
  CALL_DEADLINE_MS,
  RECEIVE_MARGIN_MS,
  type MessageSource,
  type QueueLookup,
  type ReceiptEntry,
  type ResolvedQueue,
} from '../aws/sqs-source.ts';
import { DeleteBatcher, changeVisibility } from '../settle/settle.ts';
import { noopTracer, type DispatchTracer } from '../operator/tracing/tracer.ts';
import { VisibilityLease, type LeaseDeps } from '../settle/visibility-lease.ts';

export interface DispatcherOptions {
  readonly queues: readonly ResolvedQueue[];
  readonly orderMode: OrderMode;
  /** Number of worker loops = the most concurrent invocations. */
  readonly concurrency: number;
  /** Messages per invocation, 1-10,000 (above 10 only with a batch window). */
  readonly batchSize: number;
  /**
   * --batch-window: how long a batch may gather (from its first receive) before it is invoked, 0-300,000 ms;
   * default 0: one receive per batch. Never on FIFO queues (src/receive/batch-window.ts).
   */
  readonly batchWindowMs?: number | undefined;
  /** Long-poll wait when every queue was empty, 0-20 s. */
  readonly pollForSec: number;
  /** Pause after an empty long poll. */
  readonly sleepSec: number;
  /** --visibility-timeout: stated on every ReceiveMessage; otherwise each queue's own (src/settle/queue-visibility.ts). */
  readonly visibilityTimeoutSec?: number | undefined;
  /** --visibility-refresh: how often the queues' own visibility timeout is re-read; default 60 s. */
  readonly visibilityRefreshMs?: number | undefined;
  readonly deleteMode: DeleteMode;
  /** For logs only. */
  readonly functionName: string;
  /**
   * After a stop, how long a batch that is throttled, unreachable or paused keeps retrying before it is
   * released (default 0: at once). Releasing raises the message's receive count, so a few seconds of retries
   * usually settle it instead; main.ts leaves room for that inside --shutdown-timeout.
   */
  readonly drainRetryMs?: number | undefined;
  /** Back-off for messages kept after a failed invocation; default none (they return after their visibility timeout). */
  readonly retryBackoff?: RetryBackoff | undefined;
  /** Per-queue limits and filters, by queue name; default none. */
  readonly queueOptions?: ReadonlyMap<string, QueueOptions> | undefined;
  /**
   * --adaptive-concurrency: fewer loops may hold a batch while Lambda throttles (src/dispatch/concurrency-limit.ts);
   * default off (every loop receives).
   */
  readonly adaptiveConcurrency?: AdaptiveConcurrency | undefined;
}

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

export type DispatcherState = 'idle' | 'running' | 'draining' | 'stopped' | 'failed';

/** A Dispatcher's state at one moment (as Temporal's worker getStatus()), read by the operator surface and main.ts. */
export interface DispatcherStatus {
  readonly state: DispatcherState;
  /** The function this pool invokes (its route, with several). */
  readonly functionName: string;
  /** Whether the function is paused because it cannot be invoked. */
  readonly functionPaused: boolean;
  /** Whether some queue can be received from (not backing off after a failed receive). */
  readonly receivable: boolean;
  /** Loops allowed to hold a batch: --concurrency, or less while adaptive concurrency backs off throttles. */
  readonly concurrencyLimit: number;
  /** Each worker loop's current activity and its deadline (undefined: idle), for the liveness probe. */
  readonly loops: readonly (LoopActivity | undefined)[];
  /** Messages received and not yet settled, for the shutdown report. */
  readonly inFlight: readonly { readonly queue: string; readonly messageIds: string[] }[];
}

/** Lambda runs a function for at most 15 minutes: an Invoke with no answer a minute after that is dead. */
const INVOKE_TIMEOUT_MS = 16 * 60_000;
/** A settle step: DeleteMessageBatch's 8 attempts of at most CALL_DEADLINE_MS each, plus back-off. */
const SETTLE_DEADLINE_MS = 8 * (CALL_DEADLINE_MS + 1_000);
/** Unknown Invoke outcomes after which a batch is left to the queue's redrive rules. */
const MAX_UNKNOWN_OUTCOMES = 3;
const DEFAULT_VISIBILITY_REFRESH_MS = 60_000;

/** Thrown by run() when a worker loop failed; the other loops drained first. */
export class DispatcherFailed extends Error {
  override readonly name = 'DispatcherFailed';
}

interface Batch {
  /** The worker loop holding it. */
  readonly loop: number;
  readonly queue: ResolvedQueue;
  readonly messages: Message[];
  readonly receivedAt: number;
  readonly lease: VisibilityLease;
}

/** How one chunk ended: settled (with the ids that stay on the queue), or released for shutdown. */
type ChunkEnd = { kind: 'settled'; keptIds: string[] } | { kind: 'released' };

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
  readonly #deleter: DeleteBatcher;
  readonly #gate: FunctionGate;
  /** Undefined unless --adaptive-concurrency is on. */
  readonly #adaptive: ConcurrencyGate | undefined;
  /** Each loop's adaptive place and queue slot, given up while its batch waits (src/dispatch/loop-capacity.ts). */
  readonly #capacity: LoopCapacity;
  readonly #metrics: DispatchMetrics;
  readonly #tracer: DispatchTracer;
  readonly #inFlight = new Set<Batch>();
  /** Each loop's current activity, for liveness. */
  readonly #activities: LoopActivities;
  #state: DispatcherState = 'idle';
  /** Aborts drainRetryMs after the stop: waits between Invoke attempts end there. */
  readonly #drainOver = new AbortController();
  readonly #window: BatchWindow;
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
    this.#deleter = new DeleteBatcher(deps.source, deps.logger, undefined, this.#now);
    this.#gate = new FunctionGate({ logger: deps.logger, random: this.#random, now: this.#now });
    this.#metrics = new DispatchMetrics(deps.metrics, options.functionName, options.concurrency);
    const adaptive = options.adaptiveConcurrency;
    this.#adaptive = adaptive
      ? new ConcurrencyGate(
          { max: options.concurrency, min: Math.min(adaptive.minConcurrency, options.concurrency) },
          { now: this.#now, onChange: (change) => this.#limitChanged(change) },
        )
      : undefined;
    this.#tracer = deps.tracer ?? noopTracer;
    this.#leaseDeps = {
      source: deps.source,
      logger: deps.logger,
      now: this.#now,
      random: this.#random,
      onLapse: (queue, messages) => this.#metrics.lapsed(queue.name, messages.length),
    };
    this.#activities = new LoopActivities(options.concurrency, this.#now);
    this.#capacity = new LoopCapacity(options.concurrency, this.#adaptive, this.#receiver);
    this.#window = {
      batchSize: options.batchSize,
      windowMs: options.batchWindowMs ?? 0,
      maxBytes: MAX_SYNC_PAYLOAD_BYTES,
      // ReceiveMessage waits 20 s at most.
      maxWaitSec: Math.max(1, Math.min(20, options.pollForSec)),
    };
  }

  /** What the dispatcher is doing now: one snapshot for the probes, the status page and the shutdown report. */
  status(): DispatcherStatus {
    return {
      state: this.#state,
      functionName: this.#opts.functionName,
      functionPaused: this.#gate.paused,
      receivable: this.#receiver.anyHealthy,
      concurrencyLimit: this.#adaptive?.limit ?? this.#opts.concurrency,
      loops: this.#activities.snapshot(),
      inFlight: [...this.#inFlight].map((b) => ({ queue: b.queue.name, messageIds: ids(b.lease.messages) })),
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
    const refreshing = this.#visibility.run(this.#opts.visibilityRefreshMs ?? DEFAULT_VISIBILITY_REFRESH_MS, halt);
    await Promise.all(
      Array.from({ length: this.#opts.concurrency }, (_, loop) =>
        this.#loop(loop, halt).catch((err: unknown) => {
          if (failure === undefined) {
            failure = err;
            this.#log.fatal({ err }, 'a worker loop failed; draining the others');
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
    this.#log.info({ state }, 'dispatcher state');
  }

  /** Marks the step a loop is in, for liveness (src/dispatch/loop-activity.ts). */
  #step(loop: number, step: string | undefined, deadlineMs = 0): void {
    this.#activities.mark(loop, step, deadlineMs);
  }

  /** The longest one receive pass can take: a short receive per queue, a long poll, then --sleep or a back-off. */
  #receiveDeadlineMs(): number {
    const { queues, pollForSec, sleepSec } = this.#opts;
    // Short receives may be shared: a loop can wait for the call in flight and then its own.
    return queues.length * 2 * RECEIVE_MARGIN_MS + pollForSec * 1000 + RECEIVE_MARGIN_MS + Math.max(sleepSec * 1000, 20_000);
  }

  async #loop(loop: number, halt: AbortSignal): Promise<void> {
    // Every check of `halt` happens before a receive, never between a receive and its settlement: a batch
    // that was received is always invoked and settled (SIGTERM semantics of the original Workerless).
    while (!halt.aborted) {
      if (this.#gate.paused) {
        this.#metrics.paused(true);
        // Renewed for each stretch of the pause: another loop's failed probe may lengthen it.
        await this.#gate.wait(halt, (ms) => this.#step(loop, 'paused', ms));
        this.#metrics.paused(this.#gate.paused);
        continue;
      }
      // Over the adaptive limit (and its prefetch share) the loop does not receive: messages the function cannot
      // take now stay on the queue, visible to other replicas and to this one once a slot frees.
      if (!(await this.#capacity.enter(loop, halt))) continue;
      try {
        this.#step(loop, 'receive', this.#receiveDeadlineMs());
        const startedAt = this.#now();
        const received = await this.#receiver.next(halt);
        this.#step(loop, undefined);
        if (received) {
          this.#traceReceived(received.queue, received.messages, startedAt);
          await this.#process(this.#track(loop, received.queue, received.messages, received.visibilityTimeoutSec), halt);
        }
      } finally {
        this.#capacity.free(loop);
      }
    }
    this.#step(loop, undefined);
  }

  /** Reports a receive to the tracer, whose spans need wall-clock times: converted here, once. */
  #traceReceived(queue: ResolvedQueue, messages: readonly Message[], startedAt: number): void {
    const now = this.#now();
    const epochNow = Date.now();
    this.#tracer.received(queue, messages, epochMsOf(startedAt, now, epochNow), epochNow);
  }

  /** Adaptive concurrency moved the limit: record it and log it. */
  #limitChanged(change: NonNullable<LimitChange>): void {
    this.#metrics.limit(change.to);
    this.#log.info(
      { function: this.#opts.functionName, from: change.from, to: change.to },
      change.to < change.from ? 'throttled: lowering the concurrency limit' : 'raising the concurrency limit',
    );
  }

  /** `visibilityTimeoutSec`: what the receive stated, so the lease assumes what SQS applied. */
  #track(loop: number, queue: ResolvedQueue, messages: Message[], visibilityTimeoutSec: number): Batch {
    const receivedAt = this.#now();
    const lease = new VisibilityLease(queue, messages, visibilityTimeoutSec * 1000, receivedAt, this.#leaseDeps);
    const batch: Batch = { loop, queue, messages, receivedAt, lease };
    this.#inFlight.add(batch);
    this.#metrics.polled(queue.name, messages.length);
    return batch;
  }

  /**
   * Invokes and settles one received batch, in chunks when it exceeds the synchronous payload limit. Never
   * throws: failures are logged and the messages kept (they return after their visibility timeout).
   */
  async #process(batch: Batch, halt: AbortSignal): Promise<void> {
    const { queue } = batch;
    let batchIds = ids(batch.messages);
    try {
      if (gathers(this.#window, queue.fifo)) await this.#gather(batch, halt);
      batchIds = ids(batch.messages);
      const messages = await this.#filter(batch);
      batchIds = ids(messages);
      let offset = 0;
      // Only the payloads are kept: the event objects they were serialised from (a copy of every message's
      // fields) would otherwise stay reachable until the last invocation of the batch is over.
      const chunks = messages.length > 0 ? buildSqsEvents(messages, queue).map((c) => ({ payload: c.payload, messages: c.messages })) : [];
      for (const chunk of chunks) {
        // Later chunks wait their turn under the same lease (and are released with this one on shutdown).
        const unsettled = messages.slice(offset);
        offset += chunk.messages.length;
        const end = await this.#invokeAndSettle(batch, chunk.messages, unsettled, chunk.payload, halt);
        if (end.kind === 'released') break;
        const kept = idsToKeep(batchIds, new Set(end.keptIds), queue.fifo);
        if (queue.fifo && kept.length > 0 && offset < messages.length) {
          this.#log.warn(
            { queue: queue.name, messageIds: batchIds.slice(offset) },
            'FIFO batch stopped at a failure; later messages stay on the queue',
          );
          break;
        }
      }
    } catch (err) {
      this.#log.error(
        { queue: queue.name, messageIds: batchIds, function: this.#opts.functionName, err },
        'unexpected error while processing a batch',
      );
    } finally {
      await batch.lease.end();
      this.#inFlight.delete(batch);
      this.#step(batch.loop, undefined);
      this.#metrics.settled(queue.name, batch.messages.length, this.#now() - batch.receivedAt);
      this.#capacity.settled(batch.loop, queue);
    }
  }

  /**
   * Invokes one chunk and settles it. `unsettled` is this chunk and every later one of the batch: the
   * messages to release on shutdown.
   */
  async #invokeAndSettle(batch: Batch, messages: Message[], unsettled: Message[], payload: string, halt: AbortSignal): Promise<ChunkEnd> {
    const { queue, lease } = batch;
    const started = this.#now();
    const outcome = await this.#invokeWithRetry(batch, messages, ids(unsettled), payload, halt);
    // Built after the call, so they are not kept for its whole duration.
    const messageIds = ids(messages);
    const context = { queue: queue.name, messageIds, function: this.#opts.functionName };
    // Later chunks of a batch over the payload limit (rare) invoke without a slot rather than wait behind it.
    this.#capacity.free(batch.loop);
    if (outcome.kind === 'interrupted') {
      if (outcome.release) {
        // Still under the lease: released only once this dispatcher's own receives have returned (Receiver.quiet).
        this.#step(batch.loop, 'release', this.#receiveDeadlineMs() + SETTLE_DEADLINE_MS);
        await this.#receiver.quiet();
      }
      await lease.drop(unsettled);
      if (outcome.release) {
        await this.#tracer.settle(
          queue,
          'release',
          unsettled,
          () =>
            changeVisibility(this.#deps.source, this.#log, queue, receipts(unsettled), 0, () =>
              this.#step(batch.loop, 'release', SETTLE_DEADLINE_MS),
            ),
          (r) => (r.failed.length > 0 ? 'entries_failed' : undefined),
        );
        this.#metrics.dropped(queue.name, unsettled.length);
        this.#log.warn(
          { ...context, messageIds: ids(unsettled) },
          'shutting down while the function is throttled or unusable; released the messages',
        );
      } else {
        this.#log.warn(
          { ...context, messageIds: ids(unsettled) },
          'shutting down while an earlier invocation may still run; the messages return after their visibility timeout',
        );
      }
      return { kind: 'released' };
    }
    if (outcome.kind === 'lapsed') {
      // The payload holds every message of the chunk: none of it is invoked. The messages still leased
      // return after their visibility timeout with the lapsed ones (counted by the lease's onLapse).
      await lease.drop(messages);
      this.#log.error(
        { ...context, lapsedIds: ids(outcome.lapsed) },
        'the visibility lease lapsed before the invocation; not invoking these messages, SQS delivers them again',
      );
      return { kind: 'settled', keptIds: messageIds };
    }
    if (outcome.kind === 'failed') {
      this.#metrics.failedInvoke(queue.name, messages.length);
      await lease.drop(messages);
      const { code, message } = outcome.error;
      this.#log.error({ ...context, err: { kind: outcome.error.kind, code, message } }, 'Invoke failed; messages stay on the queue');
      return { kind: 'settled', keptIds: messageIds };
    }
    const verdict = interpretResult(outcome.response, messageIds, queue.fifo);
    this.#metrics.invoked(queue.name, messages.length, outcome.durationMs);
    this.#log.debug({ ...context, durationMs: this.#now() - started, result: verdict.kind }, 'invoked');
    if (verdict.kind === 'function-error') {
      this.#log.error(
        { ...context, errorType: verdict.errorType, errorMessage: verdict.errorMessage },
        'function error; messages stay on the queue',
      );
    } else if (verdict.kind === 'invalid-response') {
      this.#log.error({ ...context, reason: verdict.reason }, 'invalid batchItemFailures response; the whole batch stays on the queue');
    } else if (verdict.kind === 'partial') {
      this.#log.warn({ ...context, failedMessageIds: verdict.keepIds }, 'function reported failed items; they stay on the queue');
    }
    if (verdict.kind === 'function-error' || verdict.kind === 'invalid-response') this.#metrics.failedInvoke(queue.name, messages.length);
    const kept = new Set(verdict.keepIds);
    // The one case a lease cannot rule out: it lapsed while the invocation ran, which cannot be recalled. The
    // result still counts: nothing is invoked again, failed messages get no back-off, and processed ones are
    // deleted with the receipt handle we hold, which SQS honours only if nobody received them since (otherwise
    // "the request succeeds, but the message will not be deleted", DeleteMessage API reference); so they are
    // not counted as deleted.
    const lapsed = new Set(lease.lapsedOf(messages));
    if (lapsed.size > 0) {
      this.#log.warn(
        { ...context, lapsedIds: ids([...lapsed]) },
        'the visibility lease lapsed while the invocation ran; its result is settled with the old receipt handles and nothing is invoked again',
      );
    }
    // Failed messages leave the lease first: they come back after their visibility timeout, as on the trigger.
    const keptMessages = messages.filter((m) => kept.has(m.MessageId ?? ''));
    await lease.drop(keptMessages);
    await this.#backOff(
      batch,
      keptMessages.filter((m) => !lapsed.has(m)),
    );
    if (this.#opts.deleteMode === 'on-success' && verdict.deleteIds.length > 0) {
      const byId = new Map(messages.map((m) => [m.MessageId ?? '', m]));
      const entries = verdict.deleteIds.map((id) => ({ id, receiptHandle: byId.get(id)?.ReceiptHandle ?? '' }));
      // The lease keeps these invisible until the delete has completed, however long its retries take.
      this.#step(batch.loop, 'delete', SETTLE_DEADLINE_MS);
      const toDelete = messages.filter((m) => !kept.has(m.MessageId ?? ''));
      const result = await this.#tracer.settle(
        queue,
        'delete',
        toDelete,
        () =>
          this.#deleter.delete(
            queue,
            entries,
            () => lease.expiresAt(toDelete),
            // Each retry renews the step's deadline: a loop waiting out an SQS outage is not stuck.
            () => this.#step(batch.loop, 'delete', SETTLE_DEADLINE_MS),
          ),
        (r) => (r.failed.length > 0 ? 'entries_failed' : undefined),
      );
      const refused = new Set(result.failed.map((f) => f.id));
      this.#metrics.deleted(queue.name, toDelete.filter((m) => !lapsed.has(m) && !refused.has(m.MessageId ?? '')).length);
      if (result.failed.length > 0) {
        this.#log.error({ ...context, failed: result.failed }, 'DeleteMessageBatch refused some messages; they will be delivered again');
      }
    }
    await lease.drop(messages);
    return { kind: 'settled', keptIds: verdict.keepIds };
  }

  /**
   * --batch-window: receives more from the batch's queue until the batch is full, its window (from the first
   * receive) is over, or the next message would take the payload past Lambda's limit (src/receive/batch-window.ts).
   * What arrives joins the batch's lease at once, so a window longer than the visibility timeout hands nothing
   * out twice; the queue's slot stays with the loop. A stop ends the gathering before the next receive (one
   * already sent completes, and what it returns joins the batch), and so does a failed receive: either way what
   * was gathered is invoked and settled.
   */
  async #gather(batch: Batch, halt: AbortSignal): Promise<void> {
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
    for (;;) {
      const step = nextGatherStep(
        { count: messages.length, bytes, largestRecordBytes, startedAt: batch.receivedAt, lastReceiveEmpty },
        this.#window,
        this.#now(),
      );
      const context = { queue: queue.name, messages: messages.length, bytes, receives, gatheredMs: this.#now() - batch.receivedAt };
      if (step.action === 'invoke') {
        this.#log.debug({ ...context, reason: step.reason }, 'batch gathered');
        return;
      }
      // Liveness: each receive of a long window is a step of its own, with the deadline of that receive.
      this.#step(batch.loop, 'gather', step.delayMs + step.waitSec * 1000 + RECEIVE_MARGIN_MS);
      await sleep(step.delayMs, halt);
      if (halt.aborted) {
        this.#log.debug({ ...context, reason: 'stopping' }, 'batch gathered');
        return;
      }
      const startedAt = this.#now();
      const more = await this.#receiver.more(queue, step.max, step.waitSec, halt, lease.timeoutMs / 1000);
      receives++;
      if (more === undefined) {
        this.#log.warn(context, 'a receive for the batching window failed; invoking what was gathered');
        return;
      }
      lastReceiveEmpty = more.length === 0;
      if (lastReceiveEmpty) continue;
      lease.add(more, this.#now());
      messages.push(...more);
      count(more);
      this.#traceReceived(queue, more, startedAt);
      this.#metrics.gathered(queue.name, more.length);
    }
  }

  /**
   * The queue's filter (FilterCriteria), applied before the invocation: returns the messages to invoke. The
   * others are counted as filtered out, then deleted unseen (action delete, the trigger's semantics) or left to
   * return after their visibility timeout (action leave). On a FIFO queue with leave, the later messages of a
   * left message's group stay too, so the group keeps its order.
   */
  async #filter(batch: Batch): Promise<Message[]> {
    const { queue, lease } = batch;
    const options = this.#opts.queueOptions?.get(queue.name);
    if (!options?.filter) return batch.messages;
    const matched: Message[] = [];
    const filtered: Message[] = [];
    const behind: Message[] = [];
    const leftGroups = new Set<string>();
    const holdGroups = queue.fifo && options.filterAction === 'leave';
    for (const m of batch.messages) {
      const group = m.Attributes?.MessageGroupId ?? '';
      if (holdGroups && leftGroups.has(group)) behind.push(m);
      else if (matchesRecord(options.filter, toRecord(m, queue))) matched.push(m);
      else {
        filtered.push(m);
        if (holdGroups) leftGroups.add(group);
      }
    }
    if (filtered.length === 0) return matched;
    this.#metrics.filtered(queue.name, filtered.length);
    const context = { queue: queue.name, messageIds: ids(filtered), action: options.filterAction };
    if (options.filterAction === 'delete') {
      this.#step(batch.loop, 'delete', SETTLE_DEADLINE_MS);
      const entries = receipts(filtered);
      const result = await this.#tracer.settle(
        queue,
        'delete',
        filtered,
        () =>
          this.#deleter.delete(
            queue,
            entries,
            () => lease.expiresAt(filtered),
            // As on the normal delete path: a loop waiting out an SQS outage is not stuck.
            () => this.#step(batch.loop, 'delete', SETTLE_DEADLINE_MS),
          ),
        (r) => (r.failed.length > 0 ? 'entries_failed' : undefined),
      );
      this.#log.debug(context, 'messages matched no filter pattern; deleted');
      if (result.failed.length > 0)
        this.#log.error(
          { ...context, failed: result.failed },
          'DeleteMessageBatch refused some filtered-out messages; they will be delivered again',
        );
    } else {
      this.#log.debug({ ...context, heldBehind: ids(behind) }, 'messages matched no filter pattern; left on the queue');
    }
    await lease.drop([...filtered, ...behind]);
    return matched;
  }

  /**
   * --retry-backoff: gives messages kept after a failed invocation a visibility timeout from the back-off curve
   * (src/settle/retry-backoff.ts), so they return sooner or later than the queue's own timeout. They have
   * left the lease already, so no extension overrides it. On FIFO the delay is per message group. A queue's own
   * policy (queue-options) comes before --retry-backoff.
   */
  async #backOff(batch: Batch, kept: Message[]): Promise<void> {
    const { queue } = batch;
    const policy = retryBackoffFor(this.#opts.queueOptions?.get(queue.name)?.retryBackoff, this.#opts.retryBackoff);
    if (policy === undefined || kept.length === 0) return;
    // SQS refuses a timeout that ends more than 12 hours after the receive that returned the handle.
    const limitSec = Math.floor(MAX_VISIBILITY_SEC - (this.#now() - batch.receivedAt) / 1000) - 1;
    for (const step of planRetryBackoff(kept, queue.fifo, policy, this.#random, limitSec)) {
      // One step per call (with its retries): on FIFO there is a call per message group.
      this.#step(batch.loop, 'back-off', SETTLE_DEADLINE_MS);
      const context = {
        queue: queue.name,
        messageIds: ids(step.messages),
        delaySec: step.timeoutSec,
        receiveCounts: step.messages.map(receiveCountOf),
      };
      const result = await changeVisibility(this.#deps.source, this.#log, queue, receipts(step.messages), step.timeoutSec, () =>
        this.#step(batch.loop, 'back-off', SETTLE_DEADLINE_MS),
      );
      if (result.failed.length > 0)
        this.#log.warn(
          { ...context, failed: result.failed },
          'could not set the retry back-off of some messages; they return after their visibility timeout',
        );
      else this.#log.debug(context, 'retry back-off set');
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

function ids(messages: readonly Message[]): string[] {
  return messages.map((m) => m.MessageId ?? '');
}

function receipts(messages: readonly Message[]): ReceiptEntry[] {
  return messages.map((m) => ({ id: m.MessageId ?? '', receiptHandle: m.ReceiptHandle ?? '' }));
}
