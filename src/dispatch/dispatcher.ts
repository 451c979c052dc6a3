import { inspect } from 'node:util';
import type { ResolvedQueue } from '../core/queue.ts';
import type { QueueLimit } from '../receive/queue-limits.ts';
import type { Received } from '../receive/receiver.ts';
import { ids } from '../settle/receipts.ts';
import { VisibilityLease } from '../settle/visibility-lease.ts';
import { processBatch, type Batch } from './batch.ts';
import { assembleParts, type DispatcherParts } from './parts.ts';
import type { DispatcherState, DispatcherStatus } from './status.ts';
import type { DispatcherDeps, DispatcherOptions } from './dispatcher-options.ts';

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
  /** Each step's part, shared by the loops (src/dispatch/parts.ts). */
  readonly #parts: DispatcherParts;
  /** The batch each loop holds, by loop: a slot per loop, not a Set (docs/performance.md, "Garbage the data path no longer makes"). */
  readonly #inFlight: (Batch | undefined)[];
  #state: DispatcherState = 'idle';
  /** Aborts drainRetryMs after the stop: waits between Invoke attempts end there. */
  readonly #drainOver = new AbortController();

  constructor(options: DispatcherOptions, deps: DispatcherDeps) {
    this.#opts = options;
    this.#inFlight = Array.from({ length: options.concurrency }, () => undefined);
    this.#parts = assembleParts(options, deps, this.#drainOver.signal);
  }

  /** What the dispatcher is doing now: one snapshot for the probes, the status page and the shutdown report. */
  status(): DispatcherStatus {
    // Oldest first, as they were received.
    const inFlight = this.#inFlight.filter((b) => b !== undefined).sort((a, b) => a.receivedAt - b.receivedAt);
    return {
      state: this.#state,
      functionName: this.#opts.functionName,
      functionPaused: this.#parts.gate.paused,
      receivable: this.#parts.receiver.anyHealthy,
      concurrencyLimit: this.#parts.budget.limit,
      loops: this.#parts.activities.snapshot(),
      // Listed only when read (the shutdown report): the probes read status() too, and a batch may hold 10,000 ids.
      get inFlight() {
        return inFlight.map((b) => ({ queue: b.queue.name, messageIds: ids(b.lease.messages) }));
      },
    };
  }

  /**
   * The route's queues from now on, while it runs (queues found by prefix or tag, src/aws/queue-discovery.ts):
   * queues that joined are received from, queues that left are no longer received from, and what is in flight for
   * them settles as it would have. `tagLimits`: limits read from a queue's tags, by name; --queue-options wins
   * for a queue it names.
   */
  setQueues(queues: readonly ResolvedQueue[], tagLimits: ReadonlyMap<string, QueueLimit> = new Map()): void {
    const before = new Set(this.queues.map((q) => q.name));
    const now = new Set(queues.map((q) => q.name));
    this.#parts.events.queuesChanged(
      [...before].filter((name) => !now.has(name)),
      [...now].filter((name) => !before.has(name)),
    );
    this.#parts.visibility.setQueues(queues);
    this.#parts.receiver.setQueues(
      queues,
      queues.map((q) => this.#opts.queueOptions?.get(q.name) ?? tagLimits.get(q.name)),
    );
  }

  /**
   * The fleet's view changed (members, busy queues, fallen back or shared again): newly served queues get their
   * polls at once, and the budget reads its fleet share again.
   */
  fleetChanged(): void {
    this.#parts.receiver.servesChanged();
    this.#parts.budget.ceilingsMoved();
  }

  /** The queues a receive of which came back full within the last `withinMs`: what this replica advertises as busy. */
  busyQueues(withinMs: number): ResolvedQueue[] {
    return this.#parts.receiver.busyQueues(withinMs);
  }

  /** The route's queues now, retired ones left out. */
  get queues(): readonly ResolvedQueue[] {
    return this.#parts.receiver.queues;
  }

  /** How many queues the route receives from now (the metrics' per-queue policy counts them): the Receiver's count. */
  get queueCount(): number {
    return this.#parts.receiver.queueCount;
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
    const refreshing = this.#parts.visibility.run(this.#opts.visibilityRefreshMs, halt);
    await Promise.all(
      Array.from({ length: this.#opts.concurrency }, (_, loop) =>
        this.#loop(loop, halt).catch((err: unknown) => {
          if (failure === undefined) {
            failure = err;
            this.#parts.events.loopFailed(err);
          }
          failed.abort();
        }),
      ),
    );
    halt.removeEventListener('abort', onHalt);
    // Batches that idle polls returned with no loop free to take them are released, and the polls still on their
    // way are waited for (what they return now is released too): nothing stays invisible after the stop.
    await this.#parts.receiver.drain();
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
    this.#parts.events.state(state);
  }

  async #loop(loop: number, halt: AbortSignal): Promise<void> {
    // Every check of `halt` happens before a receive, never between a receive and its settlement: a batch
    // that was received is always invoked and settled (SIGTERM semantics of the original Workerless).
    while (!halt.aborted) {
      if (this.#parts.gate.paused) {
        this.#parts.events.paused(true);
        // Renewed for each stretch of the pause: another loop's failed probe may lengthen it.
        await this.#parts.gate.wait(halt, (ms) => this.#parts.activities.mark(loop, 'paused', ms));
        this.#parts.events.paused(this.#parts.gate.paused);
        continue;
      }
      // Over the budget's limit (and its prefetch share) the loop does not receive: messages the function cannot
      // take now stay on the queue, visible to other replicas and to this one once a place frees.
      if (!(await this.#parts.capacity.enter(loop, halt))) continue;
      try {
        await this.#pass(loop, halt);
      } finally {
        this.#parts.capacity.free(loop);
      }
    }
    this.#parts.activities.mark(loop, undefined);
  }

  /**
   * One receive and the batch it brought. A function of its own so that nothing of the batch outlives it in the
   * loop's long-lived frame (docs/performance.md, "Garbage the data path no longer makes").
   */
  async #pass(loop: number, halt: AbortSignal): Promise<void> {
    this.#parts.activities.mark(loop, 'receive', this.#parts.batchDeps.receiveDeadlineMs);
    const startedAt = this.#parts.now();
    // Waiting for a message has no deadline: the idle loops' polls have their own (src/receive/idle-polls.ts).
    const received = await this.#parts.receiver.next(halt, () => this.#parts.activities.mark(loop, 'waiting for a message', Infinity));
    this.#parts.activities.mark(loop, undefined);
    if (received) {
      this.#parts.events.received(received.queue, received.messages, startedAt);
      await this.#process(this.#track(loop, received), halt);
    }
  }

  /**
   * `received.visibilityTimeoutSec`: what the receive stated, so the lease assumes what SQS applied.
   * `received.lease`: the lease an idle poll's batch has had since its answer (it may have waited for this loop);
   * the batch keeps it, and its window and age count from that answer (`received.receivedAt`).
   */
  #track(loop: number, received: Received<VisibilityLease>): Batch {
    const { queue, messages, visibilityTimeoutSec, lease: held } = received;
    const receivedAt = received.receivedAt ?? this.#parts.now();
    const lease = held ?? new VisibilityLease(queue, messages, visibilityTimeoutSec * 1000, receivedAt, this.#parts.leaseDeps);
    const batch: Batch = { loop, queue, messages, receivedAt, lease };
    this.#inFlight[loop] = batch;
    this.#parts.events.batchStarted(queue, messages.length);
    return batch;
  }

  /** One batch's sequence (src/dispatch/batch.ts), then it leaves the in-flight set and its loop's capacity. */
  async #process(batch: Batch, halt: AbortSignal): Promise<void> {
    try {
      await processBatch(batch, halt, this.#parts.batchDeps);
    } finally {
      this.#inFlight[batch.loop] = undefined;
      this.#parts.activities.mark(batch.loop, undefined);
      this.#parts.events.batchSettled(batch.queue, batch.messages.length, this.#parts.now() - batch.receivedAt);
      this.#parts.capacity.settled(batch.loop, batch.queue);
    }
  }
}
