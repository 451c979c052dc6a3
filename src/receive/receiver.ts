import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { sleep } from '../util/backoff.ts';
import { firstReceiveMax } from './batch-window.ts';
import { IdlePolls, RAMP_UP_WAKES, UNCAPPED, type Member, type PollShare } from './idle-polls.ts';
import { ReadySet } from './ready-set.ts';
import { QueueHealth } from './queue-health.ts';
import { QueueSlots, type QueueLimit } from './queue-limits.ts';
import { drawOrder, type OrderMode, type QueueList, type Random } from './queue-order.ts';
import { WaitQueue } from '../util/wait-queue.ts';
import type { MessageSource, ResolvedQueue } from '../core/queue.ts';

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
  /** Idle polls in flight at most: the route's share of the socket budget (src/daemon/poll-budget.ts); default: one per queue. */
  readonly pollShare?: PollShare | undefined;
  /**
   * Whether the polls start with the route's first pass (the daemon's way: the other loops' start-up passes then
   * read no polled queue) instead of when the first loop goes idle (default, for the tests of a pass).
   */
  readonly pollsFromStart?: boolean | undefined;
  /** Batches that may wait for a loop before no new poll is sent (src/receive/ready-set.ts); default `concurrency`. */
  readonly readyBound?: number | undefined;
};

/**
 * A batch an idle poll returned, held while it waits for a loop: `lease` keeps it invisible (the dispatcher's
 * visibility lease, which the batch keeps once a loop takes it), `release` makes it visible again at once (a stop).
 */
export interface HeldBatch<L> {
  readonly lease: L;
  release(): Promise<void>;
}

export interface ReceiverDeps<L = unknown> {
  readonly source: MessageSource;
  readonly logger: Logger;
  readonly random: Random;
  /** A monotonic clock (src/util/clock.ts): back-offs and rate tokens must not stall when the wall clock steps back. */
  readonly now: () => number;
  /** Whether the route's function is paused (src/invoke/function-gate.ts): the idle loops send no poll meanwhile. */
  readonly paused?: (() => boolean) | undefined;
  /** Whether a parked batch waits for an adaptive place (src/invoke/concurrency-gate.ts) that an idle loop may hold. */
  readonly placeWanted?: (() => boolean) | undefined;
  /** Leases what an idle poll returned, from its answer on (src/dispatch/parts.ts); without it, nothing holds a waiting batch. */
  readonly hold?: ((queue: ResolvedQueue, messages: Message[], visibilityTimeoutSec: number) => HeldBatch<L>) | undefined;
}

export interface Received<L = unknown> {
  readonly queue: ResolvedQueue;
  readonly messages: Message[];
  /** The VisibilityTimeout the receive stated: what SQS applied to these messages. */
  readonly visibilityTimeoutSec: number;
  /** The lease made when an idle poll answered (ReceiverDeps.hold); undefined: the loop leases the batch itself. */
  readonly lease?: L | undefined;
}

/** A batch in the ready set, and how it is released at a stop. */
interface Waiting<L> {
  readonly received: Received<L>;
  readonly release: (() => Promise<void>) | undefined;
}

/** A loop that finds every queue at its limit looks again after this long at the latest (a release wakes it sooner). */
const LIMIT_RECHECK_MS = 1_000;

/**
 * Idle polls sent in one turn of the event loop at most; the rest follow on the next turns. Signing and sending
 * 10,000 polls at once (every queue's at start-up) would hold the loop for a second or more, and the answers and
 * the loops' Invokes with it. More polls than this chosen at once also get their first wait drawn
 * (IdlePolls.waitSec), so that they do not end together.
 */
const POLLS_PER_TURN = 250;

