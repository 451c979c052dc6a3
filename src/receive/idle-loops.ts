import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { firstReceiveMax } from './batch-window.ts';
import { IdlePolls, RAMP_UP_WAKES, UNCAPPED, type Member, type PollShare } from './idle-polls.ts';
import { ReadySet } from './ready-set.ts';
import type { HoldBatch } from './held-batch.ts';
import type { QueueHealth } from './queue-health.ts';
import type { QueueSlots } from './queue-limits.ts';
import type { QueueList, Random } from './queue-order.ts';
import type { ResolvedQueue } from '../core/queue.ts';

export interface Received<L = unknown> {
  readonly queue: ResolvedQueue;
  readonly messages: Message[];
  /** The VisibilityTimeout the receive stated: what SQS applied to these messages. */
  readonly visibilityTimeoutSec: number;
  /** The lease made when an idle poll answered (ReceiverDeps.hold); undefined: the loop leases the batch itself. */
  readonly lease?: L | undefined;
  /**
   * When an idle poll answered with it (the route's clock), for a batch that may have waited for a loop: its
   * batching window and its age count from here. Undefined: received by the loop itself, just now.
   */
  readonly receivedAt?: number | undefined;
}

/** A batch in the ready set, and how it is released at a stop. */
interface Waiting<L> {
  readonly received: Received<L>;
  readonly release: (() => Promise<void>) | undefined;
}

/** The idle state's mode (IdleLoops' header says what moves it on); every mode but `starting` has its stop. */
type IdleMode = { readonly name: 'starting' } | { readonly name: 'polling' | 'stopping' | 'drained'; readonly stop: AbortSignal };

/** How an idle loop's wait ended: handed a batch, or sent back to its loop at once. */
type IdleEnd<L> = { kind: 'received'; received: Received<L> } | { kind: 'now' };

/** A loop that finds every queue at its limit looks again after this long at the latest (a slot given back wakes it sooner). */
export const LIMIT_RECHECK_MS = 1_000;

/**
 * Idle polls sent in one turn of the event loop at most; the rest follow on the next turns. Signing and sending
 * 10,000 polls at once (every queue's at start-up) would hold the loop for a second or more, and the answers and
 * the loops' Invokes with it. More polls than this chosen at once also get their first wait drawn
 * (IdlePolls.waitSec), so that they do not end together.
 */
const POLLS_PER_TURN = 250;

/** What the idle loops take from the Receiver's deps (ReceiverDeps extends it). */
export interface IdleDeps<L> {
  readonly logger: Logger;
  readonly random: Random;
  /** A monotonic clock (src/util/clock.ts): back-offs and rate tokens must not stall when the wall clock steps back. */
  readonly now: () => number;
  /** Whether the route's function is paused (src/invoke/function-gate.ts): the idle loops send no poll meanwhile. */
  readonly paused?: (() => boolean) | undefined;
  /** Whether a parked batch waits for an adaptive place (src/invoke/concurrency-gate.ts) that an idle loop may hold. */
  readonly placeWanted?: (() => boolean) | undefined;
  /** Leases what an idle poll returned, from its answer on (src/dispatch/parts.ts); without it, nothing holds a waiting batch. */
  readonly hold?: HoldBatch<L> | undefined;
  /**
   * Whether this replica receives from `queue` now: the fleet's placement (src/fleet/fleet-member.ts), where each
   * idle queue is polled by one replica and a busy one by all. Without it, every queue.
   */
  readonly serves?: ((queue: ResolvedQueue) => boolean) | undefined;
}

/** What the idle loops share with the Receiver: the route as it is now, and the per-queue state both keep. */
export interface IdleRoute<L> extends IdleDeps<L> {
  /** The route's queues now, by index (Receiver.setQueues only appends). */
  readonly queues: () => readonly ResolvedQueue[];
  /** Queue `queue`'s index, found by its name (-1: none); the one way a queue is found. */
  readonly indexOf: (queue: ResolvedQueue) => number;
  /** The order the queues are drawn in now. */
  readonly list: () => QueueList;
  readonly visibilityOf: (queue: ResolvedQueue) => number;
  readonly batchSize: number;
  readonly pollForSec: number;
  readonly sleepSec: number;
  readonly health: QueueHealth;
  readonly slots: QueueSlots;
}

