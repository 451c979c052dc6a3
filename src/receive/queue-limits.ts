/**
 * Per-queue limits, so one queue cannot take every worker loop (Sidekiq capsules, Shoryuken groups, the
 * trigger's per-mapping MaximumConcurrency):
 * - maxConcurrency: at most this many loops hold the queue at once (receiving from it, or invoking and
 *   settling what they received);
 * - minConcurrency: this many loops are reserved for the queue while it may have messages: other queues may
 *   not take them, and a free loop tries a queue below its minimum first, so strict priority cannot starve it;
 * - ratePerSec: invocations per second, as a token bucket of `burst` tokens.
 *
 * A loop acquires a slot before it receives, so it never receives for a queue it may not invoke for; the slot
 * is given back when the batch is settled, or at once (with its token refunded) when the receive returned
 * nothing. Pure state: time (monotonic, src/util/clock.ts) is passed in, and the Receiver does the waiting.
 *
 * Waiting never holds a slot: a batch that waits between Invoke attempts (an unknown outcome held for a
 * visibility timeout, a throttle or not-sent back-off, a paused function) parks its slot, so healthy messages
 * of the queue are not stuck behind it, and unparks it (ahead of new receives) before its next attempt. So
 * maxConcurrency bounds the batches of the queue that are active (receiving, invoking, settling). Parked
 * batches are capped too: a new receive needs active + parked under twice maxConcurrency, so a queue whose
 * invocations keep failing holds at most twice its maximum of batches invisible in this process, never every
 * loop's.
 */

export interface QueueLimit {
  readonly maxConcurrency?: number | undefined;
  readonly minConcurrency?: number | undefined;
  readonly ratePerSec?: number | undefined;
  /** Tokens the bucket holds; default 1 (no bursts: invocations evenly spaced). */
  readonly burst?: number | undefined;
}

/**
 * Tokens the bucket may hold beyond `burst`. A loop takes a token a few milliseconds after it is due (timers,
 * the event loop); without slack those milliseconds would be lost each time and the rate would fall short
 * (measured 9.4/s for 10/s against LocalStack). Less than one token, so no more than `burst` are ever taken at once.
 */
const SLACK_TOKENS = 0.2;

/**
 * A token bucket: `ratePerSec` tokens a second, up to `burst` (plus a fraction of slack), starting with `burst`.
 * Time is an argument, so the bucket is exact under test.
 */
export class TokenBucket {
  readonly #rate: number;
  readonly #burst: number;
  #tokens: number;
  #at: number;

  constructor(ratePerSec: number, burst: number, now: number) {
    if (!(ratePerSec > 0) || !(burst >= 1)) throw new Error(`TokenBucket needs rate > 0 and burst >= 1, got ${ratePerSec}, ${burst}`);
    this.#rate = ratePerSec;
    this.#burst = burst;
    this.#tokens = burst;
    this.#at = now;
  }

  #refill(now: number): void {
    if (now > this.#at) {
      this.#tokens = Math.min(this.#burst + SLACK_TOKENS, this.#tokens + ((now - this.#at) / 1000) * this.#rate);
      this.#at = now;
    }
  }

  /** Whether a token is there now. */
  available(now: number): boolean {
    this.#refill(now);
    return this.#tokens >= 1;
  }

  /** Takes a token if there is one. */
  take(now: number): boolean {
    this.#refill(now);
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Gives back a token that was not used (the receive found nothing). */
  refund(now: number): void {
    this.#refill(now);
    this.#tokens = Math.min(this.#burst + SLACK_TOKENS, this.#tokens + 1);
  }

  /** When the next token is there (now, if one is). */
  nextAt(now: number): number {
    this.#refill(now);
    return this.#tokens >= 1 ? now : now + Math.ceil(((1 - this.#tokens) / this.#rate) * 1000);
  }
}

/**
 * How long a queue that just returned nothing keeps its minimum unreserved and is not tried ahead of the
 * order: reserving loops for an empty queue would idle them, and trying it first on every pass would double
 * the receives. After this, a free loop tries it first again.
 */
export const EMPTY_GRACE_MS = 1_000;

/** Whether a limit is set: without any, the slots are not counted at all. */
function hasLimit(l: QueueLimit): boolean {
  return l.maxConcurrency !== undefined || (l.minConcurrency ?? 0) > 0 || l.ratePerSec !== undefined;
}

/** The slots of every queue (index = the queue's position in --queues) for `concurrency` loops. */
export class QueueSlots {
  readonly #limits: QueueLimit[];
  readonly #concurrency: number;
  readonly #buckets: (TokenBucket | undefined)[];
  readonly #held: number[];
  /** Batches of each queue that parked their slot while they wait. */
  readonly #parked: number[];
  readonly #emptyUntil: number[];
  #active: boolean;

  constructor(limits: readonly (QueueLimit | undefined)[], concurrency: number, now: number) {
    this.#limits = limits.map((l) => l ?? {});
    this.#concurrency = concurrency;
    this.#buckets = this.#limits.map((l) => (l.ratePerSec !== undefined ? new TokenBucket(l.ratePerSec, l.burst ?? 1, now) : undefined));
    this.#held = this.#limits.map(() => 0);
    this.#parked = this.#limits.map(() => 0);
    this.#emptyUntil = this.#limits.map(() => 0);
    this.#active = this.#limits.some(hasLimit);
  }

