/**
 * The settings one queue may be given under `queue-options`: each key's kind and range, the default filter action,
 * and how a range is said in an error. Its own table beside the options (route.ts, daemon.ts, temporal.ts): the
 * keys are a mapping's, not flags.
 */

/** Most loops, or invocations per second, one queue may be given: the pool's own ceiling (--concurrency's). */
const QUEUE_LIMIT_MAX = 10_000;

/**
 * The keys of one queue's mapping under `queue-options` (src/config/delivery-options.ts reads them), in the order
 * an error lists them. `max-concurrency`, `min-concurrency` and `rate` are also set by the `name=N,...` flags
 * (`perQueue` in route.ts), which read them with these ranges; the retry-backoff keys are read through the flags of
 * the same name (their definitions in route.ts). Every key left out is off; `filter-action`'s default is `delete`.
 */
export const QUEUE_SETTINGS = [
  { key: 'max-concurrency', field: 'maxConcurrency', kind: 'integer', min: 1, max: QUEUE_LIMIT_MAX },
  { key: 'min-concurrency', field: 'minConcurrency', kind: 'integer', min: 0, max: QUEUE_LIMIT_MAX },
  /** Invocations per second: any number above 0 (a token bucket). */
  { key: 'rate', field: 'ratePerSec', kind: 'rate', max: QUEUE_LIMIT_MAX },
  { key: 'rate-burst', field: 'burst', kind: 'integer', min: 1, max: QUEUE_LIMIT_MAX },
  /** A list of EventBridge-style patterns, or the trigger's FilterCriteria as is. */
  { key: 'filters', kind: 'filters' },
  { key: 'filter-action', kind: 'enum', values: ['delete', 'leave'], default: 'delete' },
  { key: 'retry-backoff', kind: 'flag' },
  { key: 'retry-backoff-max', kind: 'flag' },
  { key: 'retry-backoff-jitter', kind: 'flag' },
  /** An SQS queue URL or SNS topic ARN, as --failure-destination takes. */
  { key: 'failure-destination', kind: 'destination' },
  { key: 'max-attempts', field: 'maxAttempts', kind: 'integer', min: 1, max: 1000 },
] as const satisfies readonly QueueSettingDef[];

/** A numeric `queue-options` key; `field` is its name in the compiled QueueOptions. */
export type NumericQueueSettingDef =
  | { readonly key: string; readonly field: string; readonly kind: 'integer'; readonly min: number; readonly max: number }
  | { readonly key: string; readonly field: string; readonly kind: 'rate'; readonly max: number };

export type QueueSettingDef =
  | NumericQueueSettingDef
  | { readonly key: string; readonly kind: 'enum'; readonly values: readonly string[]; readonly default: string }
  | { readonly key: string; readonly kind: 'filters' }
  | { readonly key: string; readonly kind: 'destination' }
  /** Read through the flag of the same name. */
  | { readonly key: string; readonly kind: 'flag' };

type FilterActionDef = Extract<(typeof QUEUE_SETTINGS)[number], { key: 'filter-action' }>;
/** delete: a message no filter matches is deleted unseen (the trigger's semantics); leave: it stays on the queue. */
export type FilterAction = FilterActionDef['values'][number];
/** `filter-action` when a queue with filters leaves it out. */
export const FILTER_ACTION_DEFAULT: FilterAction = (queueSettingDef('filter-action') as FilterActionDef).default;

/** What a numeric `queue-options` key must be, as an error says it ("an integer from 1 to 10000"). */
export function queueSettingRange(def: NumericQueueSettingDef): string {
  return def.kind === 'rate'
    ? `a number of invocations per second above 0, at most ${def.max}`
    : `an integer from ${def.min} to ${def.max}`;
}

/** The definition of a `queue-options` key; undefined for a key that is not one. */
export function queueSettingDef(key: string): QueueSettingDef | undefined {
  return (QUEUE_SETTINGS as readonly QueueSettingDef[]).find((s) => s.key === key);
}
