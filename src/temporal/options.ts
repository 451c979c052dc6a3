// Temporal spillover options: their flags (each also WORKERLESS_TEMPORAL_* and a config-file key) and their
// resolution into a frozen, fully defaulted TemporalConfig, read with the same OptionReader as every other
// option so that precedence (flag > env > file > default) and error messages are the same.
import { camel, type OptionDef } from '../cli.ts';
import type { OptionReader } from '../option-reader.ts';

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

export const temporalDefaults = Object.freeze({
  address: 'localhost:7233',
  namespace: 'default',
  maxWorkers: 10,
  workerLifetimeMs: 600_000,
  workerStartTimeoutMs: 30_000,
  pollIntervalMs: 5_000,
  backlogThreshold: 0,
  coolOffMs: 10_000,
  tasksPerWorker: 10,
});

const GROUP = 'Temporal spillover (optional):';
const DURATION = 'a duration such as 500ms, 5s or 10m; a bare number means seconds';

export const TEMPORAL_OPTIONS: readonly OptionDef[] = [
  {
    flag: 'temporal-address',
    group: GROUP,
    describe: 'Temporal frontend host:port',
    defaultText: temporalDefaults.address,
  },
  { flag: 'temporal-namespace', group: GROUP, describe: 'Temporal namespace', defaultText: temporalDefaults.namespace },
  {
    flag: 'temporal-task-queues',
    group: GROUP,
    describe: 'Task queues to give spillover capacity to (comma-separated); setting it turns spillover on',
  },
  {
    flag: 'temporal-function',
    group: GROUP,
    describe: 'Lambda function (name, ARN or name:alias) that hosts the Temporal worker; required with spillover',
  },
  {
    flag: 'temporal-max-workers',
    group: GROUP,
    describe: 'Maximum workers alive at once per task queue, 1-1000',
    defaultText: String(temporalDefaults.maxWorkers),
  },
  {
    flag: 'temporal-max-workers-total',
    group: GROUP,
    describe: 'Maximum workers alive at once across all task queues together, 1-100000',
    defaultText: 'no total limit',
  },
  {
    flag: 'temporal-worker-lifetime',
    group: GROUP,
    describe: `How long one worker invocation runs: the function's timeout, 1s-15m; ${DURATION}`,
    defaultText: '10m',
  },
  {
    flag: 'temporal-worker-start-timeout',
    group: GROUP,
    describe: `How long an invoked worker may take to start polling; one that has not by then counts as lost and is told not to start later, 1s-15m; ${DURATION}`,
    defaultText: '30s',
  },
  {
    flag: 'temporal-poll-interval',
    group: GROUP,
    describe: `How often to read each task queue's backlog, 100ms-5m; ${DURATION}`,
    defaultText: '5s',
  },
  {
    flag: 'temporal-backlog-threshold',
    group: GROUP,
    describe: 'Spill over only when more tasks than this are waiting, 0-1000000',
    defaultText: String(temporalDefaults.backlogThreshold),
  },
  {
    flag: 'temporal-max-backlog-age',
    group: GROUP,
    describe: `Spill over as soon as the oldest waiting task is older than this, even below the backlog threshold, 100ms-1h; ${DURATION}`,
    defaultText: 'off',
  },
  {
    flag: 'temporal-cool-off',
    group: GROUP,
    describe: `Minimum time between scale-ups, and how long a backlog must last while other workers poll before spillover joins in, 0-10m; ${DURATION}`,
    defaultText: '10s',
  },
  {
    flag: 'temporal-tasks-per-worker',
    group: GROUP,
    describe: 'Backlog one worker is expected to absorb (desired workers = backlog / this), 1-100000',
    defaultText: String(temporalDefaults.tasksPerWorker),
  },
  {
    flag: 'temporal-versions',
    group: GROUP,
    describe: 'Worker Versioning: the function to invoke for each Build ID, "BUILD_ID=FUNCTION,..." (FUNCTION: name:alias, name:version or a qualified ARN); a list in the config file',
    defaultText: '--temporal-function for every version',
  },
  {
    flag: 'temporal-tls',
    group: GROUP,
    describe: 'Connect with TLS',
    defaultText: 'true when an API key, client certificate or CA is given, else false',
    boolean: true,
  },
  { flag: 'temporal-tls-cert', group: GROUP, describe: 'PEM client certificate for mTLS (path; needs --temporal-tls-key)' },
  { flag: 'temporal-tls-key', group: GROUP, describe: 'PEM client private key for mTLS (path; needs --temporal-tls-cert)' },
  { flag: 'temporal-tls-ca', group: GROUP, describe: 'PEM CA certificates to trust instead of the system roots (path)' },
  { flag: 'temporal-tls-server-name', group: GROUP, describe: 'TLS server name to verify, when it differs from the address host' },
  { flag: 'temporal-api-key', group: GROUP, describe: 'Temporal Cloud API key (implies TLS); prefer the env var over the flag', secret: true },
];

