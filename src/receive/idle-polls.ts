/**
 * The idle state of a route: which queues get a long poll, and which idle loops are woken.
 *
 * Every ReceiveMessage is billed, and a long poll already answers the moment a message arrives. So the route keeps
 * one long poll in flight per queue that may be polled, whatever the number of idle loops: one ReceiveMessage
 * per queue per --poll-for (3 a minute at 20 s; Lambda's SQS trigger keeps five pollers per queue). What a poll
 * returns goes to an idle loop if one waits, else waits for a loop in the ready set (src/receive/ready-set.ts),
 * under its visibility lease.
 *
 * - A queue gets no poll while one is in flight, while a batch of it waits in the ready set, while it is hot (its
 *   last receive came back full: the loops' passes read it with short receives until one comes back short), while
 *   it rests --sleep after an empty poll, or while the Receiver says it may not be polled (backing off, at its
 *   limits, the function paused).
 * - No new poll while the ready set is full, and never more than the share's `max()` in flight (what the socket budget
 *   allows): the queues without a poll take turns, the one that waited longest first.
 * - A poll that came back full wakes two idle loops (spares), which read the queue with their passes and wake
 *   two more each when they find full receives too (src/receive/receiver.ts): a pool of any size is back at
 *   work within a few round trips of a burst.
 *
 * Per-queue state lives in sets and maps keyed by the queue's index, so a route's queues may grow while it runs
 * (grow()). Pure state: time is an argument.
 */

/**
 * A route's share of the daemon's poll budget (src/daemon/poll-shares.ts): told how many queues the
 * route polls now, it says how many polls may be in flight.
 */
export interface PollShare {
  set(queues: number): void;
  max(): number;
}

/** No cap: one poll per queue. */
export const UNCAPPED: PollShare = { set: () => {}, max: () => Infinity };

/** A waiting loop, as the Receiver numbers it. */
export type Member = number;

/**
 * The least time between two polls of a queue that came back empty: an endpoint that answers a long poll at once
 * (one that ignores WaitTimeSeconds) costs at most one poll per queue a second, never a spin.
 */
export const MIN_EMPTY_POLL_SPACING_MS = 1_000;

/** Spares a full receive wakes: the loop it replaces and one more, so the pool doubles per round trip. */
export const RAMP_UP_WAKES = 2;

export class IdlePolls {
  readonly #restMs: number;
  readonly #maxPolls: () => number;
  /** Idle loops in the order they joined (a Set: joining, leaving and taking cost O(1) with thousands of loops). */
  readonly #members = new Set<Member>();
  /** Queues with a poll in flight. */
  readonly #inFlight = new Set<number>();
  /**
   * Queues that may need a poll: none in flight, no batch waiting, not hot. In the order they became so, which is
   * the order they get one when polls are capped (a rotation).
   */
  readonly #uncovered = new Set<number>();
  /** Queues whose last receive was full: read by passes, not polled. */
  readonly #hot = new Set<number>();
  /** Queues whose last receive (poll or short) brought messages: a pass reads them even with a poll in flight. */
  readonly #warm = new Set<number>();
  /** Queues whose batch waits in the ready set. */
  readonly #waiting = new Set<number>();
  /** Per queue: no poll before this time (--sleep after an empty one). */
  readonly #restUntil = new Map<number, number>();
  /** Per queue with a poll in flight: when it was sent. */
  readonly #sentAt = new Map<number, number>();
  /** Queues whose first poll had its wait drawn (waitSec). */
  readonly #spread = new Set<number>();
  /** Queues that left the route (retire): in none of the sets above but a poll or batch still on its way. */
  readonly #retired = new Set<number>();
  #queues = 0;

  constructor(queueCount: number, restMs: number, maxPolls: () => number = () => Infinity) {
    this.#restMs = restMs;
    this.#maxPolls = () => Math.max(1, maxPolls());
    this.grow(queueCount);
  }