/** How an idle loop's wait ended: handed a batch, or sent back to its loop at once. */
type IdleEnd<L> = { kind: 'received'; received: Received<L> } | { kind: 'now' };

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
 * its limit waits for a release or the next rate token.
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
  /** Loops waiting for a slot to be released; each release wakes one, which looks again. */
  readonly #slotWaiters = new WaitQueue();
  /** Per queue: parked batches taking their slot back, served before new receives. */
  readonly #unparkLines: WaitQueue[];
  /** The idle loops and the polls, one per queue at most. */
  readonly #idle: IdlePolls;
  readonly #share: PollShare;
  /** Batches idle polls returned while no loop was free, by queue index. */
  readonly #ready: ReadySet<Waiting<L>>;
  /** Idle polls on their way (a drain waits for them), and releases of waiting batches at the stop. */
  readonly #polls = new Set<Promise<void>>();
  readonly #releases = new Set<Promise<void>>();
  /**
   * Before the first loop goes idle (no poll yet): the queues a start-up pass found empty. The other loops'
   * start-up passes skip them, so the start-up reads each idle queue about once, not once per loop (with 1,000
   * queues and ten loops, 10,000 short receives that ran for tens of seconds on a local SQS).
   */
  readonly #emptyAtStart = new Set<number>();
  /** Queues a loop is gathering a batch of (batching window), by index: how many loops. */
  readonly #gathering = new Map<number, number>();
  /** How each waiting idle loop is answered. */
  readonly #members = new Map<Member, (end: IdleEnd<L>) => void>();
  #nextMember: Member = 0;
  /** The idle loops' stop: a poll still waiting to be sent (shared receives) is not sent after it, none is sent after it. */
  #idleStop: AbortSignal | undefined;
  /** Looks again for queues to poll when one has rested, recovered or may get a slot (a release also looks). */
  #recheck: NodeJS.Timeout | undefined;

  constructor(options: ReceiverOptions, deps: ReceiverDeps<L>) {
    this.#opts = options;
    this.#byName = new Map(options.queues.map((q, i) => [q.name, i]));
    this.#deps = deps;
    this.#list = { mode: options.orderMode, queues: options.queues.map((q) => ({ ref: q.name, weight: q.weight })) };
    this.#health = new QueueHealth(options.queues, deps);
    this.#slots = new QueueSlots(
      options.queues.map((_, i) => options.limits?.[i]),
      options.concurrency ?? 1,
      deps.now(),
    );
    this.#unparkLines = options.queues.map(() => new WaitQueue());
    this.#share = options.pollShare ?? UNCAPPED;
    if (options.pollForSec > 0) this.#share.set(options.queues.length);
    this.#idle = new IdlePolls(options.queues.length, options.sleepSec * 1000, () => this.#share.max());
    this.#ready = new ReadySet(Math.max(1, options.readyBound ?? options.concurrency ?? 1));
  }

  /**
   * A batch received from `queue` by next() is settled: its loop gives the queue's slot back (`parked`: the
   * batch ended while its slot was parked).
   */
  settled(queue: ResolvedQueue, parked = false): void {
    if (!this.#slots.active) return;
    const index = this.#indexOf(queue);
    if (index < 0) return;
    this.#slots.release(index, true, this.#deps.now(), parked);
    this.#handOver(index);
  }

  /**
   * A batch of `queue` waits between Invoke attempts: its slot is free for healthy batches meanwhile
   * (src/receive/queue-limits.ts says why and how many may wait).
   */
  park(queue: ResolvedQueue): void {
    const index = this.#indexOf(queue);
    if (!this.#slots.active || index < 0) return;
    this.#slots.park(index);
    this.#handOver(index);
  }

  /** A parked batch takes its queue's slot back before its next attempt, ahead of new receives; never aborted. */
  async unpark(queue: ResolvedQueue): Promise<void> {
    const index = this.#indexOf(queue);
    if (!this.#slots.active || index < 0) return;
    const line = this.#unparkLines[index]!;
    if (line.size === 0 && this.#slots.unpark(index)) return;
    // Woken means the slot is ours: #handOver() took it for us.
    await line.wait();
  }

  #release(index: number): void {
    if (!this.#slots.active) return;
    this.#slots.release(index, false, this.#deps.now());
    this.#handOver(index);
  }

  /**
   * A slot of queue `index` is free: a parked batch of that queue takes it first (handed over, counted here);
   * otherwise one loop waiting to receive wakes and looks again. One wake per release: the others keep waiting
   * (and look again on their own after LIMIT_RECHECK_MS), so a release costs O(1) however many loops wait.
   */
  #handOver(index: number): void {
    const line = this.#unparkLines[index]!;
    if (line.size > 0 && this.#slots.unpark(index)) {
      line.wakeOne();
      return;
    }
    this.#slotWaiters.wakeOne();
    // An idle loop may take a batch of the queue that waits, and the queue may be polled again.
    this.#serve();
    this.#pollIdle();
  }

  /** Loops waiting for a slot now (for tests). */
  get slotWaiters(): number {
    return this.#slotWaiters.size;
  }

  /** Waits until a slot is released, the next rate token of one of `queues` is due, or LIMIT_RECHECK_MS. */
  async #waitForSlot(queues: readonly number[], stop: AbortSignal): Promise<void> {
    const now = this.#deps.now();
    const tokenAt = this.#slots.nextTokenAt(queues, now);
    await this.#slotWaiters.wait(stop, Math.min(LIMIT_RECHECK_MS, (tokenAt ?? Infinity) - now));
  }

  /**
   * One pass: short receives on the healthy queues in this iteration's order; if all were empty, the loop waits
   * with the other idle loops for what their long polls return. Returns undefined when nothing was received,
   * after any --sleep or back-off wait. `stop` ends waits and prevents new receives; it never cuts a receive
   * short. `onIdle` is told when the loop starts to wait for a message, which may take as long as the queues
   * stay empty (for liveness: the polls it waits on have deadlines of their own).
   */
  async next(stop: AbortSignal, onIdle?: () => void): Promise<Received<L> | undefined> {
    const { queues, batchSize, pollForSec, sleepSec } = this.#opts;
    const max = firstReceiveMax(batchSize);
    // Once a loop went idle every queue that may be polled has a poll, so a pass reads only the queues without one
    // (hot, resting, or beyond the poll budget). With pollsFromStart that begins with the route's first pass,
    // which still reads every queue in order (a strict route serves its highest queue first from the start): the
    // other loops' start-up passes then read none, not a thousand queues each.
    let first = false;
    if (pollForSec > 0 && this.#opts.pollsFromStart === true && this.#idleStop === undefined && !stop.aborted) {
      first = true;
      this.#watchStop(stop);
      this.#pollIdle();
    }
    const now = this.#deps.now();
    const drawn = drawOrder(this.#list, this.#deps.random).filter((i) => this.#ready.has(i) || this.#health.retryAt(i) <= now);
    if (drawn.length === 0) {
      const retryAt = this.#health.firstRetryAt();
      // No queue at all (every one left the route): look again as a loop at its limits does.
      await sleep(retryAt === Infinity ? LIMIT_RECHECK_MS : retryAt - now, stop);
      return undefined;
    }
    const order = this.#slots.prioritise(drawn, now);
    if (!order.some((i) => this.#slots.admits(i, now))) {
      await this.#waitForSlot(order, stop);
      return undefined;
    }
    for (const index of order) {
      if (stop.aborted) return undefined;
      // A batch an idle poll returned waits for a loop: it is taken at its queue's turn, as a receive would be.
      if (this.#ready.has(index)) {
        if (this.#slots.acquire(index, this.#deps.now())) return this.#takeWaiting(index);
        continue;
      }
      // A queue with a poll in flight has nothing to read: its poll answers the moment a message arrives.
      if ((!first && this.#idle.covered(index)) || this.#health.retryAt(index) > this.#deps.now()) continue;
      const starting = pollForSec > 0 && this.#idleStop === undefined;
      if (starting && this.#emptyAtStart.has(index)) continue;
      if (!this.#slots.acquire(index, this.#deps.now())) continue;
      const visibilityTimeoutSec = this.#visibilityOf(queues[index]!);
      const messages = (await this.#health.receive(index, { max, waitSec: 0, visibilityTimeoutSec, startBefore: stop })) ?? [];
      // A full receive keeps the queue hot (read by passes, not polled); a short one lets it be polled.
      this.#idle.read(index, messages.length, max);
      if (starting && messages.length === 0 && this.#health.retryAt(index) <= this.#deps.now()) this.#emptyAtStart.add(index);
      if (messages.length > 0) {
        // A full receive suggests more are waiting: idle loops come back to read them too.
        if (messages.length >= max) this.#wake(this.#idle.wakeSpares(RAMP_UP_WAKES));
        return { queue: queues[index]!, messages, visibilityTimeoutSec };
      }
      this.#release(index);
    }
    if (stop.aborted) return undefined;
    const healthy = order.filter((i) => this.#health.retryAt(i) <= this.#deps.now());
    // Every queue failed: the next pass waits for the first one's back-off instead of polling or sleeping.
    if (healthy.length === 0) return undefined;
    const open = healthy.filter((i) => this.#slots.admits(i, this.#deps.now()));
    if (open.length === 0) {
      await this.#waitForSlot(healthy, stop);
      return undefined;
    }
    if (pollForSec > 0) {
      onIdle?.();
      const end = await this.#waitIdle(stop);
      return end.kind === 'received' ? end.received : undefined;
    }
    await sleep(sleepSec * 1000, stop);
    return undefined;
  }

  /**
   * A parked batch waits for an adaptive place, which idle loops may hold: an idle one goes back to its loop,
   * which gives the place up; without one, the next poll that ends empty tries again (placeWanted).
   */
  yieldIdle(): void {
    this.#wake(this.#idle.wakeSpares(1));
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

  /** Idle loops waiting now (for tests). */
  get idleLoops(): number {
    return this.#idle.members;
  }

  /** Waits as an idle loop (src/receive/idle-polls.ts) until handed a batch or sent back to its loop. */
  #waitIdle(stop: AbortSignal): Promise<IdleEnd<L>> {
    if (stop.aborted) return Promise.resolve({ kind: 'now' });
    const member = this.#nextMember++;
    this.#watchStop(stop);
    return new Promise((resolve) => {
      const onStop = () => {
        this.#idle.leave(member);
        this.#answer(member, { kind: 'now' });
      };
      this.#members.set(member, (end) => {
        stop.removeEventListener('abort', onStop);
        resolve(end);
      });
      stop.addEventListener('abort', onStop, { once: true });
      this.#idle.join(member);
      this.#serve();
      this.#pollIdle();
    });
  }

  /** The idle loops' stop: from then on no poll is sent, and what waits or still arrives is released at once. */
  #watchStop(stop: AbortSignal): void {
    if (this.#idleStop === stop) return;
    this.#idleStop = stop;
    this.#emptyAtStart.clear();
    stop.addEventListener('abort', () => this.#releaseWaiting(), { once: true });
  }

  get #stopping(): boolean {
    return this.#idleStop?.aborted ?? false;
  }

  #answer(member: Member, end: IdleEnd<L>): void {
    const resolve = this.#members.get(member);
    this.#members.delete(member);
    resolve?.(end);
  }

  #wake(members: readonly Member[]): void {
    for (const m of members) this.#answer(m, { kind: 'now' });
  }

  /** Idle loops take the waiting batches, in the queues' order drawn now, while both last. */
  #serve(): void {
    const now = this.#deps.now();
    while (this.#ready.size > 0 && this.#idle.first() !== undefined) {
      const got = this.#ready.take(
        this.#list,
        this.#deps.random,
        (i) => this.#slots.acquire(i, now),
        (order) => this.#slots.prioritise(order, now),
      );
      if (!got) return;
      this.#idle.taken(got.queue);
      const member = this.#idle.first()!;
      this.#idle.leave(member);
      this.#answer(member, { kind: 'received', received: got.batch.received });
    }
  }

  /** A loop's pass reached queue `index`, whose batch waits: it takes it (its slot is taken already). */
  #takeWaiting(index: number): Received<L> {
    const batch = this.#ready.takeQueue(index)!;
    this.#idle.taken(index);
    // The queue's next poll is signed and sent after the taker's Invoke has gone out, not ahead of it.
    setImmediate(() => this.#pollIdle());
    return batch.received;
  }

  /** Sends the polls that are missing: one per queue that may be polled now (src/receive/idle-polls.ts). */
  #pollIdle(): void {
    if (this.#stopping || this.#idleStop === undefined) return;
    const now = this.#deps.now();
    const paused = this.#deps.paused?.() ?? false;
    // A poll takes no slot: what it returns waits for a loop that takes the slot then (ReadySet.take).
    const may = (i: number) => !paused && !this.#gathering.has(i) && this.#health.retryAt(i) <= now && this.#slots.admits(i, now);
    const chosen = this.#idle.toPoll(may, () => this.#ready.full, now);
    this.#sendInTurns(chosen, 0, chosen.length > POLLS_PER_TURN);
    this.#armRecheck(now);
  }

  /**
   * Sends the polls of `chosen` (counted in flight already, so no pass reads their queues meanwhile) from `from`
   * on, POLLS_PER_TURN per turn of the event loop. A drain waits for the turns still to come.
   */
  #sendInTurns(chosen: readonly number[], from: number, spread: boolean): void {
    const to = Math.min(chosen.length, from + POLLS_PER_TURN);
    for (let k = from; k < to; k++) this.#sendIdlePoll(chosen[k]!, spread);
    if (to === chosen.length) return;
    const turn = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#sendInTurns(chosen, to, spread));
    this.#polls.add(turn);
    void turn.finally(() => this.#polls.delete(turn));
  }

  #sendIdlePoll(index: number, spread: boolean): void {
    const { queues, batchSize, pollForSec } = this.#opts;
    const max = firstReceiveMax(batchSize);
    const visibilityTimeoutSec = this.#visibilityOf(queues[index]!);
    const waitSec = spread ? this.#idle.waitSec(index, pollForSec, this.#deps.random) : pollForSec;
    const poll = this.#health
      .receive(index, { max, waitSec, visibilityTimeoutSec, startBefore: this.#idleStop })
      .then((messages) => this.#idlePollEnded(index, messages, max, visibilityTimeoutSec));
    this.#polls.add(poll);
    void poll.finally(() => this.#polls.delete(poll));
  }

  /** `messages` undefined: the poll failed (the queue's health has its back-off). */
  #idlePollEnded(index: number, messages: Message[] | undefined, max: number, visibilityTimeoutSec: number): void {
    const now = this.#deps.now();
    const count = messages?.length ?? 0;
    const failed = messages === undefined || this.#health.retryAt(index) > now;
    this.#idle.ended(index, count, max, failed, now);
    if (messages !== undefined && count > 0) {
      const queue = this.#opts.queues[index]!;
      // Leased from here (the dispatcher's lease): it may wait for a loop.
      const held = this.#deps.hold?.(queue, messages, visibilityTimeoutSec);
      const received: Received<L> = held
        ? { queue, messages, visibilityTimeoutSec, lease: held.lease }
        : { queue, messages, visibilityTimeoutSec };
      const batch: Waiting<L> = { received, release: held ? () => held.release() : undefined };
      if (this.#stopping) {
        this.#idle.taken(index);
        this.#release1(batch);
        return;
      }
      this.#ready.add(index, batch);
      this.#serve();
      // A full poll suggests more are waiting: idle loops come back to read the queue with their passes.
      if (count >= max) this.#wake(this.#idle.wakeSpares(RAMP_UP_WAKES));
      setImmediate(() => this.#pollIdle());
      return;
    }
    if (this.#deps.placeWanted?.()) this.yieldIdle();
    this.#pollIdle();
  }

  /** At the stop: every batch waiting for a loop is made visible again at once (never left until its timeout). */
  #releaseWaiting(): void {
    clearTimeout(this.#recheck);
    this.#recheck = undefined;
    for (const batch of this.#ready.drain()) {
      this.#idle.taken(this.#opts.queues.indexOf(batch.received.queue));
      this.#release1(batch);
    }
  }

  #release1(batch: Waiting<L>): void {
    if (!batch.release) return;
    const release = batch
      .release()
      .catch((err: unknown) =>
        this.#deps.logger.error({ err, queue: batch.received.queue.name }, 'could not release a batch that waited for a loop'),
      );
    this.#releases.add(release);
    void release.finally(() => this.#releases.delete(release));
  }

  /**
   * After the stop, once the loops have ended: resolves when no idle poll is on its way and every batch that
   * waited (or arrived since) has been released.
   */
  async drain(): Promise<void> {
    this.#releaseWaiting();
    while (this.#polls.size > 0 || this.#releases.size > 0) await Promise.allSettled([...this.#polls, ...this.#releases]);
  }

  /**
   * While a queue may need a poll, looks again when the first one has rested, recovered or gets its rate token,
   * and at least every LIMIT_RECHECK_MS (a slot may free, the function's pause may end); and while batches wait
   * for an idle loop that their queues' limits keep from them.
   */
  #armRecheck(now: number): void {
    clearTimeout(this.#recheck);
    this.#recheck = undefined;
    if (this.#stopping) return;
    const uncovered = this.#ready.full ? [] : [...this.#idle.uncovered()];
    const blocked = this.#idle.members > 0 ? this.#ready.queues() : [];
    if (uncovered.length === 0 && blocked.length === 0) return;
    let at = now + LIMIT_RECHECK_MS;
    const rested = this.#idle.restEnd(now);
    if (rested !== undefined) at = Math.min(at, rested);
    for (const i of uncovered) if (this.#health.retryAt(i) > now) at = Math.min(at, this.#health.retryAt(i));
    if (this.#slots.active) {
      const tokenAt = this.#slots.nextTokenAt([...uncovered, ...blocked], now);
      if (tokenAt !== undefined) at = Math.min(at, tokenAt);
    }
    this.#recheck = setTimeout(
      () => {
        this.#recheck = undefined;
        this.#serve();
        this.#pollIdle();
      },
      Math.max(1, at - now),
    );
  }

  /**
   * A loop starts (true) or ends (false) gathering a batch of `queue` over a batching window: meanwhile the queue
   * gets no idle poll, whose answer would make a second batch beside the one being gathered.
   */
  gathering(queue: ResolvedQueue, on: boolean): void {
    const index = this.#opts.queues.indexOf(queue);
    if (index < 0) return;
    const n = (this.#gathering.get(index) ?? 0) + (on ? 1 : -1);
    if (n > 0) this.#gathering.set(index, n);
    else this.#gathering.delete(index);
    if (!on) this.#pollIdle();
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
        this.#unparkLines.push(new WaitQueue());
        this.#idle.grow(all.length);
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
    if (this.#opts.pollForSec > 0) this.#share.set(current.size);
    // A retired queue weighs nothing: it is drawn last, and skipped as never due. Equal weights are a random
    // order, as in --queues, and drawn in O(n) where a weighted draw is O(n^2): thousands of found queues.
    const equal = queues.every((q) => q.weight === queues[0]?.weight);
    const mode = this.#opts.orderMode === 'strict' ? 'strict' : equal ? 'random' : 'weighted';
    this.#list = { mode, queues: all.map((q, i) => ({ ref: q.name, weight: current.has(i) ? q.weight : 0 })) };
    // Idle loops poll the queues that joined.
    this.#pollIdle();
  }

  #indexOf(queue: ResolvedQueue): number {
    return this.#byName.get(queue.name) ?? -1;
  }

  #visibilityOf(queue: ResolvedQueue): number {
    return this.#opts.visibilityOf?.(queue) ?? this.#opts.visibilityTimeoutSec ?? queue.visibilityTimeoutSec;
  }
}
