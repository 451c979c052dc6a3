import type { Logger } from 'pino';
import { callErrorOf, withDeadline } from '../core/errors.ts';
import { sleep } from '../util/backoff.ts';
import { eachBounded } from '../util/each-bounded.ts';
import { CALL_DEADLINE_MS, type QueueLookup, type ResolvedQueue } from '../core/queue.ts';
import { BACKLOG_ATTRIBUTES, backlogOf, type BacklogCounts } from '../core/backlog.ts';
import { maxReceiveCountOf } from '../settle/failure-destination.ts';

/**
 * The visibility timeout that each receive from a queue states (ReceiveMessage's VisibilityTimeout), and so
 * the one that the lease of what it returns assumes: SQS and the lease always agree on when a message is
 * handed out again, whatever happens to the queue's own setting meanwhile.
 *
 * With --visibility-timeout that value is used for every queue and never changes. Without it, it is the
 * queue's own VisibilityTimeout, read at start-up and re-read (GetQueueAttributes) every refresh period, so a
 * change made in the console or by Terraform is picked up without a restart. A new value applies to receives
 * from then on; leases already open keep the timeout their receive stated, which is the one SQS applied to
 * them. A failed re-read keeps the last value: stating a stale timeout is safe, since SQS applies what the
 * receive states and the lease extends by it.
 *
 * The same read serves the backlog gauges (`onBacklog`, src/core/backlog.ts): one GetQueueAttributes per
 * queue per refresh period asks for the visibility timeout and the queue's counts together, and with
 * --visibility-timeout it still runs for the counts alone.
 *
 * With `redrive` (a failure destination is set), the same read also takes the queue's RedrivePolicy, whose
 * maxReceiveCount says which receive is a message's last (src/settle/failure-destination.ts), and keeps it
 * current, with --visibility-timeout too.
 *
 * Thousands of queues: a refresh reads REREADS_AT_ONCE queues at a time (10,000 at once would open 10,000 sockets
 * beside the 10,000 long polls), and a queue that is `quiet` (its long poll came back empty and nothing was read
 * from it since, src/receive/idle-polls.ts) is read every QUIET_EVERY refreshes only: SQS just said nothing is
 * visible in it, and the re-read would cost an idle queue one call a minute beside its three polls. Its other
 * counts (in flight for other consumers, delayed) and its settings then lag by up to QUIET_EVERY refreshes.
 */
/** Attribute re-reads on their way at once. */
const REREADS_AT_ONCE = 16;
/** A quiet queue is re-read at every QUIET_EVERY-th refresh (the first included). */
export const QUIET_EVERY = 5;

export class QueueVisibility {
  readonly #lookup: Pick<QueueLookup, 'queueAttributes'> | undefined;
  readonly #logger: Logger;
  readonly #overridden: boolean;
  readonly #current: Map<ResolvedQueue, number>;
  readonly #onBacklog: ((queue: ResolvedQueue, counts: BacklogCounts) => void) | undefined;
  /** What each re-read asks for; empty: nothing to re-read. */
  readonly #names: readonly string[];
  readonly #redrive: boolean;
  readonly #maxReceives: Map<ResolvedQueue, number | undefined>;
  readonly #quiet: ((queue: ResolvedQueue) => boolean) | undefined;
  /** Refreshes made: which ones read the quiet queues. */
  #refreshes = 0;

