// The shape of the Temporal spillover configuration; src/config/temporal.ts validates the options into it.
export interface TemporalTlsConfig {
  /** PEM client certificate for mTLS (path). */
  readonly certPath: string | undefined;
  /** PEM client private key for mTLS (path). */
  readonly keyPath: string | undefined;
  /** PEM CA bundle to trust instead of the system roots (path). */
  readonly caPath: string | undefined;
  /** TLS server name override. */
  readonly serverName: string | undefined;
}

export interface TemporalConfig {
  /** Frontend host:port; default localhost:7233. */
  readonly address: string;
  /** Default "default". */
  readonly namespace: string;
  /** Task queues to watch (at least one). */
  readonly taskQueues: readonly string[];
  /** The Lambda function (name, ARN or name:alias) that hosts the Temporal worker. */
  readonly functionName: string;
  /** Workers alive at once per task queue; default 10. */
  readonly maxWorkers: number;
  /** Workers alive at once across all task queues; undefined (default) = only the per-queue maximum. */
  readonly maxWorkersTotal: number | undefined;
  /** How long one invoked worker runs (set it to the function's timeout); default 600 s. */
  readonly workerLifetimeMs: number;
  /** How long an invoked worker may take to start polling before it counts as lost; default 30 s. */
  readonly workerStartTimeoutMs: number;
  /** How often to read the queue statistics; default 5 s. */
  readonly pollIntervalMs: number;
  /** Spill over only when more tasks than this wait; default 0. */
  readonly backlogThreshold: number;
  /** Spill over when the oldest task has waited longer than this, whatever the count; undefined (default) = off. */
  readonly maxBacklogAgeMs: number | undefined;
  /** Minimum time between scale-ups, and how long a backlog must persist while other workers poll; default 10 s. */
  readonly coolOffMs: number;
  /** Backlog one worker is expected to absorb; default 10. */
  readonly tasksPerWorker: number;
  /**
   * Worker Versioning: the function (version or alias) to invoke for each Build ID; empty (default) = invoke
   * --temporal-function for every version. With a mapping, versions it does not name get no spillover.
   */
  readonly versionFunctions: Readonly<Record<string, string>>;
  /** TLS settings, undefined for plain-text connections. */
  readonly tls: TemporalTlsConfig | undefined;
  /** Temporal Cloud API key (implies TLS). Never log it. */
  readonly apiKey: string | undefined;
}

/** The config with the API key masked, for logging. */
export function redactTemporalConfig(config: TemporalConfig): Omit<TemporalConfig, 'apiKey'> & { apiKey?: string } {
  return { ...config, ...(config.apiKey !== undefined ? { apiKey: '***' } : {}) };
}