/**
 * The idle state of a route, as the Receiver runs it: the loops that found every queue empty wait here, while one
 * long poll per queue is kept in flight between them (src/receive/idle-polls.ts says how many, and which queues);
 * what a poll returns goes to the idle loop that waited longest, or waits for a loop in the ready set
 * (src/receive/ready-set.ts) under its lease, taken in the queues' order when a loop is free. At the stop, no poll
 * is sent, and what waits or still arrives is released at once.
 *
 * Its mode (IdleMode), changed only by #setMode(), which logs each change at debug level:
 * - `starting`: the route's start-up passes read the queues; no poll is sent yet. start() (the first loop goes
 *   idle, or the route's first pass with pollsFromStart) moves it to `polling`.
 * - `polling`: a long poll is kept in flight per queue that may be polled, and what they return is handed to idle
 *   loops or waits in the ready set. The stop's abort event moves it to `stopping`.
 * - `stopping`: no poll is sent; every batch that waited is released, and so is what a poll still returns.
 *   drain(), once no poll is on its way and every release has ended, moves it to `drained`.
 * - `drained`: nothing is in flight any more.
 * A start() with another stop than the mode's (a receiver run past one stop, as tests do) moves any mode back to
 * `polling` under the new stop.
 *
 * A queue is found by its index, and its index by its name (IdleRoute.indexOf), never by object: discovery
 * replaces a queue's object when its weight tag changes, also while a batch of it waits.
 */
export class IdleLoops<L> {
  readonly #route: IdleRoute<L>;
  /** The idle loops and the polls, one per queue at most. */
  readonly #idle: IdlePolls;
  readonly #share: PollShare;
  /** Batches idle polls returned while no loop was free, by queue index. */
  readonly #ready: ReadySet<Waiting<L>>;
  /** Idle polls on their way (a drain waits for them), and releases of waiting batches at the stop. */
  readonly #polls = new Set<Promise<void>>();
  readonly #releases = new Set<Promise<void>>();
  /** Queues a loop is gathering a batch of (batching window), by index: how many loops. */
  readonly #gathering = new Map<number, number>();
  /** How each waiting idle loop is answered. */
  readonly #members = new Map<Member, (end: IdleEnd<L>) => void>();
  #nextMember: Member = 0;
  /** The mode (the header says each); its stop: a poll still waiting to be sent (shared receives) is not sent after it, none is sent after it. */
  #mode: IdleMode = { name: 'starting' };
  /** Looks again for queues to poll when one has rested, recovered or may get a slot (a slot given back also looks). */
  #recheck: NodeJS.Timeout | undefined;
  /** When a receive of each queue last came back full (the route's clock), by index: the queues busy lately. */
  readonly #fullAt = new Map<number, number>();

  constructor(route: IdleRoute<L>, options: { pollShare?: PollShare | undefined; readyBound: number }) {
    this.#route = route;
    const queues = route.queues().length;
    this.#share = options.pollShare ?? UNCAPPED;
    if (route.pollForSec > 0) this.#share.set(queues);
    this.#idle = new IdlePolls(queues, route.sleepSec * 1000, () => this.#share.max());
    this.#ready = new ReadySet(Math.max(1, options.readyBound));
  }

  /** Whether the idle loops have started (a loop went idle, or the polls started with the route's first pass). */
  get started(): boolean {
    return this.#mode.name !== 'starting';
  }

  /** Whether a pass should skip queue `index`: its poll in flight answers the moment it has a message (IdlePolls.covered). */
  covered(index: number): boolean {
    return this.#idle.covered(index);
  }

  /** Whether queue `index` has neither a poll in flight nor a sign of messages (IdlePolls.cold). */
  cold(index: number): boolean {
    return this.#idle.cold(index);
  }

  /**
   * A pass's short receive on queue `index` returned `count` of `max` (IdlePolls.read); a full one suggests more are
   * waiting: idle loops come back to read them too.
   */
  read(index: number, count: number, max: number): void {
    this.#idle.read(index, count, max);
    if (count >= max) {
      this.#fullAt.set(index, this.#route.now());
      this.#wake(this.#idle.wakeSpares(RAMP_UP_WAKES));
    }
  }

  /** The queues (by index) a receive of which came back full at or after `since` (the route's clock): busy lately. */
  fullSince(since: number): number[] {
    const busy: number[] = [];
    for (const [index, at] of this.#fullAt) {
      if (at >= since) busy.push(index);
      else this.#fullAt.delete(index);
    }
    return busy;
  }

