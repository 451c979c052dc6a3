import { AdaptiveCeiling } from '../invoke/adaptive-ceiling.ts';
import { FixedCeiling, type Ceiling } from '../invoke/ceiling.ts';
import { ConcurrencyGate, type ConcurrencyGateDeps } from '../invoke/concurrency-gate.ts';
import { GrowthCeiling } from '../invoke/growth-ceiling.ts';
import type { DispatcherOptions } from './dispatcher-options.ts';

/**
 * A route's concurrency budget (src/invoke/concurrency-gate.ts), under the ceilings its options set: always
 * --concurrency; with --adaptive-concurrency also the adaptive limit (from --concurrency down to --min-concurrency)
 * and, with --concurrency-growth, the growth cap.
 */
export function concurrencyBudget(
  options: Pick<DispatcherOptions, 'concurrency' | 'adaptiveConcurrency'>,
  deps: ConcurrencyGateDeps,
): ConcurrencyGate {
  const ceilings: Ceiling[] = [new FixedCeiling(options.concurrency)];
  const adaptive = options.adaptiveConcurrency;
  if (adaptive !== undefined) {
    const min = Math.min(adaptive.minConcurrency, options.concurrency);
    ceilings.push(new AdaptiveCeiling({ max: options.concurrency, min }, deps.now()));
    if (adaptive.growth) ceilings.push(new GrowthCeiling(adaptive.growth, min, deps.now));
  }
  return new ConcurrencyGate(ceilings, deps);
}
