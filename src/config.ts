import type { RawOptions } from './cli.ts';
import { resolveDeliveryConfig, type DeliveryConfig } from './delivery-options.ts';
import { OptionReader } from './option-reader.ts';
import type { OptionValue } from './options.ts';
import { parseQueueList, type QueueList } from './queues/queue-order.ts';
import { resolveTemporalConfig, type TemporalConfig } from './temporal/options.ts';

/** Every option the daemon accepts, defined once in options.ts. */
export { OPTIONS } from './options.ts';

/** on-success: delete what the function processed; never: the function deletes its own messages. */
export type DeleteMode = OptionValue<'delete'>;

export type LogLevel = OptionValue<'log-level'>;

/**
 * The resolved configuration: validated, every default filled in, frozen. Each field names its option;
 * defaults and ranges are defined once, in options.ts (and shown by --help and the README).
 */
export interface Config {
  /** --function; required when queues are configured. */
  readonly functionName: string | undefined;
  /** --queues; undefined when only other work (Temporal spillover) is configured. */
  readonly queues: QueueList | undefined;
  /** --concurrency: worker loops. */
  readonly concurrency: number;
  /** --poll-for. */
  readonly pollForSec: number;
  /** --sleep. */
  readonly sleepSec: number;
  /** --batch-size (by default one record per invocation, as Workerless and Laravel Vapor expect). */
  readonly batchSize: number;
  /** --visibility-timeout; undefined: each queue's own. */
  readonly visibilityTimeoutSec: number | undefined;
  /** --delete. */
  readonly deleteMode: DeleteMode;
  /** --name; the CloudWatch namespace is Workerless-<name>. */
  readonly name: string;
  readonly metricsNamespace: string;
  /** --metrics. */
  readonly metricsEnabled: boolean;
  /** --metrics-interval, in milliseconds. */
  readonly metricsIntervalMs: number;
  readonly region: string | undefined;
  readonly endpointUrl: string | undefined;
  /** --aws-client; lean: Receive/Delete/ChangeVisibility/Invoke signed and sent without the SDK (src/aws/hot-path.ts). */
  readonly awsClient: 'lean' | 'sdk';
  /** --shutdown-timeout, in milliseconds. */
  readonly shutdownTimeoutMs: number;
  /** --log-level. */
  readonly logLevel: LogLevel;
  /** --http-port; undefined: no HTTP server. */
  readonly httpPort: number | undefined;
  /** --http-host. */
  readonly httpHost: string;
  /** Temporal task-queue spillover; undefined when not configured. */
  readonly temporal: TemporalConfig | undefined;
  /** --retry-backoff; undefined (default): failed messages return after their visibility timeout. */
  readonly retryBackoff: DeliveryConfig['retryBackoff'];
  /** Per-queue limits and filters by queue name; empty by default. */
  readonly queueOptions: DeliveryConfig['queueOptions'];
  /** --adaptive-concurrency; undefined (default): every loop receives, throttled or not. */
  readonly adaptiveConcurrency: DeliveryConfig['adaptiveConcurrency'];
}

export type ConfigResult<T> = { ok: true; config: T } | { ok: false; problems: string[] };

/**
 * Validates raw options and fills in defaults. Every problem is reported, not just the first. `env` supplies
 * the SDK's standard AWS_REGION / AWS_DEFAULT_REGION fallback. The only I/O is the reader's check that the
 * Temporal TLS files are readable; pass `new OptionReader(raw, fakeCheck)` to do without real files.
 */
export function resolveConfig(raw: RawOptions, env: NodeJS.ProcessEnv = {}, reader = new OptionReader(raw)): ConfigResult<Config> {
  const r = reader;
  const functionName = r.read('function');
  const queuesText = r.read('queues');
  let queues: QueueList | undefined;
  if (queuesText !== undefined) {
    const origin = r.origin('queues');
    const parsed = parseQueueList(queuesText, origin === '--queues' ? '--queues' : `--queues (from ${origin})`);
    for (const p of parsed.problems) r.problem(p);
    queues = parsed.list;
  }
  const name = r.read('name');
  const region = r.read('region') ?? (env['AWS_REGION'] || env['AWS_DEFAULT_REGION'] || undefined);
  const concurrency = r.read('concurrency');
  const delivery = resolveDeliveryConfig(r, queues, concurrency);
  const config: Config = {
    functionName,
    queues,
    concurrency,
    pollForSec: r.read('poll-for'),
    sleepSec: r.read('sleep'),
    batchSize: r.read('batch-size'),
    visibilityTimeoutSec: r.read('visibility-timeout'),
    deleteMode: r.read('delete'),
    name,
    metricsNamespace: `Workerless-${name}`,
    metricsEnabled: r.read('metrics'),
    metricsIntervalMs: r.read('metrics-interval') * 1000,
    region,
    endpointUrl: r.read('endpoint-url'),
    awsClient: r.read('aws-client'),
    shutdownTimeoutMs: r.read('shutdown-timeout') * 1000,
    logLevel: r.read('log-level'),
    httpPort: r.read('http-port'),
    httpHost: r.read('http-host'),
    temporal: resolveTemporalConfig(r),
    retryBackoff: delivery.retryBackoff,
    queueOptions: delivery.queueOptions,
    adaptiveConcurrency: delivery.adaptiveConcurrency,
  };
  // has(), not the parsed values: an invalid --queues is reported as such, not also as missing.
  if (!r.has('queues') && !r.has('temporal-task-queues')) {
    r.problem(
      'nothing to do: --queues (with --function) or --temporal-task-queues (with --temporal-function) is required (env WORKERLESS_QUEUES, WORKERLESS_TEMPORAL_TASK_QUEUES)',
    );
  }
  if (r.has('queues') && !r.has('function')) r.problem('--function is required with --queues (env WORKERLESS_FUNCTION)');
  if (!r.has('queues')) r.reject('function', 'is only used with --queues (none given)');
  if (region === undefined) r.problem('--region is required (or set AWS_REGION)');
  if (r.problems.length > 0) return { ok: false, problems: r.problems };
  return { ok: true, config: Object.freeze(config) };
}
