/**
 * Adaptive concurrency (--adaptive-concurrency): how many invocations may run at once, lowered when
 * Lambda throttles and raised again while invocations succeed. Replicas that share one function learn its
 * reserved (or account) concurrency this way without talking to each other, as TCP senders share a link:
 * every replica sees throttles when their sum passes the budget, and every one backs off.
 *
 * Pure: the caller passes the time; as a ceiling (adaptive-ceiling.ts) it is one of those ConcurrencyGate
 * (concurrency-gate.ts) keeps to, making loops and invocations wait for it.
 */

import type { ConcurrencyGrowth } from './growth-cap.ts';

/** --adaptive-concurrency on; off (the default) keeps every loop in use, as before. */
export interface AdaptiveConcurrency {
  /** --min-concurrency: the limit never goes below it; default 1. */
  readonly minConcurrency: number;
  /** --concurrency-growth: how fast invocations in flight may grow (growth-cap.ts); undefined (the default): off. */
  readonly growth?: ConcurrencyGrowth;
}

export interface ConcurrencyLimitPolicy {
  /** The highest limit, --concurrency (and the starting point: a single replica is never slowed at start). */
  readonly max: number;
  /** The lowest limit, --min-concurrency. */
  readonly min: number;
  /**
   * At most one decrease per window (default 1 s): the throttles of invocations sent before a decrease
   * describe the old limit, and must not lower the new one again.
   */
  readonly decreaseWindowMs?: number;
  /**
   * One loop more per window in which invocations succeeded, none was throttled and every allowed loop was
   * in use. The window is this (default 1 s) or three mean invocations, whichever is longer: as TCP adds one
   * segment per round trip, a loop more is only tried once the last one has shown what it does. Each replica
   * probes the budget one invocation at a time, so replicas overshoot it now and then, not by a burst.
   */
  readonly increaseWindowMs?: number;
}

/** The decrease keeps the share of invocations that got through in the window, between these bounds. */
const MIN_DECREASE_FACTOR = 0.5;
const MAX_DECREASE_FACTOR = 0.9;
const DEFAULT_DECREASE_WINDOW_MS = 1_000;
const DEFAULT_INCREASE_WINDOW_MS = 1_000;

/** What a call changed: the new limit, or undefined when it stayed. */
export type LimitChange = { from: number; to: number } | undefined;

/**
 * AIMD with a measured decrease: on a throttle, at most once per decrease window, the limit is multiplied by
 * the share of this replica's invocations that Lambda accepted since the last change (at least halved, at
 * least lowered by a tenth, never below `min`; the limit is kept as a fraction and loops are its whole part). Far over the budget (90 loops for 20 slots) most invocations are
 * throttled and the limit halves each window; near the budget one throttle among many successes lowers it by
 * one, so the replicas settle just under the budget instead of swinging between it and half of it. The limit
 * then grows by one per increase window while it is the bottleneck (every allowed loop busy), never while
 * loops sit idle: an idle daemon does not climb back to --concurrency and overshoot on the next burst.
 */
export class ConcurrencyLimit {
  readonly #max: number;
  readonly #min: number;
  readonly #decreaseWindowMs: number;
  readonly #increaseWindowMs: number;
  /** Fractional, so a decrease of a small limit by a tenth is not rounded up to a whole loop. */
  #limit: number;
  /** When the limit last changed (or the controller started). */
  #changedAt: number;
  #lastDecreaseAt = Number.NEGATIVE_INFINITY;
  #lastThrottleAt = Number.NEGATIVE_INFINITY;
  /** Since the last change. */
  #accepted = 0;
  #throttled = 0;
  #saturated = false;
  /** Moving mean of accepted invocations' durations. */
  #meanDurationMs = 0;

  constructor(policy: ConcurrencyLimitPolicy, now: number) {
    if (!(Number.isInteger(policy.min) && Number.isInteger(policy.max) && policy.min >= 1 && policy.min <= policy.max)) {
      throw new RangeError(`concurrency limit bounds must be integers with 1 <= min <= max, got min ${policy.min}, max ${policy.max}`);
    }
    this.#max = policy.max;
    this.#min = policy.min;
    this.#decreaseWindowMs = policy.decreaseWindowMs ?? DEFAULT_DECREASE_WINDOW_MS;
    this.#increaseWindowMs = policy.increaseWindowMs ?? DEFAULT_INCREASE_WINDOW_MS;
    this.#limit = policy.max;
    this.#changedAt = now;
  }

  /** Invocations allowed at once right now. */
  get limit(): number {
    return Math.floor(this.#limit);
  }

  /** Lambda throttled an invocation (429). */
  throttled(now: number): LimitChange {
    this.#throttled++;
    this.#lastThrottleAt = now;
    if (now - this.#lastDecreaseAt < this.#decreaseWindowMs) return undefined;
    this.#lastDecreaseAt = now;
    const share = this.#accepted / (this.#accepted + this.#throttled);
    const factor = Math.min(MAX_DECREASE_FACTOR, Math.max(MIN_DECREASE_FACTOR, share));
    return this.#set(Math.max(this.#min, this.#limit * factor), now);
  }

  /**
   * Lambda accepted an invocation (whatever the function answered) that took `durationMs`. `inUse`: invocations
   * in flight when it ended, this one included.
   */
  accepted(now: number, inUse: number, durationMs = 0): LimitChange {
    this.#accepted++;
    this.#meanDurationMs = this.#meanDurationMs === 0 ? durationMs : 0.8 * this.#meanDurationMs + 0.2 * durationMs;
    const windowMs = Math.max(this.#increaseWindowMs, 3 * this.#meanDurationMs);
    if (inUse >= this.limit) this.#saturated = true;
    // A whole window without a throttle: late throttles of invocations sent before a decrease hold it back too.
    if (!this.#saturated || now - Math.max(this.#changedAt, this.#lastThrottleAt) < windowMs) return undefined;
    return this.#set(Math.min(this.#max, Math.floor(this.#limit) + 1), now);
  }

  #set(to: number, now: number): LimitChange {
    // A new window starts even when the limit is pinned at a bound, so old counts do not decide the next step.
    this.#changedAt = now;
    this.#accepted = 0;
    this.#throttled = 0;
    this.#saturated = false;
    const from = this.limit;
    this.#limit = to;
    return this.limit === from ? undefined : { from, to: this.limit };
  }
}
