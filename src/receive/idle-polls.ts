/**
 * The idle state of a route's worker loops: one long poll per queue, whatever the number of idle loops.
 *
 * Every ReceiveMessage is billed, and a long poll already answers the moment a message arrives. So a loop whose
 * pass found every queue empty does not send a long poll of its own: it joins the idle loops (members), and the
 * members keep one long poll in flight per queue (Lambda's SQS trigger keeps five). What a poll returns goes to
 * any member, the one that has waited longest, since the poll was sent for the members, not for one of them.
 *
 * - Nothing is received that no loop will take: a poll asks for one loop's worth (the first receive of a batch),
 *   and there are never more polls in flight than members, so every answer has a member to go to, and shutdown
 *   strands nothing (a member leaves only once the polls in flight do not need it).
 * - The members beyond the polls in flight are spares. A poll that came back full (as many as it asked for)
 *   suggests more are waiting: it wakes two spares, which go back to their loops' passes (short receives in
 *   strict or weighted order) and wake two more each when they find full receives too (src/receive/receiver.ts),
 *   so a pool of any size is back at work within a few round trips of a burst.
 * - With fewer members than queues that may be polled, a poll that came back empty sends its member on a pass,
 *   which reads every queue with a short receive and then joins again: the queues without a poll are read once per
 *   --poll-for, as each loop's own pass did before.
 * - After an empty poll a queue rests --sleep before the next one.
 *
 * Which queues may be polled now (healthy, within their per-queue limits, the function not paused) is the
 * Receiver's to say; it also sends the polls. Pure state: time is an argument.
 */

/** A waiting loop, as the Receiver numbers it. */
export type Member = number;

/** Spares a full receive wakes: the loop it replaces and one more, so the pool doubles per round trip. */
export const RAMP_UP_WAKES = 2;

/** What happens after a poll that returned messages. */
export interface Delivery {
  /** The member the messages go to. */
  readonly taker: Member;
  /** Spares to send back to their passes: the queue may hold more. */
  readonly wake: readonly Member[];
}

/** What happens after a poll that returned nothing (or failed). */
export interface EmptyEnd {
  /** A member that leaves the idle state, or undefined: every member keeps waiting. */
  readonly member: Member | undefined;
  /**
   * Why it leaves: it was stopping; the poll failed (its loop's pass goes on to the other queues at once, as
   * after its own poll); or it passes because not every queue can be polled.
   */
  readonly reason: 'leaving' | 'failed' | 'pass' | undefined;
}

export class IdlePolls {
  readonly #restMs: number;
  /** Members in the order they joined (a Set: joining, leaving and taking cost O(1) with thousands of loops). */
  readonly #members = new Set<Member>();
  /** Members that want to leave (stop) but are still needed by the polls in flight. */
  readonly #leaving = new Set<Member>();
  readonly #inFlight: boolean[];
  #polls = 0;
  /** Per queue: no poll before this time (--sleep after an empty one). */
  readonly #restUntil: number[];
  /** The order in which uncovered queues get a poll: the latest joiner's pass order, then the rest. */
  #order: readonly number[];

  constructor(queueCount: number, restMs: number) {
    this.#restMs = restMs;
    this.#inFlight = Array.from({ length: queueCount }, () => false);
    this.#restUntil = Array.from({ length: queueCount }, () => 0);
    this.#order = this.#inFlight.map((_, i) => i);
  }

  /** A queue joined the route (Receiver.setQueues): it takes the next index, last in the order for a poll. */
  addQueue(): void {
    this.#inFlight.push(false);
    this.#restUntil.push(0);
    this.#order = [...this.#order, this.#inFlight.length - 1];
  }

  /** Members waiting now. */
  get members(): number {
    return this.#members.size;
  }

  /** Polls in flight now. */
  get polls(): number {
    return this.#polls;
  }

  /** Whether queue `i` has a poll in flight. */
  polling(i: number): boolean {
    return this.#inFlight[i]!;
  }

