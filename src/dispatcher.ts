import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { sleep } from './backoff.ts';
import type { DeleteMode } from './config.ts';
import { FunctionGate } from './invoke/function-gate.ts';
import { NO_ATTEMPTS, countAttempt, nextInvokeStep, safeToRelease, type InvokeAttempts } from './invoke/invoke-retry.ts';
import { interpretResult, type InvocationResponse } from './invoke/invoke-result.ts';
import type { FunctionInvoker, InvokeError } from './invoke/lambda-invoker.ts';
import { buildSqsEvents } from './invoke/sqs-event.ts';
import type { MetricsSink } from './metrics/metrics-sink.ts';
import { idsToKeep } from './queues/fifo-rule.ts';
import type { OrderMode, Random } from './queues/queue-order.ts';
import { Receiver } from './queues/receiver.ts';
import type { MessageSource, ReceiptEntry, ResolvedQueue } from './queues/sqs-source.ts';
import { DeleteBatcher, changeVisibility } from './settle.ts';
import { VisibilityLease } from './visibility-lease.ts';

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

export type DispatcherState = 'idle' | 'running' | 'draining' | 'stopped' | 'failed';

/** Metric names, per queue (dimension `Queue`). */
export const METRIC = {
  received: 'MessagesReceived',
  duration: 'ProcessingDuration',
  errors: 'InvocationErrors',
  deleted: 'MessagesDeleted',
} as const;

/** Lambda runs a function for at most 15 minutes: an Invoke with no answer a minute after that is dead. */
const INVOKE_TIMEOUT_MS = 16 * 60_000;
/** Unknown Invoke outcomes after which a batch is left to the queue's redrive rules. */
const MAX_UNKNOWN_OUTCOMES = 3;

/** Thrown by run() when a worker loop failed; the other loops drained first. */
export class DispatcherFailed extends Error {
  override readonly name = 'DispatcherFailed';
}

interface Batch {
  readonly queue: ResolvedQueue;
  readonly messages: Message[];
  readonly receivedAt: number;
  readonly lease: VisibilityLease;
}