  /** Whether a batch of queue `index` waits in the ready set. */
  waiting(index: number): boolean {
    return this.#ready.has(index);
  }

  /** Whether queue `index`'s last long poll came back empty, with nothing read from it since (IdlePolls.quiet). */
  quiet(index: number): boolean {
    return this.#idle.quiet(index);
  }

  /** Idle loops waiting now (for tests). */
  get members(): number {
    return this.#idle.members;
  }

  /**
   * The route has `count` queues now, those of `current` not retired (Receiver.setQueues): the new ones and those
   * that came back may be polled, and those that left are walked no more.
   */
  grow(count: number, current: ReadonlySet<number>): void {
    this.#idle.grow(count);
    for (let i = 0; i < count; i++) {
      if (current.has(i)) this.#idle.revive(i);
      else this.#idle.retire(i);
    }
    if (this.#route.pollForSec > 0) this.#share.set(current.size);
    this.poll();
  }

  /**
   * A parked batch waits for an adaptive place, which idle loops may hold: an idle one goes back to its loop,
   * which gives the place up; without one, the next poll that ends empty tries again (placeWanted).
   */
  yieldIdle(): void {
    this.#wake(this.#idle.wakeSpares(1));
  }

  /** Waits as an idle loop (src/receive/idle-polls.ts) until handed a batch or sent back to its loop. */
  wait(stop: AbortSignal): Promise<IdleEnd<L>> {
    if (stop.aborted) return Promise.resolve({ kind: 'now' });
    const member = this.#nextMember++;
    this.start(stop);
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
      this.serve();
      this.poll();
    });
  }

  /** The idle loops' stop: from then on no poll is sent, and what waits or still arrives is released at once. */
  start(stop: AbortSignal): void {
    if (this.#stop === stop) return;
    // An aborted signal sends no abort event: the mode is `stopping` from here (the Receiver never starts so).
    this.#setMode({ name: stop.aborted ? 'stopping' : 'polling', stop });
    stop.addEventListener('abort', () => this.#stopped(stop), { once: true });
  }

  /** The stop of `stop` came: the mode moves on if it is still that stop's, and what waits is released. */
  #stopped(stop: AbortSignal): void {
    if (this.#mode.name === 'polling' && this.#mode.stop === stop) this.#setMode({ name: 'stopping', stop });
    this.#releaseWaiting();
  }

  /** The one place the mode changes. */
  #setMode(next: IdleMode): void {
    const from = this.#mode.name;
    this.#mode = next;
    if (from !== next.name) this.#route.logger.debug({ from, to: next.name }, 'idle state changes mode');
  }

  get #stop(): AbortSignal | undefined {
    return this.#mode.name === 'starting' ? undefined : this.#mode.stop;
  }

  /**
   * Whether no poll may be sent: the stop's signal, not the mode, since the stop's other listeners run before
   * #stopped and a poll they cause must not go either.
   */
  get #stopping(): boolean {
    return this.#stop?.aborted ?? false;
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
  serve(): void {
    const now = this.#route.now();
    while (this.#ready.size > 0 && this.#idle.first() !== undefined) {
      const got = this.#ready.take(
        this.#route.list(),
        this.#route.random,
        (i) => this.#route.slots.acquire(i, now),
        (order) => this.#route.slots.prioritise(order, now),
      );
      if (!got) return;
      this.#idle.taken(got.queue);
      const member = this.#idle.first()!;
      this.#idle.leave(member);
      this.#answer(member, { kind: 'received', received: got.batch.received });
    }
  }

  /** A loop's pass reached queue `index`, whose batch waits: it takes it (its slot is taken already). */
  take(index: number): Received<L> {
    const batch = this.#ready.takeQueue(index)!;
    this.#idle.taken(index);
    // The queue's next poll is signed and sent after the taker's Invoke has gone out, not ahead of it.
    setImmediate(() => this.poll());
    return batch.received;
  }

  /** Sends the polls that are missing: one per queue that may be polled now (src/receive/idle-polls.ts). */
  poll(): void {
    if (this.#mode.name === 'starting' || this.#stopping) return;
    const now = this.#route.now();
    const paused = this.#route.paused?.() ?? false;
    // A poll takes no slot: what it returns waits for a loop that takes the slot then (ReadySet.take).
    const queues = this.#route.queues();
    const serves = this.#route.serves;
    const may = (i: number) =>
      !paused &&
      !this.#gathering.has(i) &&
      this.#route.health.retryAt(i) <= now &&
      this.#route.slots.admits(i, now) &&
      (serves === undefined || serves(queues[i]!));
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
    const { batchSize, pollForSec } = this.#route;
    const max = firstReceiveMax(batchSize);
    const visibilityTimeoutSec = this.#route.visibilityOf(this.#route.queues()[index]!);
    const waitSec = this.#idle.waitSec(index, pollForSec, this.#route.random, spread);
    const poll = this.#route.health
      .receive(index, { max, waitSec, visibilityTimeoutSec, startBefore: this.#stop })
      .then((messages) => this.#idlePollEnded(index, messages, max, visibilityTimeoutSec));
    this.#polls.add(poll);
    void poll.finally(() => this.#polls.delete(poll));
  }

  /** `messages` undefined: the poll failed (the queue's health has its back-off). */
  #idlePollEnded(index: number, messages: Message[] | undefined, max: number, visibilityTimeoutSec: number): void {
    const now = this.#route.now();
    const count = messages?.length ?? 0;
    const failed = messages === undefined || this.#route.health.retryAt(index) > now;
    this.#idle.ended(index, count, max, failed, now);
    if (messages !== undefined && count > 0) {
      const queue = this.#route.queues()[index]!;
      // Leased from here (the dispatcher's lease): it may wait for a loop.
      const held = this.#route.hold?.(queue, messages, visibilityTimeoutSec);
      const received: Received<L> = held
        ? { queue, messages, visibilityTimeoutSec, lease: held.lease, receivedAt: now }
        : { queue, messages, visibilityTimeoutSec, receivedAt: now };
      const batch: Waiting<L> = { received, release: held ? () => held.release() : undefined };
      if (this.#stopping) {
        this.#idle.taken(index);
        this.#releaseOne(batch);
        return;
      }
      this.#ready.add(index, batch);
      this.serve();
      // A full poll suggests more are waiting: idle loops come back to read the queue with their passes.
      if (count >= max) {
        this.#fullAt.set(index, now);
        this.#wake(this.#idle.wakeSpares(RAMP_UP_WAKES));
      }
      setImmediate(() => this.poll());
      return;
    }
    if (this.#route.placeWanted?.()) this.yieldIdle();
    this.poll();
  }

  /** At the stop: every batch waiting for a loop is made visible again at once (never left until its timeout). */
  #releaseWaiting(): void {
    clearTimeout(this.#recheck);
    this.#recheck = undefined;
    for (const batch of this.#ready.drain()) {
      // By name: the queue's object may have been replaced (a weight tag changed) while its batch waited.
      this.#idle.taken(this.#route.indexOf(batch.received.queue));
      this.#releaseOne(batch);
    }
  }

  /** Makes one batch that waited (or arrived after the stop) visible again; drain() waits for it. */
  #releaseOne(batch: Waiting<L>): void {
    if (!batch.release) return;
    const release = batch
      .release()
      .catch((err: unknown) =>
        this.#route.logger.error({ err, queue: batch.received.queue.name }, 'could not release a batch that waited for a loop'),
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
    if (this.#mode.name === 'stopping') this.#setMode({ name: 'drained', stop: this.#mode.stop });
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
    for (const i of uncovered) if (this.#route.health.retryAt(i) > now) at = Math.min(at, this.#route.health.retryAt(i));
    if (this.#route.slots.active) {
      const tokenAt = this.#route.slots.nextTokenAt([...uncovered, ...blocked], now);
      if (tokenAt !== undefined) at = Math.min(at, tokenAt);
    }
    this.#recheck = setTimeout(
      () => {
        this.#recheck = undefined;
        this.serve();
        this.poll();
      },
      Math.max(1, at - now),
    );
  }

  /**
   * A loop starts (true) or ends (false) gathering a batch of `queue` over a batching window: meanwhile the queue
   * gets no idle poll, whose answer would make a second batch beside the one being gathered (`index`: the queue's).
   */
  gathering(index: number, on: boolean): void {
    const n = (this.#gathering.get(index) ?? 0) + (on ? 1 : -1);
    if (n > 0) this.#gathering.set(index, n);
    else this.#gathering.delete(index);
    if (!on) this.poll();
  }
}
