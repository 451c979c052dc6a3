import type { DeleteMode } from './dispatcher.ts';
import type { RawOptions, RawValue } from './cli.ts';
import { parseQueueList, type QueueList } from './queues/queue-order.ts';
import { resolveTemporalConfig, type TemporalConfig } from './temporal/options.ts';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** The resolved configuration: validated, every default filled in, frozen. */
export interface Config {
  /** --function; required when queues are configured. */
  readonly functionName: string | undefined;
  /** --queues; undefined when only other work (Temporal spillover) is configured. */
  readonly queues: QueueList | undefined;
  /** Default 10. */
  readonly concurrency: number;
  /** Default 20. */
  readonly pollForSec: number;
  /** Default 0. */
  readonly sleepSec: number;
  /** Default 1 (one record per invocation, as Workerless and Laravel Vapor expect). */
  readonly batchSize: number;
  /** Default: each queue's own. */
  readonly visibilityTimeoutSec: number | undefined;
  /** Default on-success. */
  readonly deleteMode: DeleteMode;
  /** Default "default": namespace Workerless-default. */
  readonly name: string;
  readonly metricsNamespace: string;
  /** Default true. */
  readonly metricsEnabled: boolean;
  /** Default 60 s. */
  readonly metricsIntervalMs: number;
  readonly region: string | undefined;
  readonly endpointUrl: string | undefined;
  /** Default 30 s. */
  readonly shutdownTimeoutMs: number;
  /** Default info. */
  readonly logLevel: LogLevel;
  /** Temporal task-queue spillover; undefined when not configured. */
  readonly temporal: TemporalConfig | undefined;
}

export type ConfigResult<T> = { ok: true; config: T } | { ok: false; problems: string[] };

/** Reads typed values out of raw options, recording one problem per invalid value. */
export class OptionReader {
  readonly problems: string[] = [];
  readonly #raw: RawOptions;

  constructor(raw: RawOptions) {
    this.#raw = raw;
  }

  has(name: string): boolean {
    const v = this.#raw.get(name);
    return v !== undefined && !(typeof v.value === 'string' && v.value.trim() === '');
  }

  #fail(flag: string, v: RawValue, what: string): undefined {
    const origin = v.origin === `--${flag}` ? '' : ` (from ${v.origin})`;
    this.problems.push(`--${flag} ${what}, got ${JSON.stringify(display(v.value))}${origin}`);
    return undefined;
  }

  string(name: string, flag: string): string | undefined {
    const v = this.#raw.get(name);
    if (v === undefined) return undefined;
    if (Array.isArray(v.value)) return v.value.every((x) => typeof x === 'string' || typeof x === 'number') ? v.value.join(',') : this.#fail(flag, v, 'must be a string or a list of strings');
    if (typeof v.value === 'object' && v.value !== null) return this.#fail(flag, v, 'must be a string');
    const s = String(v.value).trim();
    return s === '' ? undefined : s;
  }

  number(name: string, flag: string, min: number, max: number, opts: { integer?: boolean } = {}): number | undefined {
    const v = this.#raw.get(name);
    if (v === undefined) return undefined;
    const text = String(v.value).trim();
    const n = Number(text);
    const integer = opts.integer ?? true;
    if (text === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      return this.#fail(flag, v, `must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
    }
    return n;
  }

  boolean(name: string, flag: string): boolean | undefined {
    const v = this.#raw.get(name);
    if (v === undefined) return undefined;
    if (typeof v.value === 'boolean') return v.value;
    const text = String(v.value).trim().toLowerCase();
    if (['', 'on', 'true', '1', 'yes'].includes(text)) return true;
    if (['off', 'false', '0', 'no'].includes(text)) return false;
    return this.#fail(flag, v, 'must be on or off (true/false)');
  }

  oneOf<T extends string>(name: string, flag: string, values: readonly T[]): T | undefined {
    const s = this.string(name, flag);
    if (s === undefined) return undefined;
    if ((values as readonly string[]).includes(s)) return s as T;
    return this.#fail(flag, this.#raw.get(name)!, `must be one of ${values.join(', ')}`);
  }

  matching(name: string, flag: string, pattern: RegExp, what: string): string | undefined {
    const s = this.string(name, flag);
    if (s === undefined) return undefined;
    return pattern.test(s) ? s : this.#fail(flag, this.#raw.get(name)!, what);
  }

  url(name: string, flag: string): string | undefined {
    const s = this.string(name, flag);
    if (s === undefined) return undefined;
    try {
      const u = new URL(s);
      if (u.protocol === 'http:' || u.protocol === 'https:') return s;
    } catch {
      // reported below
    }
    return this.#fail(flag, this.#raw.get(name)!, 'must be an http(s) URL');
  }

  /** Adds a problem that is not about a single value's format. */
  problem(message: string): void {
    this.problems.push(message);
  }

  origin(name: string): string | undefined {
    return this.#raw.get(name)?.origin;
  }
}