/** How one chunk ended: settled (with the ids that stay on the queue), or released for shutdown. */
type ChunkEnd = { kind: 'settled'; keptIds: string[] } | { kind: 'released' };

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
  readonly #inFlight = new Set<Batch>();
  #state: DispatcherState = 'idle';

  constructor(options: DispatcherOptions, deps: DispatcherDeps) {
    this.#opts = options;
    this.#deps = deps;
    this.#log = deps.logger;
    this.#random = deps.random ?? Math.random;
    this.#now = deps.now ?? Date.now;
    this.#receiver = new Receiver(options, { source: deps.source, logger: deps.logger, random: this.#random, now: this.#now });
    this.#deleter = new DeleteBatcher(deps.source, deps.logger);
    this.#gate = new FunctionGate({ logger: deps.logger, random: this.#random, now: this.#now });
  }

  get state(): DispatcherState {
    return this.#state;
  }

  /** Whether the function is paused because it cannot be invoked. */
  get functionPaused(): boolean {
    return this.#gate.paused;
  }

  /** Messages received and not yet settled, for the shutdown report. */
  inFlight(): { queue: string; messageIds: string[] }[] {
    return [...this.#inFlight].map((b) => ({ queue: b.queue.name, messageIds: ids(b.lease.messages) }));
  }

  async run(stop: AbortSignal): Promise<void> {
    if (this.#state !== 'idle') throw new Error(`Dispatcher.run called in state ${this.#state}`);
    this.#setState('running');
    const failed = new AbortController();
    const halt = AbortSignal.any([stop, failed.signal]);
    const onHalt = () => this.#setState('draining');
    halt.addEventListener('abort', onHalt, { once: true });
    if (halt.aborted) onHalt();
    let failure: unknown;
    await Promise.all(
      Array.from({ length: this.#opts.concurrency }, () =>
        this.#loop(halt).catch((err: unknown) => {
          if (failure === undefined) {
            failure = err;
            this.#log.fatal({ err }, 'a worker loop failed; draining the others');
          }
          failed.abort();
        }),
      ),
    );
    halt.removeEventListener('abort', onHalt);
    if (failure !== undefined) {
      this.#setState('failed');
      throw new DispatcherFailed(`a worker loop failed: ${failure instanceof Error ? failure.message : String(failure)}`, { cause: failure });
    }
    this.#setState('stopped');
  }

  #setState(state: DispatcherState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#log.info({ state }, 'dispatcher state');
  }

  async #loop(halt: AbortSignal): Promise<void> {
    // Every check of `halt` happens before a receive, never between a receive and its settlement: a batch
    // that was received is always invoked and settled (SIGTERM semantics of the original Workerless).
    while (!halt.aborted) {
      if (this.#gate.paused) {
        await this.#gate.wait(halt);
        continue;
      }
      const received = await this.#receiver.next(halt);
      if (received) await this.#process(this.#track(received.queue, received.messages), halt);
    }
  }

  #track(queue: ResolvedQueue, messages: Message[]): Batch {
    const receivedAt = this.#now();
    const lease = new VisibilityLease(queue, messages, this.#visibilityMs(queue), receivedAt, {
      source: this.#deps.source,
      logger: this.#log,
      now: this.#now,
      random: this.#random,
    });
    const batch: Batch = { queue, messages, receivedAt, lease };
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
  async #process(batch: Batch, halt: AbortSignal): Promise<void> {
    const { queue } = batch;
    const batchIds = ids(batch.messages);
    try {
      let offset = 0;
      for (const chunk of buildSqsEvents(batch.messages, queue)) {
        // Later chunks wait their turn under the same lease (and are released with this one on shutdown).
        const unsettled = batch.messages.slice(offset);
        offset += chunk.messages.length;
        const end = await this.#invokeAndSettle(batch, chunk.messages, unsettled, chunk.payload, halt);
        if (end.kind === 'released') break;
        const kept = idsToKeep(batchIds, new Set(end.keptIds), queue.fifo);
        if (queue.fifo && kept.length > 0 && offset < batch.messages.length) {
          this.#log.warn({ queue: queue.name, messageIds: batchIds.slice(offset) }, 'FIFO batch stopped at a failure; later messages stay on the queue');
          break;
        }
      }
    } catch (err) {
      this.#log.error({ queue: queue.name, messageIds: batchIds, function: this.#opts.functionName, err }, 'unexpected error while processing a batch');
    } finally {
      await batch.lease.end();
      this.#inFlight.delete(batch);
      const durationMs = this.#now() - batch.receivedAt;
      for (let i = 0; i < batch.messages.length; i++) {
        this.#deps.metrics.record({ name: METRIC.duration, unit: 'Milliseconds', value: durationMs, dimensions: { Queue: queue.name } });
      }
    }
  }

  /**
   * Invokes one chunk and settles it. `unsettled` is this chunk and every later one of the batch: the
   * messages to release on shutdown.
   */
  async #invokeAndSettle(batch: Batch, messages: Message[], unsettled: Message[], payload: string, halt: AbortSignal): Promise<ChunkEnd> {
    const { queue, lease } = batch;
    const messageIds = ids(messages);
    const context = { queue: queue.name, messageIds, function: this.#opts.functionName };
    const started = this.#now();
    const outcome = await this.#invokeWithRetry(batch, ids(unsettled), payload, halt);
    if (outcome.kind === 'stopped') {
      await lease.drop(unsettled);
      if (outcome.release) {
        await changeVisibility(this.#deps.source, this.#log, queue, receipts(unsettled), 0);
        this.#log.warn({ ...context, messageIds: ids(unsettled) }, 'shutting down while the function is throttled or unusable; released the messages');
      } else {
        this.#log.warn({ ...context, messageIds: ids(unsettled) }, 'shutting down while an earlier invocation may still run; the messages return after their visibility timeout');
      }
      return { kind: 'released' };
    }
    if (outcome.kind === 'failed') {
      this.#recordError(queue);
      await lease.drop(messages);
      const { code, message } = outcome.error;
      this.#log.error({ ...context, err: { kind: outcome.error.kind, code, message } }, 'Invoke failed; messages stay on the queue');
      return { kind: 'settled', keptIds: messageIds };
    }
    const verdict = interpretResult(outcome.response, messageIds, queue.fifo);
    this.#log.debug({ ...context, durationMs: this.#now() - started, result: verdict.kind }, 'invoked');
    if (verdict.kind === 'function-error') {
      this.#log.error({ ...context, errorType: verdict.errorType, errorMessage: verdict.errorMessage }, 'function error; messages stay on the queue');
    } else if (verdict.kind === 'invalid-response') {
      this.#log.error({ ...context, reason: verdict.reason }, 'invalid batchItemFailures response; the whole batch stays on the queue');
    } else if (verdict.kind === 'partial') {
      this.#log.warn({ ...context, failedMessageIds: verdict.keepIds }, 'function reported failed items; they stay on the queue');
    }
    if (verdict.kind === 'function-error' || verdict.kind === 'invalid-response') this.#recordError(queue);
    const kept = new Set(verdict.keepIds);
    // Failed messages leave the lease first: they come back after their visibility timeout, as on the trigger.
    await lease.drop(messages.filter((m) => kept.has(m.MessageId ?? '')));
    if (this.#opts.deleteMode === 'on-success' && verdict.deleteIds.length > 0) {
      const byId = new Map(messages.map((m) => [m.MessageId ?? '', m]));
      const entries = verdict.deleteIds.map((id) => ({ id, receiptHandle: byId.get(id)?.ReceiptHandle ?? '' }));
      // The lease keeps these invisible until the delete has completed, however long its retries take.
      const result = await this.#deleter.delete(queue, entries);
      if (result.done > 0) {
        this.#deps.metrics.record({ name: METRIC.deleted, unit: 'Count', value: result.done, dimensions: { Queue: queue.name } });
      }
      if (result.failed.length > 0) {
        this.#log.error({ ...context, failed: result.failed }, 'DeleteMessageBatch refused some messages; they will be delivered again');
      }
    }
    await lease.drop(messages);
    return { kind: 'settled', keptIds: verdict.keepIds };
  }

  /**
   * Invokes until the function answers or the retry policy gives up (src/invoke/invoke-retry.ts). The lease
   * keeps the messages invisible meanwhile, so throttles, pauses and holds cost no receive count. An
   * invocation in flight is never cut short by shutdown; only waiting between attempts is.
   */
  async #invokeWithRetry(
    batch: Batch,
    unsettledIds: string[],
    payload: string,
    halt: AbortSignal,
  ): Promise<
    | { kind: 'answered'; response: InvocationResponse }
    | { kind: 'failed'; error: InvokeError }
    | { kind: 'stopped'; release: boolean }
  > {
    const { queue } = batch;
    let attempts: InvokeAttempts = NO_ATTEMPTS;
    const policy = { unknownHoldMs: this.#visibilityMs(queue), maxUnknown: MAX_UNKNOWN_OUTCOMES };
    for (;;) {
      const result = await this.#deps.invoker.invoke(payload, AbortSignal.timeout(INVOKE_TIMEOUT_MS));
      if (result.ok) {
        this.#gate.resume();
        return { kind: 'answered', response: result.response };
      }
      const error = result.error;
      attempts = countAttempt(attempts, error);
      const step = nextInvokeStep(error, attempts, policy, this.#random);
      if (step.action === 'give-up') return { kind: 'failed', error };
      const context = { queue: queue.name, messageIds: unsettledIds, function: this.#opts.functionName, err: { kind: error.kind, code: error.code, message: error.message } };
      if (halt.aborted) return { kind: 'stopped', release: safeToRelease(attempts) };
      if (step.action === 'pause-function') {
        this.#gate.pause(error);
        await this.#gate.wait(halt);
      } else {
        if (error.kind === 'unknown') {
          this.#log.warn({ ...context, holdMs: step.delayMs, attempt: attempts.unknown }, 'Invoke outcome unknown (the function may still be running); holding the messages before invoking them again');
        } else {
          this.#log.warn({ ...context, delayMs: step.delayMs, attempt: attempts.throttled + attempts.notSent }, error.kind === 'throttled' ? 'function throttled, retrying' : 'Invoke could not reach Lambda, retrying');
        }
        await sleep(step.delayMs, halt);
      }
      if (halt.aborted) return { kind: 'stopped', release: safeToRelease(attempts) };
    }
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