/**
 * Validates the Temporal options. Problems go to the reader (one per invalid option, with the rest of the
 * configuration's); returns undefined when spillover is not configured (no task queues) or when a problem
 * was found. The TLS certificate, key and CA files must be readable (checked through the reader's FileCheck).
 */
export function resolveTemporalConfig(r: OptionReader): TemporalConfig | undefined {
  if (!r.has('temporalTaskQueues')) {
    // Without task queues spillover is off, so any other Temporal option would be silently ignored: a
    // namespace from a shared env file or a misspelt task-queue variable would start a daemon that does nothing.
    for (const d of TEMPORAL_OPTIONS) {
      const name = camel(d.flag);
      if (name !== 'temporalTaskQueues') r.reject(name, d.flag, 'is only used with --temporal-task-queues (none given)', { secret: d.secret ?? false });
    }
    return undefined;
  }
  const before = r.problems.length;

  const address = r.string('temporalAddress', 'temporal-address') ?? temporalDefaults.address;
  if (!/^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):\d{1,5}$/.test(address)) {
    r.problem(`--temporal-address must be host:port, got ${JSON.stringify(address)}`);
  }
  const namespace = r.string('temporalNamespace', 'temporal-namespace') ?? temporalDefaults.namespace;
  const taskQueues = taskQueueList(r);
  const functionName = r.string('temporalFunction', 'temporal-function');
  if (functionName === undefined) {
    r.problem('--temporal-function is required with --temporal-task-queues (env WORKERLESS_TEMPORAL_FUNCTION): the function that hosts the Temporal worker');
  }
  const maxWorkers = r.number('temporalMaxWorkers', 'temporal-max-workers', 1, 1000) ?? temporalDefaults.maxWorkers;
  const maxWorkersTotal = r.number('temporalMaxWorkersTotal', 'temporal-max-workers-total', 1, 100_000);
  const workerLifetimeMs = r.durationMs('temporalWorkerLifetime', 'temporal-worker-lifetime', 1_000, 900_000) ?? temporalDefaults.workerLifetimeMs;
  const workerStartTimeoutMs =
    r.durationMs('temporalWorkerStartTimeout', 'temporal-worker-start-timeout', 1_000, 900_000) ?? Math.min(temporalDefaults.workerStartTimeoutMs, workerLifetimeMs);
  if (workerStartTimeoutMs > workerLifetimeMs && r.has('temporalWorkerStartTimeout')) {
    r.reject('temporalWorkerStartTimeout', 'temporal-worker-start-timeout', `must not exceed --temporal-worker-lifetime (${workerLifetimeMs} ms)`);
  }
  const pollIntervalMs = r.durationMs('temporalPollInterval', 'temporal-poll-interval', 100, 300_000) ?? temporalDefaults.pollIntervalMs;
  const backlogThreshold = r.number('temporalBacklogThreshold', 'temporal-backlog-threshold', 0, 1_000_000) ?? temporalDefaults.backlogThreshold;
  const maxBacklogAgeMs = r.durationMs('temporalMaxBacklogAge', 'temporal-max-backlog-age', 100, 3_600_000);
  const coolOffMs = r.durationMs('temporalCoolOff', 'temporal-cool-off', 0, 600_000) ?? temporalDefaults.coolOffMs;
  const tasksPerWorker = r.number('temporalTasksPerWorker', 'temporal-tasks-per-worker', 1, 100_000) ?? temporalDefaults.tasksPerWorker;
  const versionFunctions = versionFunctionMap(r);

  const apiKey = r.string('temporalApiKey', 'temporal-api-key');
  // Read now: the connection only reads them when it connects, and would retry an unreadable file forever.
  const certPath = r.readablePath('temporalTlsCert', 'temporal-tls-cert');
  const keyPath = r.readablePath('temporalTlsKey', 'temporal-tls-key');
  const caPath = r.readablePath('temporalTlsCa', 'temporal-tls-ca');
  const serverName = r.string('temporalTlsServerName', 'temporal-tls-server-name');
  // has(), not the paths: an unreadable file is reported once, not also as half a pair.
  if (r.has('temporalTlsCert') !== r.has('temporalTlsKey')) {
    r.problem('--temporal-tls-cert and --temporal-tls-key must be given together (mTLS needs both)');
  }
  const tlsDefault = apiKey !== undefined || ['temporalTlsCert', 'temporalTlsKey', 'temporalTlsCa', 'temporalTlsServerName'].some((n) => r.has(n));
  const tlsOn = r.boolean('temporalTls', 'temporal-tls') ?? tlsDefault;
  if (!tlsOn && tlsDefault) {
    r.problem('--temporal-tls is false but an API key or TLS certificate option is set: those need TLS');
  }

  if (r.problems.length > before || functionName === undefined) return undefined;
  return Object.freeze({
    address,
    namespace,
    taskQueues: Object.freeze(taskQueues),
    functionName,
    maxWorkers,
    maxWorkersTotal,
    workerLifetimeMs,
    workerStartTimeoutMs,
    pollIntervalMs,
    backlogThreshold,
    maxBacklogAgeMs,
    coolOffMs,
    tasksPerWorker,
    versionFunctions,
    tls: tlsOn ? Object.freeze({ certPath, keyPath, caPath, serverName }) : undefined,
    apiKey,
  });
}