  /** The route has `queueCount` queues now (never fewer): the new ones may be polled. */
  grow(queueCount: number): void {
    for (let i = this.#queues; i < queueCount; i++) this.#uncovered.add(i);
    this.#queues = Math.max(this.#queues, queueCount);
  }

  /**
   * Queue `i` left the route: it leaves every set a poll's end or a pass walks, so the queues that ever left cost
   * those walks nothing (with 4,000 gone beside 2,000 live, they took the idle CPU from 23% to 42% of a core). A
   * poll in flight or a batch waiting for it ends as it would have.
   */
  retire(i: number): void {
    if (i >= this.#queues || this.#retired.has(i)) return;
    this.#retired.add(i);
    this.#uncovered.delete(i);
    this.#hot.delete(i);
    this.#warm.delete(i);
    this.#restUntil.delete(i);
    this.#spread.delete(i);
  }

  /** Queue `i` is back in the route: it may be polled again. */
  revive(i: number): void {
    if (this.#retired.delete(i)) this.#uncover(i);
  }

  /** Idle loops waiting now. */
  get members(): number {
    return this.#members.size;
  }

  /** Polls in flight now. */
  get polls(): number {
    return this.#inFlight.size;
  }

  /** Whether queue `i` has a poll in flight. */
  polling(i: number): boolean {
    return this.#inFlight.has(i);
  }

  /**
   * Whether a pass should skip queue `i`: its poll in flight answers the moment it has a message. Not when its
   * last receive brought messages: it may hold more, which its poll (sent a moment ago) has not answered with yet.
   */
  covered(i: number): boolean {
    return this.#inFlight.has(i) && !this.#warm.has(i);
  }

  /**
   * Whether queue `i` is cold: no poll in flight, no batch waiting, and its last receive brought nothing (it rests
   * --sleep, waits for its turn when the queues outnumber the polls, or its poll is about to be sent). Nothing
   * says it has messages; a pass reads only a few such queues (Receiver, COLD_READS_PER_PASS).
   */
  cold(i: number): boolean {
    return !this.#inFlight.has(i) && !this.#waiting.has(i) && !this.#warm.has(i) && !this.#hot.has(i);
  }

  /** A loop found every queue it could read empty (or short) and waits: no queue is hot any more. */
  join(member: Member): void {
    this.#members.add(member);
    for (const i of this.#hot) this.#cool(i);
  }

  /** An idle loop leaves (its stop, or it was handed a batch). */
  leave(member: Member): void {
    this.#members.delete(member);
  }

  /** The idle loop that waited longest, which takes what a poll returned; undefined: none waits. */
  first(): Member | undefined {
    for (const m of this.#members) return m;
    return undefined;
  }

  /**
   * The queues to poll now, each counted in flight from here: the uncovered ones that have rested and that
   * `may(i)` admits, the longest uncovered first, while fewer than maxPolls are in flight and `full()` (the ready
   * set) says no. `may` is asked only about a queue that would be chosen.
   */
  toPoll(may: (i: number) => boolean, full: () => boolean, now: number): number[] {
    const chosen: number[] = [];
    const max = this.#maxPolls();
    for (const i of this.#uncovered) {
      if (this.#inFlight.size >= max || full()) break;
      if ((this.#restUntil.get(i) ?? 0) > now || !may(i)) continue;
      this.#uncovered.delete(i);
      this.#inFlight.add(i);
      this.#sentAt.set(i, now);
      chosen.push(i);
    }
    return chosen;
  }

  /**
   * How long queue `i`'s poll waits: `pollForSec`, with two exceptions.
   * - When its queues outnumber the polls the share allows, they take turns, and a turn waits the share of
   *   --poll-for that brings every queue's turn round once per --poll-for: `pollForSec * polls / queues`, at least
   *   one second. A queue is then read about once per --poll-for, as with a poll each (the same ReceiveMessage a
   *   queue a minute), and a message sent to a queue between its turns waits about --poll-for at most. With every
   *   turn a whole --poll-for, 1,000 queues on 100 polls came round once every 200 s.
   * - `spread` (one of thousands sent together: every queue's at start-up, or a thousand queues found at once): the
   *   queue's first such poll waits a whole number of seconds drawn from 1..its wait. Sent together, they would
   *   otherwise end together, and be sent again together, every --poll-for for the daemon's life: bursts of thousands
   *   of calls that a small host answers late. Drawn once, the ends stay spread, since each queue's next poll is
   *   sent when its last one ends. It costs each queue one early poll, once.
   */
  waitSec(i: number, pollForSec: number, random: () => number, spread: boolean): number {
    const max = this.#maxPolls();
    const wait = this.#queues > max ? Math.max(1, Math.min(pollForSec, Math.floor((pollForSec * max) / this.#queues))) : pollForSec;
    if (!spread || this.#spread.has(i)) return wait;
    this.#spread.add(i);
    return Math.min(wait, 1 + Math.floor(random() * wait));
  }

  /**
   * Queue `i`'s poll ended with `count` of the `max` messages it asked for (`failed`: it failed; its back-off is
   * the Receiver's). What it returned waits for a loop (taken() ends that); a full one makes the queue hot, and
   * the Receiver wakes spares (RAMP_UP_WAKES) to read it.
   */
  ended(i: number, count: number, max: number, failed: boolean, now: number): void {
    if (!this.#inFlight.delete(i)) throw new Error(`no poll in flight on queue ${i}`);
    const sentAt = this.#sentAt.get(i) ?? now;
    this.#sentAt.delete(i);
    if (count > 0) this.#waiting.add(i);
    if (this.#retired.has(i)) return;
    if (count === 0 && !failed) this.#restUntil.set(i, Math.max(now + this.#restMs, sentAt + MIN_EMPTY_POLL_SPACING_MS));
    else this.#restUntil.delete(i);
    if (count > 0) this.#warm.add(i);
    else this.#warm.delete(i);
    if (count >= max) this.#hot.add(i);
    this.#uncover(i);
  }

  /** Queue `i`'s batch left the ready set (a loop took it, or a stop released it): it may be polled again. */
  taken(i: number): void {
    this.#waiting.delete(i);
    this.#uncover(i);
  }

  /** A pass's short receive on queue `i` returned `count` of `max`: full keeps (or makes) it hot. */
  read(i: number, count: number, max: number): void {
    if (this.#retired.has(i)) return;
    if (count > 0) this.#warm.add(i);
    else this.#warm.delete(i);
    if (count >= max) {
      this.#hot.add(i);
      this.#uncovered.delete(i);
    } else if (this.#hot.has(i)) this.#cool(i);
  }

  /**
   * Whether queue `i` is quiet: its last long poll came back empty (it rests or is polled again) and nothing was
   * read from it since.
   */
  quiet(i: number): boolean {
    return this.#restUntil.has(i) && !this.#warm.has(i) && !this.#hot.has(i) && !this.#waiting.has(i);
  }

  /** Up to `n` idle loops go back to their passes (the ones that waited longest first). */
  wakeSpares(n: number): Member[] {
    const woken: Member[] = [];
    for (const m of this.#members) {
      if (woken.length >= n) break;
      woken.push(m);
    }
    for (const m of woken) this.#members.delete(m);
    return woken;
  }

  /** The uncovered queues (for the Receiver's recheck timer), in their turn's order. */
  uncovered(): Iterable<number> {
    return this.#uncovered;
  }

  /** When the first uncovered queue has rested (undefined: none is resting). */
  restEnd(now: number): number | undefined {
    let at: number | undefined;
    for (const i of this.#uncovered) {
      const t = this.#restUntil.get(i) ?? 0;
      if (t > now && (at === undefined || t < at)) at = t;
    }
    return at;
  }

  #cool(i: number): void {
    this.#hot.delete(i);
    this.#uncover(i);
  }

  /** Queue `i` needs a poll, unless one is in flight, its batch waits or it is hot. */
  #uncover(i: number): void {
    if (this.#retired.has(i) || this.#inFlight.has(i) || this.#waiting.has(i) || this.#hot.has(i)) return;
    this.#uncovered.add(i);
  }
}