  /** Members that no poll in flight needs, and that are not leaving. */
  get spares(): number {
    return this.#members.size - this.#leaving.size - this.#polls;
  }

  /** A loop found every queue empty and waits. `order`: its pass's order, in which uncovered queues get a poll. */
  join(member: Member, order: readonly number[]): void {
    this.#members.add(member);
    this.#order = [...order, ...this.#order.filter((i) => !order.includes(i))];
  }

  /**
   * A member's stop: true if it may go now (no poll in flight needs it); otherwise it stays until a poll ends,
   * and takes what that poll returns.
   */
  leave(member: Member): boolean {
    if (!this.#members.has(member)) return true;
    if (this.#members.size - 1 >= this.#polls) {
      this.#take(member);
      return true;
    }
    this.#leaving.add(member);
    return false;
  }

  /**
   * The queues to poll now, each counted in flight from here: in the latest order, every queue without a poll
   * that has rested and that `take` admits, while a member is spare to take its answer. `take(i)` says whether
   * queue i may be polled now, and takes what a poll needs (its slot) when it says yes; it is asked only about
   * a queue that would be chosen.
   */
  toPoll(take: (i: number) => boolean, now: number): number[] {
    const chosen: number[] = [];
    for (const i of this.#order) {
      if (this.spares <= 0) break;
      if (this.#inFlight[i] || this.#restUntil[i]! > now || !take(i)) continue;
      this.#inFlight[i] = true;
      this.#polls++;
      chosen.push(i);
    }
    return chosen;
  }

  /** Queue `i`'s poll returned `count` messages of the `max` it asked for. */
  delivered(i: number, count: number, max: number): Delivery {
    this.#end(i);
    const taker = this.#take(this.#first(this.#leaving) ?? this.#first(this.#members)!);
    return { taker, wake: count >= max ? this.wakeSpares(RAMP_UP_WAKES) : [] };
  }

  /**
   * Queue `i`'s poll returned nothing, or failed (`failed`: no rest, its back-off is the Receiver's).
   * `uncovered`: how many queues could be polled now and have no poll, this one included.
   */
  emptied(i: number, failed: boolean, now: number, uncovered: number): EmptyEnd {
    this.#end(i);
    if (!failed) this.#restUntil[i] = now + this.#restMs;
    const leaving = this.#first(this.#leaving);
    if (leaving !== undefined) return { member: this.#take(leaving), reason: 'leaving' };
    const first = this.#first(this.#members);
    if (first === undefined) return { member: undefined, reason: undefined };
    if (failed) return { member: this.#take(first), reason: 'failed' };
    // Fewer members than queues: the one this poll held reads every queue before it joins again.
    if (uncovered > this.spares) return { member: this.#take(first), reason: 'pass' };
    return { member: undefined, reason: undefined };
  }

  /** Up to `n` spares go back to their passes (the ones that waited longest first). */
  wakeSpares(n: number): Member[] {
    const woken: Member[] = [];
    for (const m of this.#members) {
      if (woken.length >= n || this.spares - woken.length <= 0) break;
      if (!this.#leaving.has(m)) woken.push(m);
    }
    for (const m of woken) this.#members.delete(m);
    return woken;
  }

  /** When the first queue without a poll has rested (undefined: none is resting). */
  restEnd(now: number): number | undefined {
    let at: number | undefined;
    this.#restUntil.forEach((t, i) => {
      if (!this.#inFlight[i] && t > now && (at === undefined || t < at)) at = t;
    });
    return at;
  }

  #end(i: number): void {
    if (!this.#inFlight[i]) throw new Error(`no poll in flight on queue ${i}`);
    this.#inFlight[i] = false;
    this.#polls--;
  }

  #take(member: Member): Member {
    this.#members.delete(member);
    this.#leaving.delete(member);
    return member;
  }

  #first(set: ReadonlySet<Member>): Member | undefined {
    for (const m of set) return m;
    return undefined;
  }
}