  /**
   * `overrideSec`: --visibility-timeout. It is applied once, where the queues are resolved (resolveQueues in
   * src/core/queue.ts), so the queues hold it already; here it only says that there is nothing to re-read.
   * `lookup` reads the queues' attributes; without it, or with an override, nothing is ever re-read.
   */
  constructor(
    queues: readonly ResolvedQueue[],
    overrideSec: number | undefined,
    deps: {
      readonly lookup?: Pick<QueueLookup, 'queueAttributes'> | undefined;
      readonly logger: Logger;
      /** The backlog gauges' counts, from every re-read; undefined: the counts are not read. */
      readonly onBacklog?: ((queue: ResolvedQueue, counts: BacklogCounts) => void) | undefined;
      /** Re-read each queue's RedrivePolicy too (a failure destination is set). */
      readonly redrive?: boolean;
      /** Whether the queue's last long poll came back empty, with nothing read from it since (Receiver.quietQueue). */
      readonly quiet?: ((queue: ResolvedQueue) => boolean) | undefined;
    },
  ) {
    this.#lookup = deps.lookup;
    this.#logger = deps.logger;
    this.#overridden = overrideSec !== undefined;
    this.#current = new Map(queues.map((q) => [q, q.visibilityTimeoutSec]));
    this.#onBacklog = deps.onBacklog;
    this.#redrive = deps.redrive ?? false;
    this.#quiet = deps.quiet;
    this.#maxReceives = new Map(queues.map((q) => [q, q.maxReceiveCount]));
    this.#names = [
      ...(this.#overridden ? [] : ['VisibilityTimeout']),
      ...(this.#onBacklog ? BACKLOG_ATTRIBUTES : []),
      ...(this.#redrive ? ['RedrivePolicy'] : []),
    ];
  }

  /**
   * The route's queues from now on (Dispatcher.setQueues): a queue that joined is re-read from the next refresh
   * with what it was resolved with; one that left is no longer re-read. A queue that stays keeps what was read.
   */
  setQueues(queues: readonly ResolvedQueue[]): void {
    const byName = new Map([...this.#current.keys()].map((q) => [q.name, q]));
    const next = new Set(queues.map((q) => q.name));
    for (const [name, queue] of byName) {
      if (next.has(name)) continue;
      this.#current.delete(queue);
      this.#maxReceives.delete(queue);
    }
    for (const queue of queues) {
      const before = byName.get(queue.name);
      if (before === queue) continue;
      this.#current.set(queue, before !== undefined ? this.timeoutSec(before) : queue.visibilityTimeoutSec);
      this.#maxReceives.set(queue, before !== undefined ? this.maxReceiveCount(before) : queue.maxReceiveCount);
      if (before !== undefined) {
        this.#current.delete(before);
        this.#maxReceives.delete(before);
      }
    }
  }

  /** The maxReceiveCount of the queue's RedrivePolicy as last read; undefined: it has none. */
  maxReceiveCount(queue: ResolvedQueue): number | undefined {
    return this.#maxReceives.has(queue) ? this.#maxReceives.get(queue) : queue.maxReceiveCount;
  }

  /** The visibility timeout to state on the next receive from `queue`, seconds. */
  timeoutSec(queue: ResolvedQueue): number {
    return this.#current.get(queue) ?? queue.visibilityTimeoutSec;
  }

  /**
   * Re-reads the queues' VisibilityTimeout (not with --visibility-timeout), backlog counts and RedrivePolicy (with
   * a failure destination) once: every queue that is not quiet, and every QUIET_EVERY-th time the quiet ones too;
   * never throws.
   */
  async refresh(stop?: AbortSignal): Promise<void> {
    const lookup = this.#lookup;
    if (this.#names.length === 0 || lookup === undefined) return;
    const all = this.#refreshes++ % QUIET_EVERY === 0;
    const due = [...this.#current.keys()].filter((queue) => all || !(this.#quiet?.(queue) ?? false));
    await eachBounded(due, REREADS_AT_ONCE, async (queue) => {
      if (stop?.aborted) return;
      const signal = withDeadline(CALL_DEADLINE_MS, stop);
      try {
        const attrs = await lookup.queueAttributes(queue.url, this.#names, signal);
        const counts = this.#onBacklog && backlogOf(attrs);
        if (counts) this.#onBacklog?.(queue, counts);
        if (this.#redrive) this.#redriveRead(queue, attrs['RedrivePolicy']);
        if (this.#overridden) return;
        const toSec = Number(attrs['VisibilityTimeout']);
        const fromSec = this.timeoutSec(queue);
        if (!Number.isInteger(toSec) || toSec < 0 || toSec === fromSec) return;
        this.#current.set(queue, toSec);
        this.#logger.info(
          { queue: queue.name, fromSec, toSec },
          "the queue's visibility timeout changed; receives from now on state it, leases already open keep theirs",
        );
      } catch (err) {
        if (stop?.aborted) return;
        const e = callErrorOf(err);
        this.#logger.warn(
          { queue: queue.name, err: { code: e.code, message: e.message } },
          "could not re-read the queue's visibility timeout; receives keep stating the last one read",
        );
      }
    });
  }

  #redriveRead(queue: ResolvedQueue, policy: string | undefined): void {
    const to = maxReceiveCountOf(policy);
    const from = this.maxReceiveCount(queue);
    if (to === from) return;
    this.#maxReceives.set(queue, to);
    this.#logger.info(
      { queue: queue.name, fromMaxReceiveCount: from ?? null, toMaxReceiveCount: to ?? null },
      "the queue's redrive policy changed; its failure destination follows the new maxReceiveCount",
    );
  }

  /** Re-reads every `periodMs` until `stop` aborts; at once first when there are backlog gauges to fill. */
  async run(periodMs: number, stop: AbortSignal): Promise<void> {
    if (this.#names.length === 0 || this.#lookup === undefined) return;
    if (this.#onBacklog) await this.refresh(stop);
    while (!stop.aborted) {
      await sleep(periodMs, stop);
      if (stop.aborted) return;
      await this.refresh(stop);
    }
  }
}
