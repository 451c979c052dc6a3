import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { classifyAwsError, isAbort } from './aws-errors.ts';
import { backoffMs, sleep } from './backoff.ts';
import { interpretResult } from './invoke/invoke-result.ts';
import type { FunctionInvoker, InvokeOutcome } from './invoke/lambda-invoker.ts';
import { buildSqsEvents } from './invoke/sqs-event.ts';
import type { MetricsSink } from './metrics/metrics-sink.ts';
import { drawOrder, type OrderMode, type QueueList, type Random } from './queues/queue-order.ts';
import type { MessageSource, ReceiptEntry, ReceiveOptions, ResolvedQueue } from './queues/sqs-source.ts';
import { DeleteBatcher, changeVisibility } from './settle.ts';

export type DeleteMode = 'on-success' | 'never';

export interface DispatcherOptions {
  readonly queues: readonly ResolvedQueue[];
  readonly orderMode: OrderMode;
  /** Number of worker loops = the most concurrent invocations. */
  readonly concurrency: number;
  /** Messages per invocation, 1-10. */
  readonly batchSize: number;
  /** Long-poll wait when every queue was empty, 0-20 s. */
  readonly pollForSec: number;
  /** Pause after an empty long poll. */
  readonly sleepSec: number;
  /** Passed on ReceiveMessage when set; otherwise each queue's own timeout applies. */
  readonly visibilityTimeoutSec?: number | undefined;
  readonly deleteMode: DeleteMode;
  /** For logs only. */
  readonly functionName: string;
}

export interface DispatcherDeps {
  readonly source: MessageSource;
  readonly invoker: FunctionInvoker;
  readonly metrics: MetricsSink;
  readonly logger: Logger;
  readonly random?: Random;
  readonly now?: () => number;
}

export type DispatcherState = 'idle' | 'running' | 'draining' | 'stopped';

/** Metric names, per queue (dimension `Queue`). */
export const METRIC = {
  received: 'MessagesReceived',
  duration: 'ProcessingDuration',
  errors: 'InvocationErrors',
  deleted: 'MessagesDeleted',
} as const;

/** Keep this much visibility in hand before waiting out a throttle; extend it when less remains. */
const VISIBILITY_MARGIN_MS = 5_000;
/** Lambda runs a function for at most 15 minutes: an Invoke with no answer a minute after that is dead. */
const INVOKE_TIMEOUT_MS = 16 * 60_000;
/** Invoke failures other than throttling (5xx, network, timeout) that are retried before giving up. */
const MAX_TRANSIENT_INVOKE_ATTEMPTS = 5;

interface Batch {
  readonly queue: ResolvedQueue;
  readonly messages: Message[];
  readonly receivedAt: number;
  /** When SQS will hand these messages to someone else unless we settle or extend them. */
  visibleAt: number;
}

/**
 * The worker pool: `concurrency` async loops that each pick a queue order, receive, invoke, settle, repeat.
 *
 * Lifecycle: run(stop) -> running; when `stop` aborts: draining (no new receives, long polls aborted,
 * in-flight batches are invoked and settled) -> stopped, and run() resolves. A process that must exit before
 * that (second signal, shutdown timeout) reads inFlight() to log what it leaves behind.
 */
export class Dispatcher {
  readonly #opts: DispatcherOptions;
  readonly #deps: DispatcherDeps;
  readonly #log: Logger;
  readonly #list: QueueList;
  readonly #random: Random;
  readonly #now: () => number;
  readonly #deleter: DeleteBatcher;
  /** How many loops are long-polling each queue right now (index = queue index). */
  readonly #longPollers: number[];
  /** Receive failures per queue, shared by all loops: a failing queue is skipped until retryAt. */
  readonly #health: { failures: number; retryAt: number }[];
  readonly #inFlight = new Set<Batch>();
  #state: DispatcherState = 'idle';

  constructor(options: DispatcherOptions, deps: DispatcherDeps) {
    if (options.queues.length === 0) throw new Error('Dispatcher needs at least one queue');
    this.#opts = options;
    this.#deps = deps;
    this.#log = deps.logger;
    this.#random = deps.random ?? Math.random;
    this.#now = deps.now ?? Date.now;
    this.#list = { mode: options.orderMode, queues: options.queues.map((q) => ({ ref: q.name, weight: q.weight })) };
    this.#deleter = new DeleteBatcher(deps.source, deps.logger);
    this.#longPollers = options.queues.map(() => 0);
    this.#health = options.queues.map(() => ({ failures: 0, retryAt: 0 }));
  }

  get state(): DispatcherState {
    return this.#state;
  }

