/**
 * The concurrency budget's port: a ceiling is one bound on the invocations a route runs at once, and the gate
 * (src/invoke/concurrency-gate.ts) keeps to the lowest of the ceilings handed to it, as Temporal's worker asks its
 * slot supplier before each poll. The fixed --concurrency is always one; the adaptive limit (adaptive-ceiling.ts)
 * and the Managed Instances growth cap (growth-ceiling.ts) join it with --adaptive-concurrency; a fleet's share of
 * the budget is one more. A ceiling that needs the time reads its own clock, so that one that does not (the fixed
 * one) costs no clock read per message.
 */
export interface Ceiling {
  /** Invocations it allows at once now. */
  limit(): number;
  /**
   * Lambda answered an Invoke (`accepted`, whatever the function returned) or throttled it, at `now`: `inUse`
   * invocations were in flight as it ended (itself included), and it took `durationMs`. True when the ceiling's
   * limit moved. Only a ceiling that learns the budget from Lambda's answers has it (the adaptive limit); with one,
   * a throttled batch's back-off also ends early when an invocation is accepted (ConcurrencyGate.throttledBackOff).
   */
  heard?(verdict: 'accepted' | 'throttled', now: number, inUse: number, durationMs: number): boolean;
  /** The gate's invocations in flight changed to `inFlight` (the growth cap follows them). */
  inFlight?(inFlight: number): void;
  /**
   * Milliseconds until its limit can next rise with no event (the growth cap moves on with time): while it holds
   * batches back, the gate looks again then. A ceiling with it moves by itself, and the gate reports such a move
   * as its (`byGrowthCap`).
   */
  msToNextChange?(): number;
}

/** --concurrency: the loops a route runs, each with at most one Invoke in flight. Never moves. */
export class FixedCeiling implements Ceiling {
  readonly #limit: number;

  constructor(limit: number) {
    if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError(`a fixed ceiling must be an integer of at least 1, got ${limit}`);
    this.#limit = limit;
  }

  limit(): number {
    return this.#limit;
  }
}
