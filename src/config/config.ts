/**
 * The configuration passes three named stages, each in its file (Temporal's WorkerOptions -> addDefaults ->
 * compile is the model):
 *
 *   1. raw            cli.ts            collectOptions() -> RawOptions: flags, WORKERLESS_* env and the --config
 *                                       file as given, keyed by flag (kebab-case), each with where it came from
 *   2. with defaults  with-defaults.ts  addDefaults(raw) -> OptionsWithDefaults: each option typed and checked by
 *                                       its definition in options.ts, its default filled in
 *   3. compiled       config.ts         compileConfig() -> Config: the rules across options, camelCase, frozen
 *
 * options.ts is the table every stage reads: each option once, with its range and default, and the nested
 * settings (which route options a route gives itself, the keys of `queue-options`).
 */
import { isValidRegion, regionFromEnv, type RegionSetting } from './region.ts';
import type { RawOptions } from './cli.ts';
import { addDefaults, type OptionsWithDefaults } from './with-defaults.ts';
import type { OptionValue } from './options.ts';
import { resolveRoutes } from './routes.ts';
import { type RouteConfig } from '../dispatch/route.ts';
import { resolveTemporalConfig } from './temporal.ts';
import { resolveFleetConfig } from './fleet.ts';
import type { FleetConfig } from '../fleet/options.ts';
import type { TemporalConfig } from '../temporal/options.ts';

/** Every option the daemon accepts, defined once in options.ts. */
export { OPTIONS } from './options.ts';

export type { RouteConfig } from '../dispatch/route.ts';
export { totalLoops, totalQueues } from './routes.ts';

export type LogLevel = OptionValue<'log-level'>;

/**
 * The compiled configuration (stage 3): validated, every default filled in, camelCase, frozen. Each field names
 * its option; defaults and ranges are defined once, in options.ts (and shown by --help and docs/configuration.md).
 */
export interface Config {
  /**
   * The SQS work: one route per function (src/config/routes.ts), each with its own pool. From the flags when --queues
   * is given, from the `routes` list of the --config file otherwise; empty when only Temporal spillover runs.
   */
  readonly routes: readonly RouteConfig[];
  /** --name; the CloudWatch namespace is Workerless-<name>. */
  readonly name: string;
  readonly metricsNamespace: string;
  /** --metrics. */
  readonly metricsEnabled: boolean;
  /** --metrics-interval, in milliseconds. */
  readonly metricsIntervalMs: number;
  /** --metrics-per-queue: per-queue series in /metrics and CloudWatch, or aggregated (src/operator/metrics/queue-series.ts). */
  readonly metricsPerQueue: 'auto' | 'on' | 'off';
  /** --region, else the SDK's chain (AWS_REGION, the shared config profile, ...: src/config/region.ts), as configured (`fips-us-east-1` too). */
  readonly region: string;
  /** Where the region came from: `--region`, `AWS_REGION`, `region of profile "default" in the shared config`... */
  readonly regionOrigin: string;
  readonly endpointUrl: string | undefined;
  /** --aws-client; lean: Receive/Delete/ChangeVisibility/Invoke signed and sent without the SDK (src/aws/adapters.ts). */
  readonly awsClient: 'lean' | 'sdk';
  /** --shutdown-timeout, in milliseconds. */
  readonly shutdownTimeoutMs: number;
  /** --log-level. */
  readonly logLevel: LogLevel;
  /** --replicas: copies of the daemon that run this configuration; only `workerless check` reads it. */
  readonly replicas: number;
  /** --http-port; undefined: no HTTP server. */
  readonly httpPort: number | undefined;
  /** --http-host. */
  readonly httpHost: string;
  /** --http-allowed-hosts, split at the commas; empty by default. */
  readonly httpAllowedHosts: readonly string[];
  /** Temporal task-queue spillover; undefined when not configured. */
  readonly temporal: TemporalConfig | undefined;
  /** The fleet this replica shares its work with (--fleet-table...); undefined: on its own. */
  readonly fleet: FleetConfig | undefined;
}

