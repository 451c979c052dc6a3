import { ConcurrencyLimit, type ConcurrencyLimitPolicy } from './concurrency-limit.ts';
import type { Ceiling } from './ceiling.ts';

/**
 * --adaptive-concurrency as a ceiling: the pure ConcurrencyLimit (concurrency-limit.ts), lowered when Lambda
 * throttles and raised again while invocations succeed, fed what the gate hears of each Invoke.
 */
export class AdaptiveCeiling implements Ceiling {
  readonly #limit: ConcurrencyLimit;

  /** `now`: when the limit starts (at `policy.max`). */
  constructor(policy: ConcurrencyLimitPolicy, now: number) {
    this.#limit = new ConcurrencyLimit(policy, now);
  }

  limit(): number {
    return this.#limit.limit;
  }

  heard(verdict: 'accepted' | 'throttled', now: number, inUse: number, durationMs: number): boolean {
    const change = verdict === 'throttled' ? this.#limit.throttled(now) : this.#limit.accepted(now, inUse, durationMs);
    return change !== undefined;
  }
}
