import type { Message } from '@aws-sdk/client-sqs';
import { sleep } from '../util/backoff.ts';
import { firstReceiveMax } from './batch-window.ts';
import { IdleLoops, LIMIT_RECHECK_MS, type IdleDeps, type Received } from './idle-loops.ts';
import type { PollShare } from './idle-polls.ts';
import { QueueHealth } from './queue-health.ts';
import { QueueSlots, type QueueLimit } from './queue-limits.ts';
import { drawOrder, type OrderMode, type QueueList } from './queue-order.ts';
import { SlotHandover } from './slot-handover.ts';
import { WaitQueue } from '../util/wait-queue.ts';
import type { MessageSource, ResolvedQueue } from '../core/queue.ts';

/**
 * Cold queues (no poll in flight, nothing read from them last time: src/receive/idle-polls.ts) a pass reads at most,
 * in its order. Their polls come round within --poll-for (IdlePolls.waitSec), so reading them is only a head start;
 * reading every one cost a sweep per pass when the queues outnumbered the polls: with `ulimit -n 256`, 1,000 queues
 * and --concurrency 10, 200 messages on one queue took 42 s and 86,446 ReceiveMessage (issue 42). Ten keeps a strict
 * route's highest queues read first and a pass at most eleven receives.
 */
const COLD_READS_PER_PASS = 10;

/** The route's receive options (src/config/routes.ts reads them), with its queues resolved. */
export type ReceiverOptions = {
  /** --batch-size: records per invocation. */
  readonly batchSize: number;
  /** --poll-for: the long poll's wait, in seconds. */
  readonly pollForSec: number;
  /** --sleep: the pause after an empty receive, in seconds. */
  readonly sleepSec: number;
  /** --visibility-timeout; undefined: each queue's own. */
  readonly visibilityTimeoutSec?: number | undefined;
  /** --concurrency: worker loops. */
  readonly concurrency?: number | undefined;
  readonly queues: readonly ResolvedQueue[];
  readonly orderMode: OrderMode;
  /**
   * The visibility timeout to state on a receive from this queue (src/dispatch/queue-visibility.ts); without it
   * --visibility-timeout, else the queue's timeout read at start-up. Every receive states one, so SQS applies
   * the timeout that the lease of what it returns assumes, never the queue's current one behind our back.
   */
  readonly visibilityOf?: ((queue: ResolvedQueue) => number) | undefined;
  /** Per-queue limits, by index in `queues`; without them, none. Worker loops (`concurrency`) count for minConcurrency reservations. */
  readonly limits?: readonly (QueueLimit | undefined)[] | undefined;
  /** Idle polls in flight at most: the route's share of the socket budget (src/daemon/socket-budget.ts); default: one per queue. */
  readonly pollShare?: PollShare | undefined;
  /**
   * Whether the polls start with the route's first pass (the daemon's way: the other loops' start-up passes then
   * read no polled queue) instead of when the first loop goes idle (default, for the tests of a pass).
   */
  readonly pollsFromStart?: boolean | undefined;
  /** Batches that may wait for a loop before no new poll is sent (src/receive/ready-set.ts); default `concurrency`. */
  readonly readyBound?: number | undefined;
};

export type { Received };

export interface ReceiverDeps<L = unknown> extends IdleDeps<L> {
  readonly source: MessageSource;
}

/**
 * The receive step: picks the queues to try in this iteration's order (strict, weighted or random), skips
 * queues that are backing off after a failed receive, and sleeps when told to. Per-queue health is shared by all
 * loops, so one broken queue never stalls the others.
 *
 * A loop that found every queue empty waits with the other idle loops, which keep one long poll in flight per
 * queue between them, and takes what any of them returns (src/receive/idle-polls.ts says how many polls, and
 * who is handed what).
 *
 * With per-queue limits (QueueSlots), a loop takes a slot of a queue before it receives from it, so it never
 * receives for a queue it may not invoke for; the slot is given back by settled(), or at once when the receive
 * returned nothing. Queues below their reserved minimum are tried first, and a loop that finds every queue at
 * its limit waits for a slot given back or the next rate token.
 *
 * A receive is never aborted, not even by shutdown: SQS may hand messages to a call we abandon, and they
 * would then stay invisible for a whole visibility timeout. Every receive has its own deadline instead
 * (see SqsSdkSource), so no loop waits on a hung call for longer than the poll plus a margin.
 */
