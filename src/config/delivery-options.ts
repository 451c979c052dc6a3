/**
 * Options for delivery control beyond the trigger: retry back-off, per-queue limits and per-queue
 * filters. Every one is off by default, so dispatching behaves as Lambda's SQS trigger does unless asked.
 * Simple values are flags (and WORKERLESS_* env vars); per-queue structure lives under `queue-options` in the
 * --config file (or as JSON in the flag / env var), keyed by queue name or URL as given in --queues:
 *
 *   queue-options:
 *     orders: { max-concurrency: 5, rate: 20, rate-burst: 5, retry-backoff: 2s, retry-backoff-max: 5m }
 *     reports: { min-concurrency: 2, filters: [{ body: { type: [report] } }], filter-action: leave }
 *     audit: { retry-backoff: off }
 *
 * The flags --queue-max-concurrency, --queue-min-concurrency and --queue-rate ("name=value,...") set the same
 * fields and win over the file. A queue's retry-backoff, retry-backoff-max and retry-backoff-jitter take the
 * flags' values and checks; what a queue leaves out comes from the flags (--retry-backoff ...), and
 * `retry-backoff: off` turns the back-off off for that queue alone.
 *
 * A failure destination (--failure-destination, --max-attempts) is set for the route, and per queue with the
 * `queue-options` keys of the same names; a queue's own wins.
 */
import type { QueueOptions } from '../dispatch/queue-options.ts';
import type { AdaptiveConcurrency } from '../invoke/concurrency-limit.ts';
import type { ConcurrencyGrowth } from '../invoke/growth-cap.ts';
import { compileFilter, type EventFilter } from '../receive/event-filter.ts';
import type { RetryBackoff } from '../settle/retry-backoff.ts';
import { DESTINATION_FORMS, parseDestination, type FailureDestination } from '../settle/failure-destination.ts';
import type { RawValue } from './cli.ts';
import { addDefaults, parseDurationMs, type OptionsWithDefaults } from './with-defaults.ts';
import {
  FILTER_ACTION_DEFAULT,
  QUEUE_SETTINGS,
  defaultOf,
  queueSettingDef,
  queueSettingRange,
  type FilterAction,
  type Flag,
  type NumericQueueSettingDef,
  type OptionDef,
  OPTIONS,
} from './options.ts';
import type { QueueList } from '../receive/queue-order.ts';
import { queueNameOf } from '../core/queue.ts';

export interface DeliveryConfig {
  /** --retry-backoff; undefined: kept messages return after their visibility timeout. */
  readonly retryBackoff: RetryBackoff | undefined;
  /** By queue name (the short name, as in logs and metrics). */
  readonly queueOptions: ReadonlyMap<string, QueueOptions>;
  /** --adaptive-concurrency with its --min-concurrency; undefined: every loop receives. */
  readonly adaptiveConcurrency: AdaptiveConcurrency | undefined;
  /** --failure-destination; undefined: none (a queue may have its own). */
  readonly failureDestination: FailureDestination | undefined;
  /** --max-attempts; undefined: only queues with a redrive policy (or their own max-attempts) use a destination. */
  readonly maxAttempts: number | undefined;
}

const QUEUE_KEYS = QUEUE_SETTINGS.map((s) => s.key);
/** The flags that set a `queue-options` key by `name=N,...` lists, with the key's definition. */
const PER_QUEUE_FLAGS = (OPTIONS as readonly OptionDef[]).flatMap((d) => {
  const setting = d.perQueue === undefined ? undefined : queueSettingDef(d.perQueue);
  return setting?.kind === 'integer' || setting?.kind === 'rate' ? [{ flag: d.flag as Flag, setting }] : [];
});

/** The --retry-backoff values given (and valid), which a queue's own settings fall back to. */
interface BackoffGiven {
  readonly baseMs?: number | undefined;
  readonly maxMs?: number | undefined;
  readonly jitter?: number | undefined;
}

interface Draft {
  maxConcurrency?: number;
  minConcurrency?: number;
  ratePerSec?: number;
  burst?: number;
  filter?: EventFilter;
  filterAction?: FilterAction;
  /** The queue's raw retry-backoff settings, by flag, read through the flags' definitions later. */
  backoff?: Map<string, RawValue>;
  failureDestination?: FailureDestination;
  maxAttempts?: number;
}

/**
 * Reads the delivery options. `queues` is the parsed --queues (undefined when it is missing or invalid, in
 * which case per-queue settings cannot be checked against it and are only checked for form).
 */