  /**
   * Queue `i` has this limit from now on (`i` one past the last: a queue that joined the route; `undefined`: none,
   * as for a queue that left it). Its loops held and parked are kept, and its token bucket while its rate stays.
   */
  set(i: number, limit: QueueLimit | undefined, now: number): void {
    const next = limit ?? {};
    const before = this.#limits[i];
    this.#limits[i] = next;
    this.#held[i] ??= 0;
    this.#parked[i] ??= 0;
    this.#emptyUntil[i] ??= 0;
    if (before === undefined || before.ratePerSec !== next.ratePerSec || before.burst !== next.burst) {
      this.#buckets[i] = next.ratePerSec !== undefined ? new TokenBucket(next.ratePerSec, next.burst ?? 1, now) : undefined;
    }
    // Once on, counting stays on: a batch that took no slot while it was off gives back none (giveBack() stops at 0).
    this.#active ||= hasLimit(next);
  }

  /** Whether any limit is configured (without limits every method is a pass-through). */
  get active(): boolean {
    return this.#active;
  }

  /** Loops holding queue `i` now. */
  held(i: number): number {
    return this.#held[i]!;
  }

  /** Batches of queue `i` parked now. */
  parked(i: number): number {
    return this.#parked[i]!;
  }

  /** Whether a loop may receive from queue `i` now. */
  admits(i: number, now: number): boolean {
    if (!this.#active) return true;
    const limit = this.#limits[i]!;
    const max = limit.maxConcurrency;
    if (max !== undefined && (this.#held[i]! >= max || this.#held[i]! + this.#parked[i]! >= 2 * max)) return false;
    if (this.#buckets[i] && !this.#buckets[i].available(now)) return false;
    // A parked batch's loop is busy too: it cannot receive for another queue.
    const busy = this.#held.reduce((a, b) => a + b, 0) + this.#parked.reduce((a, b) => a + b, 0);
    return busy + 1 + this.#reservedBesides(i, now) <= this.#concurrency;
  }

  /** A batch of queue `i` starts to wait between attempts: its slot is free for another batch meanwhile. */
  park(i: number): void {
    if (!this.#active) return;
    if (this.#held[i]! > 0) this.#held[i]!--;
    this.#parked[i]!++;
  }

  /**
   * Takes the slot of a parked batch of queue `i` back, if one is free (only maxConcurrency counts: the batch's
   * rate token was spent at its receive, and its loop is already counted for the minimums).
   */
  unpark(i: number): boolean {
    if (!this.#active) return true;
    const max = this.#limits[i]!.maxConcurrency;
    if (max !== undefined && this.#held[i]! >= max) return false;
    if (this.#parked[i]! > 0) this.#parked[i]!--;
    this.#held[i]!++;
    return true;
  }

  /** Loops other queues still have reserved: their unmet minimums, unless empty lately or unable to take them. */
  #reservedBesides(i: number, now: number): number {
    let reserved = 0;
    this.#limits.forEach((limit, j) => {
      const min = limit.minConcurrency ?? 0;
      // Parked batches are the queue's loops too: they count towards its minimum.
      const loops = this.#held[j]! + this.#parked[j]!;
      if (j === i || min === 0 || loops >= min || this.#emptyUntil[j]! > now) return;
      if (this.#buckets[j] && !this.#buckets[j].available(now)) return;
      reserved += min - loops;
    });
    return reserved;
  }

  /** Takes a slot (and a token) of queue `i`, if admitted. */
  acquire(i: number, now: number): boolean {
    if (!this.admits(i, now)) return false;
    if (this.#buckets[i] && !this.#buckets[i].take(now)) return false;
    this.#held[i]!++;
    return true;
  }

  /**
   * Gives a slot back (`parked`: a parked batch's, ended while it waited). `received: false` (the receive returned nothing) refunds the token and marks the queue
   * empty for EMPTY_GRACE_MS; `true` (a batch was received and is now settled) keeps the token spent.
   */
  giveBack(i: number, received: boolean, now: number, parked = false): void {
    const count = parked ? this.#parked : this.#held;
    if (count[i]! > 0) count[i]!--;
    if (!received) {
      this.#buckets[i]?.refund(now);
      this.#emptyUntil[i] = now + EMPTY_GRACE_MS;
    } else {
      this.#emptyUntil[i] = 0;
    }
  }

  /**
   * This pass's order with the queues below their minimum moved to the front (keeping their relative order),
   * unless they were found empty within EMPTY_GRACE_MS.
   */
  prioritise(order: readonly number[], now: number): number[] {
    if (!this.#active) return [...order];
    const below = (i: number) => {
      const min = this.#limits[i]!.minConcurrency ?? 0;
      return min > 0 && this.#held[i]! + this.#parked[i]! < min && this.#emptyUntil[i]! <= now;
    };
    return [...order.filter(below), ...order.filter((i) => !below(i))];
  }

  /**
   * When a queue that is held back only by its rate limit gets its next token; undefined when none is (the
   * others wait for a slot to be given back).
   */
  nextTokenAt(order: readonly number[], now: number): number | undefined {
    let at: number | undefined;
    for (const i of order) {
      const bucket = this.#buckets[i];
      if (!bucket || bucket.available(now)) continue;
      const t = bucket.nextAt(now);
      if (at === undefined || t < at) at = t;
    }
    return at;
  }
}