function display(value: unknown): unknown {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** name, name:alias/version, full ARN, or partial ARN (account:function:name), as Lambda's Invoke accepts. */
const FUNCTION_PATTERN =
  /^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:|\d{12}:function:)?[a-zA-Z0-9_-]{1,64}(:(\$LATEST|[a-zA-Z0-9_-]{1,128}))?$/;
/** CloudWatch namespaces allow these characters; "Workerless-" takes 11 of the 255. */
const NAME_PATTERN = /^[A-Za-z0-9._\-/#:]{1,244}$/;
const REGION_PATTERN = /^[a-z]{2}(-[a-z]+)+-\d+$/;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Validates raw options and fills in defaults. Every problem is reported, not just the first. `env` supplies
 * the SDK's standard AWS_REGION / AWS_DEFAULT_REGION fallback.
 */
export function resolveConfig(raw: RawOptions, env: NodeJS.ProcessEnv = {}, reader = new OptionReader(raw)): ConfigResult<Config> {
  const r = reader;
  const functionName = r.matching('function', 'function', FUNCTION_PATTERN, 'must be a function name, name:alias or function ARN');
  const queuesText = r.string('queues', 'queues');
  let queues: QueueList | undefined;
  if (queuesText !== undefined) {
    const origin = r.origin('queues');
    const parsed = parseQueueList(queuesText, origin === '--queues' ? '--queues' : `--queues (from ${origin})`);
    for (const p of parsed.problems) r.problem(p);
    queues = parsed.list;
  }
  const name = r.matching('name', 'name', NAME_PATTERN, 'must be 1-244 characters of A-Z a-z 0-9 . _ - / # :') ?? 'default';
  const region = r.matching('region', 'region', REGION_PATTERN, 'must be an AWS region such as us-east-1') ?? (env['AWS_REGION'] || env['AWS_DEFAULT_REGION'] || undefined);
  const config: Config = {
    functionName,
    queues,
    concurrency: r.number('concurrency', 'concurrency', 1, 10_000) ?? 10,
    pollForSec: r.number('pollFor', 'poll-for', 0, 20) ?? 20,
    sleepSec: r.number('sleep', 'sleep', 0, 3600, { integer: false }) ?? 0,
    batchSize: r.number('batchSize', 'batch-size', 1, 10) ?? 1,
    visibilityTimeoutSec: r.number('visibilityTimeout', 'visibility-timeout', 0, 43_200),
    deleteMode: r.oneOf('delete', 'delete', ['on-success', 'never'] as const) ?? 'on-success',
    name,
    metricsNamespace: `Workerless-${name}`,
    metricsEnabled: r.boolean('metrics', 'metrics') ?? true,
    metricsIntervalMs: (r.number('metricsInterval', 'metrics-interval', 1, 3600) ?? 60) * 1000,
    region,
    endpointUrl: r.url('endpointUrl', 'endpoint-url'),
    shutdownTimeoutMs: (r.number('shutdownTimeout', 'shutdown-timeout', 1, 3600) ?? 30) * 1000,
    logLevel: r.oneOf('logLevel', 'log-level', LOG_LEVELS) ?? 'info',
    temporal: resolveTemporalConfig(Object.fromEntries([...raw].map(([k, v]) => [k, v.value])), r.problems),
  };
  const temporalGiven = [...raw.keys()].some((k) => k.startsWith('temporal'));
  if (queuesText === undefined && !temporalGiven) {
    r.problem('--queues is required (env WORKERLESS_QUEUES), unless Temporal spillover is configured (--temporal-task-queues)');
  }
  if (queuesText !== undefined && !r.has('function')) r.problem('--function is required with --queues (env WORKERLESS_FUNCTION)');
  if (region === undefined) r.problem('--region is required (or set AWS_REGION)');
  if (r.problems.length > 0) return { ok: false, problems: r.problems };
  return { ok: true, config: Object.freeze(config) };
}