export function resolveDeliveryConfig(r: OptionsWithDefaults, queues: QueueList | undefined, concurrency: number): DeliveryConfig {
  const backoff = resolveRetryBackoff(r);
  const queueOptions = resolveQueueOptions(r, queues, concurrency, backoff.given);
  return {
    retryBackoff: backoff.policy,
    queueOptions,
    adaptiveConcurrency: resolveAdaptiveConcurrency(r, concurrency),
    ...resolveFailureDestination(r, queueOptions),
  };
}

/**
 * --failure-destination and --max-attempts, checked with the queues' own: max-attempts is only used with a
 * destination, and a destination needs --delete on-success, since workerless deletes a message once its record
 * was accepted. Whether each queue has a redrive policy or max-attempts is checked at start-up (it needs SQS).
 */
function resolveFailureDestination(
  r: OptionsWithDefaults,
  queueOptions: ReadonlyMap<string, QueueOptions>,
): Pick<DeliveryConfig, 'failureDestination' | 'maxAttempts'> {
  const text = r.read('failure-destination');
  const failureDestination = text === undefined ? undefined : parseDestination(text);
  if (text !== undefined && failureDestination === undefined) r.reject('failure-destination', `must be ${DESTINATION_FORMS}`);
  const maxAttempts = r.read('max-attempts');
  const anyOwn = [...queueOptions.values()].some((o) => o.failureDestination !== undefined);
  if (!r.has('failure-destination') && !anyOwn) r.reject('max-attempts', 'is only used with --failure-destination (none given)');
  for (const [name, o] of queueOptions) {
    if (o.maxAttempts !== undefined && o.failureDestination === undefined && !r.has('failure-destination')) {
      r.problem(`queue "${name}": max-attempts is only used with a failure destination (none given)`);
    }
  }
  if ((r.has('failure-destination') || anyOwn) && r.read('delete') === 'never') {
    r.problem('a failure destination needs --delete on-success: workerless deletes a message once the destination accepted its record');
  }
  return { failureDestination, maxAttempts };
}

function resolveAdaptiveConcurrency(r: OptionsWithDefaults, concurrency: number): AdaptiveConcurrency | undefined {
  const minConcurrency = r.read('min-concurrency');
  const adaptive = r.given('adaptive-concurrency');
  if (adaptive !== true) {
    // An invalid --adaptive-concurrency is reported as such, not also as a --min-concurrency without it.
    if (adaptive === false || !r.has('adaptive-concurrency')) {
      r.reject('min-concurrency', 'is only used with --adaptive-concurrency on');
      if (r.read('concurrency-growth') !== 'off') r.reject('concurrency-growth', 'is only used with --adaptive-concurrency on');
    }
    return undefined;
  }
  if (minConcurrency > concurrency) r.problem(`--min-concurrency must not be above --concurrency (${concurrency}), got ${minConcurrency}`);
  const growth = resolveConcurrencyGrowth(r);
  return Object.freeze({ minConcurrency: Math.min(minConcurrency, concurrency), ...(growth ? { growth } : {}) });
}

/** The largest factor and the window range of --concurrency-growth. */
const GROWTH_FACTOR_MAX = 10;
const GROWTH_WINDOW_MS = { min: 1_000, max: 3_600_000 };

/** --concurrency-growth "FACTORx/WINDOW" (the form is checked by its pattern); undefined: off. */
function resolveConcurrencyGrowth(r: OptionsWithDefaults): ConcurrencyGrowth | undefined {
  const text = r.read('concurrency-growth');
  if (text === 'off') return undefined;
  const [factorText = '', windowText = ''] = text.split('/');
  const factor = Number(factorText.slice(0, -1));
  const windowMs = parseDurationMs(windowText);
  if (
    !(factor > 1 && factor <= GROWTH_FACTOR_MAX) ||
    windowMs === undefined ||
    windowMs < GROWTH_WINDOW_MS.min ||
    windowMs > GROWTH_WINDOW_MS.max
  ) {
    r.reject('concurrency-growth', `must have a factor above 1 up to ${GROWTH_FACTOR_MAX} and a window from 1s to 1h`);
    return undefined;
  }
  return Object.freeze({ factor, windowMs });
}

/**
 * The back-off policy read by `r`: the flags, or one queue's settings (`queue` names it) over the flags' values
 * (`inherited`). Returns the values `r` holds too, for the queues to inherit.
 */
