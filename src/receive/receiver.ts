import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { sleep } from '../util/backoff.ts';
import { firstReceiveMax } from './batch-window.ts';
import { IdlePolls, RAMP_UP_WAKES, type Member } from './idle-polls.ts';
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
};

export interface ReceiverDeps {
  readonly source: MessageSource;
  readonly logger: Logger;
  readonly random: Random;
  /** A monotonic clock (src/util/clock.ts): back-offs and rate tokens must not stall when the wall clock steps back. */
  readonly now: () => number;
  /** Whether the route's function is paused (src/invoke/function-gate.ts): the idle loops send no poll meanwhile. */
  readonly paused?: (() => boolean) | undefined;
  /** Whether a parked batch waits for an adaptive place (src/invoke/concurrency-gate.ts) that an idle loop may hold. */
  readonly placeWanted?: (() => boolean) | undefined;
}

export interface Received {
  readonly queue: ResolvedQueue;
  readonly messages: Message[];
  /** The VisibilityTimeout the receive stated: what SQS applied to these messages. */
  readonly visibilityTimeoutSec: number;
}

/** A loop that finds every queue at its limit looks again after this long at the latest (a release wakes it sooner). */
const LIMIT_RECHECK_MS = 1_000;

/** How an idle loop's wait ended: with messages, or sent back to its loop ('pass': after --sleep; 'now': at once). */
type IdleEnd = { kind: 'received'; received: Received } | { kind: 'pass' } | { kind: 'now' };

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
export class Receiver {
  #opts: ReceiverOptions;
  readonly #deps: ReceiverDeps;
  #list: QueueList;
  /** Each queue's index, by name: stable for the receiver's life (setQueues). */
  readonly #byName: Map<string, number>;
  readonly #health: QueueHealth;
  readonly #slots: QueueSlots;
  /** Loops waiting for a slot to be released; each release wakes one, which looks again. */
  readonly #slotWaiters = new WaitQueue();
  /** Per queue: parked batches taking their slot back, served before new receives. */
  readonly #unparkLines: WaitQueue[];
  /** The idle loops and their polls, one per queue at most. */
  readonly #idle: IdlePolls;
  /** How each waiting idle loop is answered. */
  readonly #members = new Map<Member, (end: IdleEnd) => void>();
  #nextMember: Member = 0;
  /** The stop of the latest idle loop: a poll still waiting to be sent (shared receives) is not sent after it. */
  #idleStop: AbortSignal | undefined;
  /** Looks again for queues to poll when one has rested, recovered or may get a slot (a release also looks). */
  #recheck: NodeJS.Timeout | undefined;