/** The config with the API key masked, for logging. */
export function redactTemporalConfig(config: TemporalConfig): Omit<TemporalConfig, 'apiKey'> & { apiKey?: string } {
  return { ...config, ...(config.apiKey !== undefined ? { apiKey: '***' } : {}) };
}

/** Comma-separated names (a YAML list arrives joined with commas), trimmed and without duplicates. */
function taskQueueList(r: OptionReader): string[] {
  const value = r.string('temporalTaskQueues', 'temporal-task-queues');
  const names: string[] = [];
  for (const part of (value ?? '').split(',')) {
    const name = part.trim();
    if (name === '') continue;
    if (name.length > 1000) r.problem(`--temporal-task-queues names must be at most 1000 characters, got ${JSON.stringify(name.slice(0, 40) + '...')}`);
    else if (!names.includes(name)) names.push(name);
  }
  // A value such as " , " (a list of blanks); a value of the wrong type was reported by r.string().
  if (names.length === 0 && value !== undefined) r.reject('temporalTaskQueues', 'temporal-task-queues', 'needs at least one task queue name');
  return names;
}

/** "v1=fn:1,v2=fn:2" (a YAML list arrives joined with commas) -> { v1: 'fn:1', v2: 'fn:2' }, frozen. */
function versionFunctionMap(r: OptionReader): Readonly<Record<string, string>> {
  const value = r.string('temporalVersions', 'temporal-versions');
  const entries: Array<[string, string]> = [];
  for (const part of (value ?? '').split(',')) {
    const entry = part.trim();
    if (entry === '') continue;
    // Function names and ARNs never contain "=", Build IDs may: split at the last one.
    const at = entry.lastIndexOf('=');
    const buildId = entry.slice(0, Math.max(0, at)).trim();
    const fn = entry.slice(at + 1).trim();
    if (at <= 0 || buildId === '' || !/^[A-Za-z0-9_:.$-]{1,256}$/.test(fn)) {
      r.problem(`--temporal-versions entries must be BUILD_ID=FUNCTION (e.g. v1=temporal-worker:1), got ${JSON.stringify(entry)}${originText(r)}`);
    } else if (entries.some(([id]) => id === buildId)) {
      r.problem(`--temporal-versions names Build ID ${JSON.stringify(buildId)} twice${originText(r)}`);
    } else {
      entries.push([buildId, fn]);
    }
  }
  return Object.freeze(Object.fromEntries(entries));
}

function originText(r: OptionReader): string {
  const origin = r.origin('temporalVersions');
  return origin === undefined || origin === '--temporal-versions' ? '' : ` (from ${origin})`;
}