function resolveRetryBackoff(
  r: OptionsWithDefaults,
  inherited: BackoffGiven = {},
  queue?: string,
): { policy: RetryBackoff | undefined; given: BackoffGiven } {
  const own = { baseMs: r.given('retry-backoff'), maxMs: r.given('retry-backoff-max'), jitter: r.given('retry-backoff-jitter') };
  if (!r.has('retry-backoff') && inherited.baseMs === undefined) {
    r.reject('retry-backoff-max', 'is only used with --retry-backoff (none given)');
    r.reject('retry-backoff-jitter', 'is only used with --retry-backoff (none given)');
    return { policy: undefined, given: own };
  }
  const baseMs = own.baseMs ?? inherited.baseMs;
  if (baseMs === undefined) return { policy: undefined, given: own };
  // A maximum that was not given here (the default, or the flags' for a queue) never stops a longer first delay:
  // that delay is the maximum then. Only a maximum given with the first delay is checked against it.
  const maxMs = own.maxMs ?? Math.max(inherited.maxMs ?? defaultOf('retry-backoff-max'), baseMs);
  const policy = {
    baseSec: baseMs / 1000,
    maxSec: maxMs / 1000,
    jitter: own.jitter ?? inherited.jitter ?? defaultOf('retry-backoff-jitter'),
  };
  if (policy.maxSec < policy.baseSec) {
    const at = queue === undefined ? '' : `queue "${queue}": `;
    r.problem(`${at}--retry-backoff-max must not be shorter than --retry-backoff (${policy.baseSec}s), got ${policy.maxSec}s`);
  }
  return { policy: Object.freeze(policy), given: own };
}

function resolveQueueOptions(
  r: OptionsWithDefaults,
  queues: QueueList | undefined,
  concurrency: number,
  backoff: BackoffGiven,
): ReadonlyMap<string, QueueOptions> {
  const drafts = new Map<string, Draft>();
  const known = queues ? new Set(queues.queues.map((q) => queueNameOf(q.ref))) : undefined;
  const draftFor = (ref: string, where: string): Draft | undefined => {
    const name = queueNameOf(ref.trim());
    if (known && !known.has(name)) {
      r.problem(`${where} names queue "${ref}", which is not in --queues`);
      return undefined;
    }
    let d = drafts.get(name);
    if (!d) drafts.set(name, (d = {}));
    return d;
  };

  const file = r.structured('queue-options');
  if (file !== undefined) {
    const where = `--queue-options${file.origin === '--queue-options' ? '' : ` (from ${file.origin})`}`;
    if (file.value === null || typeof file.value !== 'object' || Array.isArray(file.value)) {
      r.problem(`${where} must map queue names to settings, got ${JSON.stringify(file.value)}`);
    } else {
      for (const [ref, settings] of Object.entries(file.value as Record<string, unknown>)) {
        const d = draftFor(ref, where);
        if (d) readQueueSettings(r, `${where} ${ref}`, `queue "${ref}" in ${file.origin}`, settings, d);
      }
    }
  }

  // The flags win over the file, field by field.
  for (const { flag, setting } of PER_QUEUE_FLAGS) {
    const text = r.read(flag) as string | undefined;
    if (text === undefined) continue;
    const origin = r.origin(flag);
    const where = `--${flag}${origin === `--${flag}` ? '' : ` (from ${origin})`}`;
    for (const entry of text.split(',')) {
      const at = entry.lastIndexOf('=');
      if (at <= 0) {
        r.problem(`${where} entries take the form name=value, got "${entry.trim()}"`);
        continue;
      }
      const value = settingNumber(setting, entry.slice(at + 1).trim());
      if (value === undefined) {
        r.problem(
          `${where} value for "${entry.slice(0, at).trim()}" must be ${queueSettingRange(setting)}, got "${entry.slice(at + 1).trim()}"`,
        );
        continue;
      }
      const d = draftFor(entry.slice(0, at), where);
      if (d) (d as Record<string, unknown>)[setting.field] = value;
    }
  }

  let reserved = 0;
  const out = new Map<string, QueueOptions>();
  for (const [name, { backoff: backoffRaw, ...d }] of drafts) {
    if (d.minConcurrency !== undefined && d.maxConcurrency !== undefined && d.minConcurrency > d.maxConcurrency) {
      r.problem(`queue "${name}": min-concurrency ${d.minConcurrency} is above its max-concurrency ${d.maxConcurrency}`);
    }
    if (d.burst !== undefined && d.ratePerSec === undefined) r.problem(`queue "${name}": rate-burst is only used with a rate`);
    if (d.filterAction !== undefined && d.filter === undefined) r.problem(`queue "${name}": filter-action is only used with filters`);
    reserved += d.minConcurrency ?? 0;
    const retryBackoff = backoffRaw && queueRetryBackoff(r, name, backoffRaw, backoff);
    out.set(name, Object.freeze({ ...d, filterAction: d.filterAction ?? FILTER_ACTION_DEFAULT, ...(retryBackoff && { retryBackoff }) }));
  }
  if (reserved > concurrency) {
    r.problem(
      `the queues' min-concurrency add up to ${reserved}, more than --concurrency ${concurrency}: the reserved loops must fit in the pool`,
    );
  }
  return out;
}

