import { CORE_OPTIONS, type OptionDef, type RawOptions } from './cli.ts';
import { DELIVERY_OPTIONS, resolveDeliveryConfig, type DeliveryConfig } from './delivery-options.ts';
import { OptionReader } from './option-reader.ts';
import { parseQueueList, type QueueList } from './queues/queue-order.ts';
import { TEMPORAL_OPTIONS, resolveTemporalConfig, type TemporalConfig } from './temporal/options.ts';

/** on-success: delete what the function processed; never: the function deletes its own messages. */
export type DeleteMode = 'on-success' | 'never';

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
  /** Default lean: Receive/Delete/ChangeVisibility/Invoke signed and sent without the SDK (src/aws/hot-path.ts). */
  readonly awsClient: 'lean' | 'sdk';
  /** Default 30 s. */
  readonly shutdownTimeoutMs: number;
  /** Default info. */
  readonly logLevel: LogLevel;
  /** --http-port; undefined: no HTTP server. */
  readonly httpPort: number | undefined;
  /** Default 127.0.0.1. */
  readonly httpHost: string;
  /** Temporal task-queue spillover; undefined when not configured. */
  readonly temporal: TemporalConfig | undefined;
  /** --retry-backoff; undefined (default): failed messages return after their visibility timeout. */
  readonly retryBackoff: DeliveryConfig['retryBackoff'];
  /** Per-queue limits and filters by queue name; empty by default. */
  readonly queueOptions: DeliveryConfig['queueOptions'];
}

export type ConfigResult<T> = { ok: true; config: T } | { ok: false; problems: string[] };

/** Every option the daemon accepts: the SQS dispatcher's and Temporal spillover's. */
export const OPTIONS: readonly OptionDef[] = [...CORE_OPTIONS, ...DELIVERY_OPTIONS, ...TEMPORAL_OPTIONS];

/** name, name:alias/version, full ARN, or partial ARN (account:function:name), as Lambda's Invoke accepts. */
const FUNCTION_PATTERN =
  /^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:|\d{12}:function:)?[a-zA-Z0-9_-]{1,64}(:(\$LATEST|[a-zA-Z0-9_-]{1,128}))?$/;
/** CloudWatch namespaces allow these characters; "Workerless-" takes 11 of the 255. */
const NAME_PATTERN = /^[A-Za-z0-9._\-/#:]{1,244}$/;
const REGION_PATTERN = /^[a-z]{2}(-[a-z]+)+-\d+$/;
/** An IPv4/IPv6 address or a host name: what server.listen() accepts. */
const HOST_PATTERN = /^([A-Za-z0-9.-]{1,253}|[0-9A-Fa-f:.]{2,45})$/;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Validates raw options and fills in defaults. Every problem is reported, not just the first. `env` supplies
 * the SDK's standard AWS_REGION / AWS_DEFAULT_REGION fallback. The only I/O is the reader's check that the
 * Temporal TLS files are readable; pass `new OptionReader(raw, fakeCheck)` to do without real files.
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
  const concurrency = r.number('concurrency', 'concurrency', 1, 10_000) ?? 10;
  const delivery = resolveDeliveryConfig(r, queues, concurrency);
  const config: Config = {
    functionName,
    queues,
    concurrency,
    pollForSec: r.number('pollFor', 'poll-for', 0, 20) ?? 20,
    sleepSec: r.number('sleep', 'sleep', 0, 3600, { integer: false }) ?? 0,
    batchSize: r.number('batchSize', 'batch-size', 1, 10) ?? 1,
    visibilityTimeoutSec: r.number('visibilityTimeout', 'visibility-timeout', 1, 43_200),
    deleteMode: r.oneOf('delete', 'delete', ['on-success', 'never'] as const) ?? 'on-success',
    name,
    metricsNamespace: `Workerless-${name}`,
    metricsEnabled: r.boolean('metrics', 'metrics') ?? true,
    metricsIntervalMs: (r.number('metricsInterval', 'metrics-interval', 1, 3600) ?? 60) * 1000,
    region,
    endpointUrl: r.url('endpointUrl', 'endpoint-url'),
    awsClient: r.oneOf('awsClient', 'aws-client', ['lean', 'sdk'] as const) ?? 'lean',
    shutdownTimeoutMs: (r.number('shutdownTimeout', 'shutdown-timeout', 1, 3600) ?? 30) * 1000,
    logLevel: r.oneOf('logLevel', 'log-level', LOG_LEVELS) ?? 'info',
    httpPort: r.number('httpPort', 'http-port', 1, 65_535),
    httpHost: r.matching('httpHost', 'http-host', HOST_PATTERN, 'must be an IP address or host name such as 0.0.0.0 or ::') ?? '127.0.0.1',
    temporal: resolveTemporalConfig(r),
    retryBackoff: delivery.retryBackoff,
    queueOptions: delivery.queueOptions,
  };
  // has(), not the parsed values: an invalid --queues is reported as such, not also as missing.
  if (!r.has('queues') && !r.has('temporalTaskQueues')) {
    r.problem('nothing to do: --queues (with --function) or --temporal-task-queues (with --temporal-function) is required (env WORKERLESS_QUEUES, WORKERLESS_TEMPORAL_TASK_QUEUES)');
  }
  if (r.has('queues') && !r.has('function')) r.problem('--function is required with --queues (env WORKERLESS_FUNCTION)');
  if (!r.has('queues')) r.reject('function', 'function', 'is only used with --queues (none given)');
  if (region === undefined) r.problem('--region is required (or set AWS_REGION)');
  if (r.problems.length > 0) return { ok: false, problems: r.problems };
  return { ok: true, config: Object.freeze(config) };
}