export type ConfigResult<T> = { ok: true; config: T } | { ok: false; problems: string[] };

/**
 * Raw options to the compiled Config, through the three stages: `addDefaults(raw)`, then `compileConfig()`.
 * Every problem is reported, not just the first. The only I/O is the check that the Temporal TLS files are
 * readable; pass `addDefaults(raw, fakeCheck)` as `options` to do without real files.
 */
export function resolveConfig(
  raw: RawOptions,
  env: NodeJS.ProcessEnv = {},
  options: OptionsWithDefaults = addDefaults(raw),
  awsRegion?: RegionSetting,
): ConfigResult<Config> {
  return compileConfig(options, env, awsRegion);
}

/**
 * Stage 3, compile: the options with defaults to the frozen Config, checking the rules across options (a route's
 * in routes.ts, delivery-options.ts and batch-window-rules.ts, Temporal's in temporal.ts). Without --region, the
 * region is `awsRegion`, what the SDK's chain found (loadAwsRegion() in src/config/region.ts: the environment, the
 * shared config profile...), or when not given, AWS_REGION / AWS_DEFAULT_REGION in `env`.
 */
export function compileConfig(options: OptionsWithDefaults, env: NodeJS.ProcessEnv = {}, awsRegion?: RegionSetting): ConfigResult<Config> {
  const r = options;
  const routes = resolveRoutes(r);
  const name = r.read('name');
  const flagRegion = r.read('region');
  const region: RegionSetting | undefined =
    flagRegion !== undefined ? { value: flagRegion, origin: r.origin('region') ?? '--region' } : (awsRegion ?? regionFromEnv(env));
  const config: Config = {
    routes,
    name,
    metricsNamespace: `Workerless-${name}`,
    metricsEnabled: r.read('metrics'),
    metricsIntervalMs: r.read('metrics-interval') * 1000,
    metricsPerQueue: r.read('metrics-per-queue'),
    region: region?.value ?? '',
    regionOrigin: region?.origin ?? '',
    endpointUrl: r.read('endpoint-url'),
    awsClient: r.read('aws-client'),
    shutdownTimeoutMs: r.read('shutdown-timeout') * 1000,
    logLevel: r.read('log-level'),
    replicas: r.read('replicas'),
    httpPort: r.read('http-port'),
    httpHost: r.read('http-host'),
    httpAllowedHosts: (r.read('http-allowed-hosts') ?? '')
      .split(',')
      .map((h) => h.trim())
      .filter((h) => h !== ''),
    temporal: resolveTemporalConfig(r),
    fleet: resolveFleetConfig(r, routes),
  };
  // has(), not the parsed values: an invalid --queues is reported as such, not also as missing.
  if (!r.has('queues') && !r.has('queues-prefix') && !r.has('queues-tag') && !r.has('routes') && !r.has('temporal-task-queues')) {
    r.problem(
      'nothing to do: --queues (with --function), routes in the --config file, or --temporal-task-queues (with --temporal-function) is required (env WORKERLESS_QUEUES, WORKERLESS_TEMPORAL_TASK_QUEUES)',
    );
  }
  if (region === undefined) r.problem('--region is required (or set AWS_REGION, or region in the shared config profile)');
  // The SDK refuses such a region on every call; it would go into the endpoints' host names.
  else if (!isValidRegion(region.value)) {
    r.problem(
      `--region must be an AWS region such as us-east-1 (a valid host name label), got ${JSON.stringify(region.value)}${region.origin === '--region' ? '' : ` (from ${region.origin})`}`,
    );
  }
  // An invalid value outside `routes` is read again by every route that inherits it: report it once.
  if (r.problems.length > 0) return { ok: false, problems: [...new Set(r.problems)] };
  return { ok: true, config: Object.freeze(config) };
}