/**
 * One queue's retry-backoff settings, read and checked by the code that reads the flags (through a reader of
 * its own, so each problem names the queue as where the value came from), over the flags' values.
 */
function queueRetryBackoff(
  r: OptionsWithDefaults,
  name: string,
  raw: Map<string, RawValue>,
  inherited: BackoffGiven,
): RetryBackoff | 'off' | undefined {
  const base = raw.get('retry-backoff');
  const off = base !== undefined && (base.value === false || (typeof base.value === 'string' && base.value.trim().toLowerCase() === 'off'));
  const own = addDefaults(off ? new Map([...raw].filter(([key]) => key !== 'retry-backoff')) : raw);
  let policy: RetryBackoff | 'off' | undefined = 'off';
  if (off) {
    own.reject('retry-backoff-max', `is not used: queue "${name}" has retry-backoff off`);
    own.reject('retry-backoff-jitter', `is not used: queue "${name}" has retry-backoff off`);
  } else {
    policy = resolveRetryBackoff(own, inherited, name).policy;
  }
  for (const p of own.problems) r.problem(p);
  return policy;
}

function readQueueSettings(r: OptionsWithDefaults, where: string, origin: string, settings: unknown, d: Draft): void {
  if (settings === null || typeof settings !== 'object' || Array.isArray(settings)) {
    r.problem(`${where} must be a mapping of ${QUEUE_KEYS.join(', ')}, got ${JSON.stringify(settings)}`);
    return;
  }
  for (const [key, value] of Object.entries(settings as Record<string, unknown>)) {
    const text = typeof value === 'number' || typeof value === 'string' ? String(value).trim() : undefined;
    const bad = (what: string) => r.problem(`${where}: ${key} must be ${what}, got ${JSON.stringify(value)}`);
    const setting = queueSettingDef(key);
    switch (setting?.kind) {
      case 'integer':
      case 'rate': {
        const n = text !== undefined ? settingNumber(setting, text) : undefined;
        if (n === undefined) bad(queueSettingRange(setting));
        else (d as Record<string, unknown>)[setting.field] = n;
        break;
      }
      case 'enum': // filter-action, the one enum key
        if (typeof value === 'string' && setting.values.includes(value)) d.filterAction = value as FilterAction;
        else bad(setting.values.join(' or '));
        break;
      case 'filters': {
        // A list of patterns, or the trigger's FilterCriteria as is: { Filters: [{ Pattern: "..." }] }.
        const list = Array.isArray(value)
          ? value
          : value !== null && typeof value === 'object' && Array.isArray((value as { Filters?: unknown }).Filters)
            ? (value as { Filters: unknown[] }).Filters
            : undefined;
        if (list === undefined) {
          bad('a list of filter patterns (or {"Filters": [{"Pattern": "..."}]})');
          break;
        }
        const compiled = compileFilter(list);
        for (const p of compiled.problems) r.problem(`${where}: filters: ${p}`);
        if (compiled.filter) d.filter = compiled.filter;
        break;
      }
      case 'destination': {
        const destination = typeof value === 'string' ? parseDestination(value) : undefined;
        if (destination === undefined) bad(DESTINATION_FORMS);
        else d.failureDestination = destination;
        break;
      }
      case 'flag':
        // Checked later through the flag's own definition (queueRetryBackoff), over the flags' values.
        (d.backoff ??= new Map()).set(key, { value, origin });
        break;
      case undefined:
        r.problem(`${where}: unknown setting "${key}" (known: ${QUEUE_KEYS.join(', ')})`);
    }
  }
}

/** A numeric `queue-options` value from its text, within the key's range; undefined when it is not. */
function settingNumber(setting: NumericQueueSettingDef, text: string): number | undefined {
  const n = Number(text);
  if (text === '' || !Number.isFinite(n) || n > setting.max) return undefined;
  if (setting.kind === 'rate') return n > 0 ? n : undefined;
  return Number.isInteger(n) && n >= setting.min ? n : undefined;
}