  constructor(options: ReceiverOptions, deps: ReceiverDeps) {
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
    this.#idle = new IdlePolls(options.queues.length, options.sleepSec * 1000);
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
    // The idle loops may poll the queue again, if it has no poll.
    if (this.#idle.spares > 0) this.#pollIdle();
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
  async next(stop: AbortSignal, onIdle?: () => void): Promise<Received | undefined> {
    const { queues, batchSize, pollForSec, sleepSec } = this.#opts;
    const max = firstReceiveMax(batchSize);
    const now = this.#deps.now();
    const drawn = drawOrder(this.#list, this.#deps.random).filter((i) => this.#health.retryAt(i) <= now);
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
      if (!this.#slots.acquire(index, this.#deps.now())) continue;
      const visibilityTimeoutSec = this.#visibilityOf(queues[index]!);
      const messages = (await this.#health.receive(index, { max, waitSec: 0, visibilityTimeoutSec, startBefore: stop })) ?? [];
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
      const end = await this.#waitIdle(order, stop);
      if (end.kind === 'received') return end.received;
      if (end.kind === 'now') return undefined;
    }
    await sleep(sleepSec * 1000, stop);
    return undefined;
  }

  /**
   * A parked batch waits for an adaptive place, which idle loops may hold: a spare one goes back to its loop,
   * which gives the place up; without a spare, the loop of the next poll that ends empty does (placeWanted).
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

  /** Idle loops waiting now (for tests). */
  get idleLoops(): number {
    return this.#idle.members;
  }

  /** Waits as an idle loop (src/receive/idle-polls.ts) until handed messages or sent back to the loop. */
  #waitIdle(order: readonly number[], stop: AbortSignal): Promise<IdleEnd> {
    if (stop.aborted) return Promise.resolve({ kind: 'now' });
    const member = this.#nextMember++;
    this.#idleStop = stop;
    return new Promise((resolve) => {
      // A member that a poll in flight needs stays until a poll ends, and takes what it returns.
      const onStop = () => {
        if (this.#idle.leave(member)) this.#answer(member, { kind: 'now' });
      };
      this.#members.set(member, (end) => {
        stop.removeEventListener('abort', onStop);
        resolve(end);
      });
      stop.addEventListener('abort', onStop, { once: true });
      this.#idle.join(member, order);
      this.#pollIdle();
    });
  }

  #answer(member: Member, end: IdleEnd): void {
    const resolve = this.#members.get(member);
    this.#members.delete(member);
    resolve?.(end);
    if (this.#members.size === 0) {
      clearTimeout(this.#recheck);
      this.#recheck = undefined;
    }
  }

  #wake(members: readonly Member[]): void {
    for (const m of members) this.#answer(m, { kind: 'now' });
  }

  /** Sends the polls the idle loops are missing: one per queue that may be polled now, while a loop is spare. */
  #pollIdle(): void {
    const now = this.#deps.now();
    const paused = this.#deps.paused?.() ?? false;
    // Taking the slot (and rate token) here: a poll holds its queue's slot as a long-polling loop does.
    const take = (i: number) => !paused && this.#health.retryAt(i) <= now && this.#slots.acquire(i, now);
    for (const index of this.#idle.toPoll(take, now)) this.#sendIdlePoll(index, now);
    this.#armRecheck(now);
  }

  #sendIdlePoll(index: number, now: number): void {
    const { queues, batchSize, pollForSec } = this.#opts;
    const queue = queues[index]!;
    const max = firstReceiveMax(batchSize);
    // A queue held back only by its rate gets a token soon: poll the others no longer than that, so a loop is
    // back in time to serve it should no loop be spare by then.
    const tokenAt = this.#slots.nextTokenAt(
      queues.map((_, i) => i).filter((i) => i !== index && this.#health.retryAt(i) <= now),
      now,
    );
    const waitSec = tokenAt === undefined ? pollForSec : Math.max(1, Math.min(pollForSec, Math.ceil((tokenAt - now) / 1000)));
    const visibilityTimeoutSec = this.#visibilityOf(queue);
    void this.#health
      .receive(index, { max, waitSec, visibilityTimeoutSec, startBefore: this.#idleStop })
      .then((messages) => this.#idlePollEnded(index, messages, max, visibilityTimeoutSec));
  }

  /** `messages` undefined: the poll failed (the queue's health has its back-off). */
  #idlePollEnded(index: number, messages: Message[] | undefined, max: number, visibilityTimeoutSec: number): void {
    const queue = this.#opts.queues[index]!;
    if (messages !== undefined && messages.length > 0) {
      // The poll's slot goes with the messages, as a loop's own long poll kept it.
      const { taker, wake } = this.#idle.delivered(index, messages.length, max);
      this.#answer(taker, { kind: 'received', received: { queue, messages, visibilityTimeoutSec } });
      this.#wake(wake);
      // The next poll is signed and sent after the taker's Invoke has gone out, not ahead of it.
      setImmediate(() => this.#pollIdle());
      return;
    }
    this.#release(index);
    const now = this.#deps.now();
    const failed = messages === undefined || this.#health.retryAt(index) > now;
    const paused = this.#deps.paused?.() ?? false;
    const uncovered = this.#opts.queues.filter(
      (_, i) => (i === index || !this.#idle.polling(i)) && !paused && this.#health.retryAt(i) <= now && this.#slots.admits(i, now),
    ).length;
    const end = this.#idle.emptied(index, failed, now, uncovered);
    // After an empty poll a pass waits --sleep first, as a loop's own did; after a failure, not on top of the back-off.
    if (end.member !== undefined) this.#answer(end.member, { kind: end.reason === 'pass' ? 'pass' : 'now' });
    else if (this.#deps.placeWanted?.()) this.yieldIdle();
    this.#pollIdle();
  }

  /**
   * While a loop is spare and a queue has no poll, looks again when the first such queue has rested, recovered
   * or gets its rate token, and at least every LIMIT_RECHECK_MS (a slot may free, the function's pause may end).
   */
  #armRecheck(now: number): void {
    clearTimeout(this.#recheck);
    this.#recheck = undefined;
    if (this.#idle.spares <= 0) return;
    const uncovered = this.#opts.queues.map((_, i) => i).filter((i) => !this.#idle.polling(i));
    if (uncovered.length === 0) return;
    let at = now + LIMIT_RECHECK_MS;
    const rested = this.#idle.restEnd(now);
    if (rested !== undefined) at = Math.min(at, rested);
    for (const i of uncovered) if (this.#health.retryAt(i) > now) at = Math.min(at, this.#health.retryAt(i));
    const tokenAt = this.#slots.nextTokenAt(uncovered, now);
    if (tokenAt !== undefined) at = Math.min(at, tokenAt);
    this.#recheck = setTimeout(
      () => {
        this.#recheck = undefined;
        this.#pollIdle();
      },
      Math.max(1, at - now),
    );
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
        this.#idle.addQueue();
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