export class Receiver<L = unknown> {
  #opts: ReceiverOptions;
  readonly #deps: ReceiverDeps<L>;
  #list: QueueList;
  /** Each queue's index, by name: stable for the receiver's life (setQueues). */
  readonly #byName: Map<string, number>;
  readonly #health: QueueHealth;
  readonly #slots: QueueSlots;
  /** Who takes a queue's slot when one frees (src/receive/slot-handover.ts). */
  readonly #handover: SlotHandover;
  /** Loops that found no queue to read (each backing off or another replica's): a change of the fleet's view wakes them. */
  readonly #unserved = new WaitQueue();
  /** The idle loops and their polls (src/receive/idle-loops.ts). */
  readonly #idle: IdleLoops<L>;
  /**
   * Before the first loop goes idle (no poll yet): the queues a start-up pass found empty. The other loops'
   * start-up passes skip them, so the start-up reads each idle queue about once, not once per loop (with 1,000
   * queues and ten loops, 10,000 short receives that ran for tens of seconds on a local SQS).
   */
  readonly #emptyAtStart = new Set<number>();
  /** The route's queues now, retired ones left out (setQueues). */
  #current: readonly ResolvedQueue[];

  constructor(options: ReceiverOptions, deps: ReceiverDeps<L>) {
    this.#opts = options;
    this.#current = options.queues;
    this.#byName = new Map(options.queues.map((q, i) => [q.name, i]));
    this.#deps = deps;
    this.#list = { mode: options.orderMode, queues: options.queues.map((q) => ({ ref: q.name, weight: q.weight })) };
    this.#health = new QueueHealth(options.queues, deps);
    this.#slots = new QueueSlots(
      options.queues.map((_, i) => options.limits?.[i]),
      options.concurrency ?? 1,
      deps.now(),
    );
    this.#idle = new IdleLoops<L>(
      {
        ...deps,
        queues: () => this.#opts.queues,
        indexOf: (queue) => this.#indexOf(queue),
        list: () => this.#list,
        visibilityOf: (queue) => this.#visibilityOf(queue),
        batchSize: options.batchSize,
        pollForSec: options.pollForSec,
        sleepSec: options.sleepSec,
        health: this.#health,
        slots: this.#slots,
      },
      { pollShare: options.pollShare, readyBound: options.readyBound ?? options.concurrency ?? 1 },
    );
    // An idle loop may take a batch of the queue that waits, and the queue may be polled again.
    this.#handover = new SlotHandover(
      this.#slots,
      options.queues.length,
      () => deps.now(),
      () => {
        this.#idle.serve();
        this.#idle.poll();
      },
    );
  }

  /**
   * A batch received from `queue` by next() is settled: its loop gives the queue's slot back (`parked`: the
   * batch ended while its slot was parked).
   */
  settled(queue: ResolvedQueue, parked = false): void {
    const index = this.#indexOf(queue);
    if (index >= 0) this.#handover.settled(index, parked);
  }

  /**
   * A batch of `queue` waits between Invoke attempts: its slot is free for healthy batches meanwhile
   * (src/receive/queue-limits.ts says why and how many may wait).
   */
  park(queue: ResolvedQueue): void {
    const index = this.#indexOf(queue);
    if (index >= 0) this.#handover.park(index);
  }

  /** A parked batch takes its queue's slot back before its next attempt, ahead of new receives; never aborted. */
  async unpark(queue: ResolvedQueue): Promise<void> {
    const index = this.#indexOf(queue);
    if (index >= 0) await this.#handover.unpark(index);
  }

  /** Loops waiting for a slot now (for tests). */
  get slotWaiters(): number {
    return this.#handover.waiters;
  }

  /**
   * One pass: short receives on the healthy queues in this iteration's order; if all were empty, the loop waits
   * with the other idle loops for what their long polls return. Returns undefined when nothing was received,
   * after any --sleep or back-off wait. `stop` ends waits and prevents new receives; it never cuts a receive
   * short. `onIdle` is told when the loop starts to wait for a message, which may take as long as the queues
   * stay empty (for liveness: the polls it waits on have deadlines of their own).
   */
  async next(stop: AbortSignal, onIdle?: () => void): Promise<Received<L> | undefined> {
    const first = this.#startUp(stop);
    const now = this.#deps.now();
    const serves = this.#deps.serves;
    const queues = this.#opts.queues;
    // A batch that waits is taken whoever serves its queue now; a queue another replica polls is not read.
    const drawn = drawOrder(this.#list, this.#deps.random).filter(
      (i) => this.#idle.waiting(i) || (this.#health.retryAt(i) <= now && (serves === undefined || serves(queues[i]!))),
    );
    if (drawn.length === 0) {
      // Every queue backs off: look again when the first back-off ends. A healthy queue another replica polls (its
      // back-off over, so the first one is now or past) or no queue at all (every one left the route): within
      // LIMIT_RECHECK_MS, as a loop at its limits does. Either way at once when the fleet's view changes. Never a
      // wait of 0: a loop of a replica that owned none of its queues came straight back, and its loops, each
      // resolving at once, starved the event loop (no heartbeat, no probe answered: the replica froze).
      const retryAt = this.#health.firstRetryAt();
      await this.#unserved.wait(stop, retryAt > now && retryAt !== Infinity ? retryAt - now : LIMIT_RECHECK_MS);
      return undefined;
    }
    const order = this.#slots.prioritise(drawn, now);
    if (!order.some((i) => this.#slots.admits(i, now))) {
      await this.#handover.waitForSlot(order, stop);
      return undefined;
    }
    const received = await this.#pass(order, first, stop);
    if (received !== undefined || stop.aborted) return received;
    return this.#idleHandOff(order, stop, onIdle);
  }

  /**
   * The start-up, before a pass: returns whether this is the route's first pass, which starts the polls
   * (pollsFromStart). Once a loop went idle every queue that may be polled has a poll, so a pass reads only the
   * queues without one (hot, resting, or beyond the poll budget). With pollsFromStart that begins with the route's
   * first pass, which still reads every queue in order (a strict route serves its highest queue first from the
   * start): the other loops' start-up passes then read none, not a thousand queues each.
   */
  #startUp(stop: AbortSignal): boolean {
    let first = false;
    if (this.#opts.pollForSec > 0 && this.#opts.pollsFromStart === true && !this.#idle.started && !stop.aborted) {
      first = true;
      this.#idle.start(stop);
      this.#idle.poll();
    }
    if (this.#idle.started && this.#emptyAtStart.size > 0) this.#emptyAtStart.clear();
    return first;
  }

  /**
   * The pass over `order`: at each queue's turn, takes the batch of it that waits in the ready set, or receives
   * from it at once. Until the idle loops start (a start-up pass), a queue another loop's start-up pass found
   * empty is skipped; after, at most COLD_READS_PER_PASS cold queues are read. Undefined: every queue it read was empty, or `stop` came.
   */
  async #pass(order: readonly number[], first: boolean, stop: AbortSignal): Promise<Received<L> | undefined> {
    const { queues, batchSize, pollForSec } = this.#opts;
    const max = firstReceiveMax(batchSize);
    let coldReads = 0;
    for (const index of order) {
      if (stop.aborted) return undefined;
      // A batch an idle poll returned waits for a loop: it is taken at its queue's turn, as a receive would be.
      if (this.#idle.waiting(index)) {
        if (this.#slots.acquire(index, this.#deps.now())) return this.#idle.take(index);
        continue;
      }
      // A queue with a poll in flight has nothing to read: its poll answers the moment a message arrives.
      if ((!first && this.#idle.covered(index)) || this.#health.retryAt(index) > this.#deps.now()) continue;
      const starting = pollForSec > 0 && !this.#idle.started;
      if (starting && this.#emptyAtStart.has(index)) continue;
      // A cold queue's turn for a poll comes round within --poll-for: a pass reads only the first few in its order.
      if (!first && !starting && this.#idle.cold(index) && coldReads++ >= COLD_READS_PER_PASS) continue;
      if (!this.#slots.acquire(index, this.#deps.now())) continue;
      const visibilityTimeoutSec = this.#visibilityOf(queues[index]!);
      const messages = (await this.#health.receive(index, { max, waitSec: 0, visibilityTimeoutSec, startBefore: stop })) ?? [];
      // A full receive keeps the queue hot (read by passes, not polled); a short one lets it be polled.
      this.#idle.read(index, messages.length, max);
      if (starting && messages.length === 0 && this.#health.retryAt(index) <= this.#deps.now()) this.#emptyAtStart.add(index);
      if (messages.length > 0) {
        return { queue: queues[index]!, messages, visibilityTimeoutSec };
      }
      this.#handover.giveBack(index);
    }
    return undefined;
  }

  /**
   * The idle hand-off, after a pass over `order` found nothing: the loop waits with the other idle loops for what
   * their polls return (without polls, it sleeps --sleep), unless every queue is backing off (the next pass waits
   * for the first one) or at its limits (it waits for a slot).
   */
  async #idleHandOff(order: readonly number[], stop: AbortSignal, onIdle: (() => void) | undefined): Promise<Received<L> | undefined> {
    const healthy = order.filter((i) => this.#health.retryAt(i) <= this.#deps.now());
    // Every queue failed: the next pass waits for the first one's back-off instead of polling or sleeping.
    if (healthy.length === 0) return undefined;
    const open = healthy.filter((i) => this.#slots.admits(i, this.#deps.now()));
    if (open.length === 0) {
      await this.#handover.waitForSlot(healthy, stop);
      return undefined;
    }
    if (this.#opts.pollForSec > 0) {
      onIdle?.();
      const end = await this.#idle.wait(stop);
      return end.kind === 'received' ? end.received : undefined;
    }
    await sleep(this.#opts.sleepSec * 1000, stop);
    return undefined;
  }

  /**
   * How many queues the route receives from now: the one count of them, which the idle loops tell the route's poll
   * share (src/daemon/socket-budget.ts) and the Dispatcher gives the metrics' per-queue policy.
   */
  get queueCount(): number {
    return this.#current.length;
  }

  /** The route's queues now, retired ones left out. */
  get queues(): readonly ResolvedQueue[] {
    return this.#current;
  }

  /**
   * The fleet's view changed (src/fleet/fleet-member.ts): queues this replica serves now get their polls at once,
   * and the loops that found no queue to serve look again.
   */
  servesChanged(): void {
    while (this.#unserved.wakeOne());
    this.#idle.poll();
  }

  /** The queues a receive of which came back full within the last `withinMs`: what a fleet member advertises as busy. */
  busyQueues(withinMs: number): ResolvedQueue[] {
    const since = this.#deps.now() - withinMs;
    return this.#idle.fullSince(since).map((i) => this.#opts.queues[i]!);
  }

  /** Whether at least one queue is not backing off after a failed receive. */
  get anyHealthy(): boolean {
    return this.#health.anyHealthy;
  }

  /** Resolves once no receive is on its way (QueueHealth.quiet()). */
  quiet(): Promise<void> {
    return this.#health.quiet();
  }

  /** Whether `queue`'s last long poll came back empty, with nothing read from it since (IdlePolls.quiet). */
  quietQueue(queue: ResolvedQueue): boolean {
    const index = this.#indexOf(queue);
    return index >= 0 && this.#idle.quiet(index);
  }

  /**
   * A parked batch waits for an adaptive place, which idle loops may hold: an idle one goes back to its loop,
   * which gives the place up; without one, the next poll that ends empty tries again (placeWanted).
   */
  yieldIdle(): void {
    this.#idle.yieldIdle();
  }

  /**
   * After the stop, once the loops have ended: resolves when no idle poll is on its way and every batch that
   * waited (or arrived since) has been released.
   */
  drain(): Promise<void> {
    return this.#idle.drain();
  }

  /**
   * A loop starts (true) or ends (false) gathering a batch of `queue` over a batching window: meanwhile the queue
   * gets no idle poll, whose answer would make a second batch beside the one being gathered.
   */
  gathering(queue: ResolvedQueue, on: boolean): void {
    // By name, as everywhere: discovery replaces a queue's object when its weight tag changes mid-window.
    const index = this.#indexOf(queue);
    if (index >= 0) this.#idle.gathering(index, on);
  }

  /** Idle loops waiting now (for tests). */
  get idleLoops(): number {
    return this.#idle.members;
  }

  /**
   * One more receive from `queue` for the batch a loop is gathering over a batching window: the loop keeps the
   * queue's slot, and the queue's health is the one next() keeps (a long poll counts as covering the queue).
   * Undefined when the receive failed or the queue is backing off; [] when `stop` aborted before it was sent.
   * `visibilityTimeoutSec` is the batch's (its lease's), so every message of one batch has the same.
   */
  async more(
    queue: ResolvedQueue,
    max: number,
    waitSec: number,
    stop: AbortSignal,
    visibilityTimeoutSec = this.#visibilityOf(queue),
  ): Promise<Message[] | undefined> {
    const index = this.#indexOf(queue);
    if (index < 0 || this.#health.retryAt(index) > this.#deps.now()) return undefined;
    return this.#health.receive(index, { max, waitSec, visibilityTimeoutSec, startBefore: stop });
  }

  /**
   * The route's queues change while it runs (queues found by prefix or tag; `limits` by position in `queues`). A
   * queue keeps its index, and with it its health, slots and idle poll, for the receiver's life: what is in flight
   * for a queue that left (a receive, a poll, a batch holding its slot) ends as it would have, and a queue that
   * comes back takes its index back. A queue that left is retired: never drawn, polled or received from again,
   * and its limits reserve no loop. A retired queue costs its index's few entries, so a route that sees N
   * distinct queues over its life keeps N.
   */
  setQueues(queues: readonly ResolvedQueue[], limits: readonly (QueueLimit | undefined)[]): void {
    const now = this.#deps.now();
    const all = [...this.#opts.queues];
    const allLimits = all.map((_, i) => this.#opts.limits?.[i]);
    const current = new Set<number>();
    queues.forEach((queue, k) => {
      let i = this.#byName.get(queue.name);
      if (i === undefined) {
        i = all.push(queue) - 1;
        this.#byName.set(queue.name, i);
        this.#handover.grow();
      }
      all[i] = queue;
      allLimits[i] = limits[k];
      current.add(i);
    });
    all.forEach((queue, i) => {
      const active = current.has(i);
      if (!active) allLimits[i] = undefined;
      this.#health.set(i, queue, !active);
      this.#slots.set(i, allLimits[i], now);
    });
    this.#opts = { ...this.#opts, queues: all, limits: allLimits };
    // A retired queue weighs nothing: it is drawn last, and skipped as never due. Equal weights are a random
    // order, as in --queues, drawn in O(n) (a weighted draw sorts: O(n log n)).
    const equal = queues.every((q) => q.weight === queues[0]?.weight);
    const mode = this.#opts.orderMode === 'strict' ? 'strict' : equal ? 'random' : 'weighted';
    this.#list = { mode, queues: all.map((q, i) => ({ ref: q.name, weight: current.has(i) ? q.weight : 0 })) };
    this.#current = [...current].map((i) => all[i]!);
    // Idle loops poll the queues that joined.
    this.#idle.grow(all.length, current);
  }

  #indexOf(queue: ResolvedQueue): number {
    return this.#byName.get(queue.name) ?? -1;
  }

  #visibilityOf(queue: ResolvedQueue): number {
    return this.#opts.visibilityOf?.(queue) ?? this.#opts.visibilityTimeoutSec ?? queue.visibilityTimeoutSec;
  }
}
