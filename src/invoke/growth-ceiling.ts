import type { Ceiling } from './ceiling.ts';
import { GrowthCap, type ConcurrencyGrowth } from './growth-cap.ts';

/**
 * --concurrency-growth as a ceiling: the pure GrowthCap (growth-cap.ts), which follows the gate's invocations in
 * flight and rises with time, read on `now` (a monotonic clock, src/util/clock.ts).
 */
export class GrowthCeiling implements Ceiling {
  readonly #cap: GrowthCap;
  readonly #now: () => number;

  /** `floor`: --min-concurrency, what the function takes at any time. */
  constructor(growth: ConcurrencyGrowth, floor: number, now: () => number) {
    this.#now = now;
    this.#cap = new GrowthCap(growth, floor, now());
  }

  limit(): number {
    return this.#cap.cap(this.#now());
  }

  inFlight(inFlight: number): void {
    this.#cap.observe(this.#now(), inFlight);
  }

  msToNextChange(): number {
    return this.#cap.msToNextChange(this.#now());
  }
}
