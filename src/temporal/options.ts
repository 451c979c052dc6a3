// The shape of the Temporal spillover configuration; src/config/temporal.ts validates the options into it. Each
// field names its option; defaults and ranges are written once, in src/config/options.ts.
import type { WorkerSetLimits } from './worker-set-sizing.ts';
export interface TemporalTlsConfig {
  /** --temporal-tls-cert: PEM client certificate for mTLS (path). */
  readonly certPath: string | undefined;
  /** --temporal-tls-key: PEM client private key for mTLS (path). */
  readonly keyPath: string | undefined;
  /** --temporal-tls-ca: PEM CA bundle to trust instead of the system roots (path). */
  readonly caPath: string | undefined;
  /** --temporal-tls-server-name: TLS server name override. */
  readonly serverName: string | undefined;
}

/** Worker sets: the sizing's limits from their options (src/temporal/worker-set-sizing.ts), and where the size goes. */
export interface WorkerSetConfig extends Omit<WorkerSetLimits, 'drainMs'> {
  /** --temporal-ecs-service: the ECS service whose desired count is the set; undefined: the gauge only. */
  readonly ecsService: EcsServiceRef | undefined;
}

export interface TemporalConfig {
  /** --temporal-address: the frontend's host:port. */
  readonly address: string;
  /** --temporal-namespace. */
  readonly namespace: string;
  /** --temporal-task-queues: the task queues to watch (at least one). */
  readonly taskQueues: readonly string[];
  /** --temporal-function: the Lambda function (name, ARN or name:alias) that hosts the Temporal worker. */
  readonly functionName: string;
  /** --temporal-max-workers: workers alive at once per task queue. */
  readonly maxWorkers: number;
  /** --temporal-max-workers-total: workers alive at once across all task queues; undefined: only the per-queue maximum. */
  readonly maxWorkersTotal: number | undefined;
  /** --temporal-worker-lifetime: how long one invoked worker runs (set it to the function's timeout). */
  readonly workerLifetimeMs: number;
  /** --temporal-worker-start-timeout: how long an invoked worker may take to start polling before it counts as lost. */
  readonly workerStartTimeoutMs: number;
  /** --temporal-poll-interval: how often to read the queue statistics. */
  readonly pollIntervalMs: number;
  /** --temporal-backlog-threshold: spill over only when more tasks than this wait. */
  readonly backlogThreshold: number;
  /** --temporal-max-backlog-age: spill over when the oldest task has waited longer, whatever the count; undefined: off. */
  readonly maxBacklogAgeMs: number | undefined;
  /** --temporal-cool-off: minimum time between scale-ups, and how long a backlog must persist while other workers poll. */
  readonly coolOffMs: number;
  /** --temporal-tasks-per-worker: backlog one worker is expected to absorb. */
  readonly tasksPerWorker: number;
  /**
   * --temporal-spill-priority: spill over only for the backlog at priority keys 1 to this (1 is the highest);
   * undefined: every priority. Needs a server that reports stats_by_priority_key per priority (new matcher).
   */
  readonly spillPriority: number | undefined;
  /** --temporal-fairness: the task queue uses fairness keys, so urgency is the oldest task's age (needs --temporal-max-backlog-age). */
  readonly fairness: boolean;
  /**
   * --temporal-versions (Worker Versioning): the function (version or alias) to invoke for each Build ID; empty:
   * invoke --temporal-function for every version. With a mapping, versions it does not name get no spillover.
   */
  readonly versionFunctions: Readonly<Record<string, string>>;
  /** --temporal-worker-set-*: sizing a set of long-lived workers per task queue; undefined: off. */
  readonly workerSet: WorkerSetConfig | undefined;
  /** --temporal-tls and its files; undefined for plain-text connections. */
  readonly tls: TemporalTlsConfig | undefined;
  /** --temporal-api-key: Temporal Cloud API key (implies TLS). Never log it. */
  readonly apiKey: string | undefined;
}

/** The config with the API key masked, for logging. */
export function redactTemporalConfig(config: TemporalConfig): Omit<TemporalConfig, 'apiKey'> & { apiKey?: string } {
  return { ...config, ...(config.apiKey !== undefined ? { apiKey: '***' } : {}) };
}

/**
 * Every function spillover may invoke, each once: --temporal-function (the unversioned queue, and every version
 * when --temporal-versions is empty) and each function --temporal-versions maps a Build ID to, in that order.
 * `workerless check` and the start-up DryRun each of them (the validation invoke).
 */
export function spilloverFunctions(config: Pick<TemporalConfig, 'functionName' | 'versionFunctions'>): string[] {
  return [...new Set([config.functionName, ...Object.values(config.versionFunctions)])];
}

/** `CLUSTER/SERVICE` as --temporal-ecs-service takes it (names or ARNs; the cluster part may be an ARN too). */
export interface EcsServiceRef {
  readonly cluster: string;
  readonly service: string;
}

/** Splits `CLUSTER/SERVICE` at its last '/' (a cluster ARN contains '/'); undefined when either part is empty. */
export function parseEcsService(text: string): EcsServiceRef | undefined {
  const at = text.lastIndexOf('/');
  if (at <= 0 || at === text.length - 1) return undefined;
  return { cluster: text.slice(0, at), service: text.slice(at + 1) };
}