  /** Messages received and not yet settled, for the shutdown report. */
  inFlight(): { queue: string; messageIds: string[] }[] {
    return [...this.#inFlight].map((b) => ({ queue: b.queue.name, messageIds: b.messages.map((m) => m.MessageId ?? '') }));
  }

  async run(stop: AbortSignal): Promise<void> {
    if (this.#state !== 'idle') throw new Error(`Dispatcher.run called in state ${this.#state}`);
    this.#setState('running');
    const onStop = () => this.#setState('draining');
    stop.addEventListener('abort', onStop, { once: true });
    if (stop.aborted) onStop();
    try {
      await Promise.all(Array.from({ length: this.#opts.concurrency }, () => this.#loop(stop)));
    } finally {
      stop.removeEventListener('abort', onStop);
      this.#setState('stopped');
    }
  }

  #setState(state: DispatcherState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#log.info({ state }, 'dispatcher state');
  }

  async #loop(stop: AbortSignal): Promise<void> {
    // Every check of `stop` happens before a receive, never between a receive and its settlement: a batch
    // that was received is always invoked and settled (SIGTERM semantics of the original Workerless).
    while (!stop.aborted) {
      const batch = await this.#find(stop);
      if (batch) await this.#process(batch, stop);
    }
  }

  /**
   * Checks the healthy queues in this iteration's order; long-polls one if all were empty. A queue whose
   * receive failed is skipped until its back-off passes, so one broken queue (deleted, access revoked,
   * throttled) never stalls the others.
   */
  async #find(stop: AbortSignal): Promise<Batch | undefined> {
    const { queues, batchSize, pollForSec, sleepSec, visibilityTimeoutSec } = this.#opts;
    const now = this.#now();
    const order = drawOrder(this.#list, this.#random).filter((i) => this.#health[i]!.retryAt <= now);
    if (order.length === 0) {
      await sleep(Math.min(...this.#health.map((h) => h.retryAt)) - now, stop);
      return undefined;
    }
    for (const index of order) {
      if (stop.aborted) return undefined;
      // Short receives are not aborted on shutdown: they return in milliseconds, and aborting one after SQS
      // answered would strand its messages until their visibility timeout.
      const messages = await this.#receive(index, { max: batchSize, waitSec: 0, visibilityTimeoutSec });
      if (messages.length > 0) return this.#track(queues[index]!, messages);
    }
    if (stop.aborted) return undefined;
    const healthy = order.filter((i) => this.#health[i]!.retryAt <= this.#now());
    // Every queue failed: the next pass waits for the first one's back-off instead of polling or sleeping.
    if (healthy.length === 0) return undefined;
    if (pollForSec > 0) {
      const index = this.#pickLongPollQueue(healthy);
      this.#longPollers[index]!++;
      try {
        const messages = await this.#receive(index, { max: batchSize, waitSec: pollForSec, visibilityTimeoutSec }, stop);
        if (messages.length > 0) return this.#track(queues[index]!, messages);
        if (this.#health[index]!.retryAt > this.#now()) return undefined; // it failed: no --sleep on top
      } finally {
        this.#longPollers[index]!--;
      }
    }
    await sleep(sleepSec * 1000, stop);
    return undefined;
  }

  /** One ReceiveMessage. Failures are recorded in the queue's health and come back as an empty result. */
  async #receive(index: number, options: ReceiveOptions, stop?: AbortSignal): Promise<Message[]> {
    const queue = this.#opts.queues[index]!;
    const health = this.#health[index]!;
    try {
      const messages = await this.#deps.source.receive(queue, options, stop);
      if (health.failures > 0) {
        this.#log.info({ queue: queue.name, failures: health.failures }, 'ReceiveMessage works again');
        health.failures = 0;
      }
      return messages;
    } catch (err) {
      if (stop?.aborted && isAbort(err)) return [];
      const now = this.#now();
      // Other loops may fail on the same queue at the same moment: count one failure per back-off window.
      if (now < health.retryAt) return [];
      const e = classifyAwsError(err);
      const delayMs = backoffMs(health.failures++, 200, 20_000, this.#random);
      health.retryAt = now + delayMs;
      this.#log[e.kind === 'fatal' ? 'error' : 'warn'](
        { queue: queue.name, err: { code: e.code, message: e.message }, attempt: health.failures, delayMs },
        'ReceiveMessage failed; skipping this queue while backing off',
      );
      return [];
    }
  }

  /**
   * The queue with the fewest loops already long-polling it; ties go to the queue that comes first in this
   * iteration's order. With concurrency >= queues every queue is covered by an idle loop, so a message on
   * any queue is picked up as soon as it arrives instead of after a full poll.
   */
  #pickLongPollQueue(order: readonly number[]): number {
    let best = order[0]!;
    for (const index of order) if (this.#longPollers[index]! < this.#longPollers[best]!) best = index;
    return best;
  }

  #track(queue: ResolvedQueue, messages: Message[]): Batch {
    const receivedAt = this.#now();
    const batch: Batch = { queue, messages, receivedAt, visibleAt: receivedAt + this.#visibilityMs(queue) };
    this.#inFlight.add(batch);
    this.#deps.metrics.record({ name: METRIC.received, unit: 'Count', value: messages.length, dimensions: { Queue: queue.name } });
    return batch;
  }

  #visibilityMs(queue: ResolvedQueue): number {
    return (this.#opts.visibilityTimeoutSec ?? queue.visibilityTimeoutSec) * 1000;
  }

  /**
   * Invokes and settles one received batch, in chunks when it exceeds the synchronous payload limit. Never
   * throws: failures are logged and the messages kept (they return after their visibility timeout).
   */
  async #process(batch: Batch, stop: AbortSignal): Promise<void> {
    const { queue } = batch;
    try {
      let offset = 0;
      for (const chunk of buildSqsEvents(batch.messages, queue)) {
        // Later chunks wait their turn: they are kept invisible (and released on shutdown) with this one.
        const unsettled = batch.messages.slice(offset);
        offset += chunk.messages.length;
        const result = await this.#invokeAndSettle(batch, chunk.messages, unsettled, chunk.payload, stop);
        if (result === 'released') break;
        if (result !== 'success' && queue.fifo && offset < batch.messages.length) {
          // A group's later messages must not run before an earlier one that failed: they stay for redelivery.
          this.#log.warn({ queue: queue.name, messageIds: ids(batch.messages.slice(offset)) }, 'FIFO batch stopped at a failure; later messages stay on the queue');
          break;
        }
      }
    } catch (err) {
      this.#log.error({ queue: queue.name, messageIds: ids(batch.messages), function: this.#opts.functionName, err }, 'unexpected error while processing a batch');
    } finally {
      this.#inFlight.delete(batch);
      const durationMs = this.#now() - batch.receivedAt;
      for (let i = 0; i < batch.messages.length; i++) {
        this.#deps.metrics.record({ name: METRIC.duration, unit: 'Milliseconds', value: durationMs, dimensions: { Queue: queue.name } });
      }
    }
  }

  /**
   * Invokes one chunk and settles it. `unsettled` is this chunk and every later one of the batch: the
   * messages to keep invisible while waiting, or to release on shutdown.
   */
  async #invokeAndSettle(
    batch: Batch,
    messages: Message[],
    unsettled: Message[],
    payload: string,
    stop: AbortSignal,
  ): Promise<'success' | 'failed' | 'released'> {
    const { queue } = batch;
    const messageIds = ids(messages);
    const context = { queue: queue.name, messageIds, function: this.#opts.functionName };
    const started = this.#now();
    const outcome = await this.#invokeWithRetry(batch, unsettled, payload, stop);
    if (outcome === 'stopped') {
      await changeVisibility(this.#deps.source, this.#log, queue, receipts(unsettled), 0);
      this.#log.warn({ ...context, messageIds: ids(unsettled) }, 'shutting down while the function is throttled or failing; released the messages');
      return 'released';
    }
    if (!outcome.ok) {
      this.#recordError(queue);
      this.#log.error({ ...context, err: { code: outcome.error.code, message: outcome.error.message } }, 'Invoke failed; messages stay on the queue');
      return 'failed';
    }
    const verdict = interpretResult(outcome.response, messageIds, queue.fifo);
    this.#log.debug({ ...context, durationMs: this.#now() - started, result: verdict.kind }, 'invoked');
    if (verdict.kind === 'function-error') {
      this.#recordError(queue);
      this.#log.error({ ...context, errorType: verdict.errorType, errorMessage: verdict.errorMessage }, 'function error; messages stay on the queue');
      return 'failed';
    }
    if (verdict.kind === 'invalid-response') {
      this.#recordError(queue);
      this.#log.error({ ...context, reason: verdict.reason }, 'invalid batchItemFailures response; the whole batch stays on the queue');
      return 'failed';
    }
    if (verdict.kind === 'partial') {
      this.#log.warn({ ...context, failedMessageIds: verdict.keepIds }, 'function reported failed items; they stay on the queue');
    }
    if (this.#opts.deleteMode === 'on-success') {
      const byId = new Map(messages.map((m) => [m.MessageId ?? '', m]));
      const entries = verdict.deleteIds.map((id) => ({ id, receiptHandle: byId.get(id)?.ReceiptHandle ?? '' }));
      const result = await this.#deleter.delete(queue, entries);
      if (result.done > 0) {
        this.#deps.metrics.record({ name: METRIC.deleted, unit: 'Count', value: result.done, dimensions: { Queue: queue.name } });
      }
      if (result.failed.length > 0) {
        this.#log.error({ ...context, failed: result.failed }, 'DeleteMessageBatch refused some messages; they will be delivered again');
      }
    }
    return verdict.kind === 'success' ? 'success' : 'failed';
  }

  /**
   * Throttling means the function did not take the batch. Unlike AWS's trigger, which lets such messages
   * return to the queue (and climb towards the DLQ), we keep them and retry until the function has capacity,
   * extending their visibility while we wait. Other transient failures (Lambda 5xx, network, no answer within
   * INVOKE_TIMEOUT_MS) may or may not have run the function, so they get a few retries and then the messages
   * go back to the queue's own redrive rules. Returns 'stopped' when shutdown interrupts the waiting.
   */
  async #invokeWithRetry(batch: Batch, unsettled: Message[], payload: string, stop: AbortSignal): Promise<InvokeOutcome | 'stopped'> {
    const { queue } = batch;
    let transientFailures = 0;
    for (let attempt = 0; ; attempt++) {
      // Not the stop signal: an invocation in flight is always allowed to finish; only a dead connection ends it.
      const stopHeartbeat = this.#keepInvisible(batch, unsettled);
      const outcome = await this.#deps.invoker.invoke(payload, AbortSignal.timeout(INVOKE_TIMEOUT_MS)).finally(stopHeartbeat);
      if (outcome.ok || outcome.error.kind === 'fatal') return outcome;
      if (outcome.error.kind === 'retryable' && ++transientFailures >= MAX_TRANSIENT_INVOKE_ATTEMPTS) return outcome;
      if (stop.aborted) return 'stopped';
      const delayMs = backoffMs(attempt, 100, 5_000, this.#random);
      if (this.#now() + delayMs + VISIBILITY_MARGIN_MS > batch.visibleAt) {
        const timeoutMs = this.#visibilityMs(queue);
        const extended = await changeVisibility(this.#deps.source, this.#log, queue, receipts(unsettled), timeoutMs / 1000);
        if (extended.failed.length > 0) return outcome;
        batch.visibleAt = this.#now() + timeoutMs;
      }
      this.#log.warn(
        { queue: queue.name, messageIds: ids(unsettled), function: this.#opts.functionName, attempt, delayMs, err: { code: outcome.error.code, message: outcome.error.message } },
        outcome.error.kind === 'throttled' ? 'function throttled, retrying' : 'Invoke failed, retrying',
      );
      await sleep(delayMs, stop);
      if (stop.aborted) return 'stopped';
    }
  }

  /**
   * While the function runs, extends the messages' visibility shortly before it runs out, so a slow
   * invocation is not handed to another loop (or consumer) as a duplicate. If SQS refuses an extension (the
   * message was already redelivered, or deleted by the function itself), it stops trying and says so. The
   * returned function stops it and waits for an extension already on its way, so none lands after settling.
   */
  #keepInvisible(batch: Batch, messages: Message[]): () => Promise<void> {
    const timeoutMs = this.#visibilityMs(batch.queue);
    if (timeoutMs <= 0) return async () => {};
    const leadMs = Math.min(VISIBILITY_MARGIN_MS, timeoutMs / 2);
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    let inFlight: Promise<void> = Promise.resolve();
    const schedule = () => {
      timer = setTimeout(() => {
        inFlight = changeVisibility(this.#deps.source, this.#log, batch.queue, receipts(messages), timeoutMs / 1000).then((result) => {
          if (result.failed.length > 0) {
            stopped = true;
            this.#log.warn({ queue: batch.queue.name, failed: result.failed }, 'SQS refused to extend visibility during a long invocation; no longer extending it');
            return;
          }
          batch.visibleAt = this.#now() + timeoutMs;
          if (!stopped) schedule();
        });
      }, Math.max(0, batch.visibleAt - leadMs - this.#now()));
    };
    schedule();
    return async () => {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    };
  }

  #recordError(queue: ResolvedQueue): void {
    this.#deps.metrics.record({ name: METRIC.errors, unit: 'Count', value: 1, dimensions: { Queue: queue.name } });
  }
}

function ids(messages: readonly Message[]): string[] {
  return messages.map((m) => m.MessageId ?? '');
}

function receipts(messages: readonly Message[]): ReceiptEntry[] {
  return messages.map((m) => ({ id: m.MessageId ?? '', receiptHandle: m.ReceiptHandle ?? '' }));
}
