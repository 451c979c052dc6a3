import type { Ceiling } from './ceiling.ts';

/**
 * This replica's share of a fleet's budget (--fleet-concurrency over the live members, src/fleet/fleet-share.ts)
 * as one more ceiling of the gate, beside --concurrency and, with --adaptive-concurrency, the adaptive limit and
 * the growth cap; it holds with adaptive concurrency off. It moves when the members do, never by itself: whoever
 * sees the members change tells the gate (ConcurrencyGate.ceilingsMoved). A share of 0 lets no loop receive.
 */
export class FleetCeiling implements Ceiling {
  readonly #share: () => number;

  /** `share`: the invocations this replica may run at once now, as the fleet's view says. */
  constructor(share: () => number) {
    this.#share = share;
  }

  limit(): number {
    return Math.max(0, Math.floor(this.#share()));
  }
}
