import { AdaptiveCeiling } from '../invoke/adaptive-ceiling.ts';
import { FixedCeiling, type Ceiling } from '../invoke/ceiling.ts';
import { ConcurrencyGate, type ConcurrencyGateDeps } from '../invoke/concurrency-gate.ts';
import { FleetCeiling } from '../invoke/fleet-ceiling.ts';
import { GrowthCeiling } from '../invoke/growth-ceiling.ts';
import type { DispatcherOptions } from './dispatcher-options.ts';

/**
 * A route's concurrency budget (src/invoke/concurrency-gate.ts), under the ceilings its options set: always
 * --concurrency; with --adaptive-concurrency also the adaptive limit (from --concurrency down to --min-concurrency)
 * and, with --concurrency-growth, the growth cap; in a fleet with --fleet-concurrency, this replica's share of it
 * (`fleetShare`, src/invoke/fleet-ceiling.ts).
 */
export function concurrencyBudget(
  options: Pick<DispatcherOptions, 'concurrency' | 'adaptiveConcurrency'>,
  deps: ConcurrencyGateDeps,
  fleetShare?: () => number,
): ConcurrencyGate {
  const ceilings: Ceiling[] = [new FixedCeiling(options.concurrency)];
  if (fleetShare !== undefined) ceilings.push(new FleetCeiling(fleetShare));
  const adaptive = options.adaptiveConcurrency;
  if (adaptive !== undefined) {
    const min = Math.min(adaptive.minConcurrency, options.concurrency);
    ceilings.push(new AdaptiveCeiling({ max: options.concurrency, min }, deps.now()));
    if (adaptive.growth) ceilings.push(new GrowthCeiling(adaptive.growth, min, deps.now));
  }
  return new ConcurrencyGate(ceilings, deps);
}
