// Temporal spillover options: yargs definitions (flags, WORKERLESS_TEMPORAL_* env) and their resolution into a
// frozen, fully defaulted TemporalConfig. Defaults live here, not in yargs, so flag > env > file > default holds.
import type { Options } from 'yargs';

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
  /** How long one invoked worker runs (set it to the function's timeout); default 600 s. */
  readonly workerLifetimeMs: number;
  /** How often to read the queue statistics; default 5 s. */
  readonly pollIntervalMs: number;
  /** Spill over only when more tasks than this wait; default 0. */
  readonly backlogThreshold: number;
  /** Minimum time between scale-ups, and how long a backlog must persist while other workers poll; default 10 s. */
  readonly coolOffMs: number;
  /** Backlog one worker is expected to absorb; default 10. */
  readonly tasksPerWorker: number;
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
  pollIntervalMs: 5_000,
  backlogThreshold: 0,
  coolOffMs: 10_000,
  tasksPerWorker: 10,
});

const GROUP = 'Temporal spillover (optional):';
const DURATION = 'a duration such as 500ms, 5s or 10m; a bare number means seconds';

/** yargs option definitions; register them with `.options(temporalYargsOptions)`. */
export const temporalYargsOptions: Record<string, Options> = {
  'temporal-address': {
    type: 'string',
    group: GROUP,
    describe: `Temporal frontend host:port; setting it (or a task queue) turns spillover on [env WORKERLESS_TEMPORAL_ADDRESS] [default: ${temporalDefaults.address}]`,
  },
  'temporal-namespace': {
    type: 'string',
    group: GROUP,
    describe: `Temporal namespace [env WORKERLESS_TEMPORAL_NAMESPACE] [default: ${temporalDefaults.namespace}]`,
  },
  'temporal-task-queues': {
    type: 'string',
    array: true,
    group: GROUP,
    describe:
      'Task queues to give spillover capacity to (repeat the flag or separate with commas) [env WORKERLESS_TEMPORAL_TASK_QUEUES]',
  },
  'temporal-function': {
    type: 'string',
    group: GROUP,
    describe:
      'Lambda function (name, ARN or name:alias) that hosts the Temporal worker; required with spillover [env WORKERLESS_TEMPORAL_FUNCTION]',
  },
  'temporal-max-workers': {
    type: 'string',
    group: GROUP,
    describe: `Maximum workers alive at once per task queue, 1-1000 [env WORKERLESS_TEMPORAL_MAX_WORKERS] [default: ${temporalDefaults.maxWorkers}]`,
  },
  'temporal-worker-lifetime': {
    type: 'string',
    group: GROUP,
    describe: `How long one worker invocation runs: the function's timeout, 1s-15m; ${DURATION} [env WORKERLESS_TEMPORAL_WORKER_LIFETIME] [default: 10m]`,
  },
  'temporal-poll-interval': {
    type: 'string',
    group: GROUP,
    describe: `How often to read each task queue's backlog, 100ms-5m; ${DURATION} [env WORKERLESS_TEMPORAL_POLL_INTERVAL] [default: 5s]`,
  },
  'temporal-backlog-threshold': {
    type: 'string',
    group: GROUP,
    describe: `Spill over only when more tasks than this are waiting, 0-1000000 [env WORKERLESS_TEMPORAL_BACKLOG_THRESHOLD] [default: ${temporalDefaults.backlogThreshold}]`,
  },
  'temporal-cool-off': {
    type: 'string',
    group: GROUP,
    describe: `Minimum time between scale-ups, and how long a backlog must last while other workers poll before spillover joins in, 0-10m; ${DURATION} [env WORKERLESS_TEMPORAL_COOL_OFF] [default: 10s]`,
  },
  'temporal-tasks-per-worker': {
    type: 'string',
    group: GROUP,
    describe: `Backlog one worker is expected to absorb (desired workers = backlog / this), 1-100000 [env WORKERLESS_TEMPORAL_TASKS_PER_WORKER] [default: ${temporalDefaults.tasksPerWorker}]`,
  },
  'temporal-tls': {
    type: 'boolean',
    group: GROUP,
    describe:
      'Connect with TLS [env WORKERLESS_TEMPORAL_TLS] [default: true when an API key, client certificate or CA is given, else false]',
  },
  'temporal-tls-cert': {
    type: 'string',
    group: GROUP,
    describe: 'PEM client certificate for mTLS (path; needs --temporal-tls-key) [env WORKERLESS_TEMPORAL_TLS_CERT]',
  },
  'temporal-tls-key': {
    type: 'string',
    group: GROUP,
    describe: 'PEM client private key for mTLS (path; needs --temporal-tls-cert) [env WORKERLESS_TEMPORAL_TLS_KEY]',
  },
  'temporal-tls-ca': {
    type: 'string',
    group: GROUP,
    describe: 'PEM CA certificates to trust instead of the system roots (path) [env WORKERLESS_TEMPORAL_TLS_CA]',
  },
  'temporal-tls-server-name': {
    type: 'string',
    group: GROUP,
    describe: 'TLS server name to verify, when it differs from the address host [env WORKERLESS_TEMPORAL_TLS_SERVER_NAME]',
  },
  'temporal-api-key': {
    type: 'string',
    group: GROUP,
    describe: 'Temporal Cloud API key (implies TLS); prefer the env var over the flag [env WORKERLESS_TEMPORAL_API_KEY]',
  },
};

type Raw = Readonly<Record<string, unknown>>;

/**
 * Validates the raw Temporal options (camelCase keys as yargs produces them; values may be strings from env
 * or a config file). Pushes one message per invalid option and returns undefined when spillover is not
 * configured (no task queue and no address) or when a problem was found.
 */
export function resolveTemporalConfig(raw: Raw, problems: string[]): TemporalConfig | undefined {
  const taskQueuesRaw = raw['temporalTaskQueues'];
  const addressRaw = raw['temporalAddress'];
  if (isUnset(taskQueuesRaw) && isUnset(addressRaw)) return undefined;
  const before = problems.length;

  const address = str(raw, 'temporalAddress', '--temporal-address', problems) ?? temporalDefaults.address;
  if (!/^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):\d{1,5}$/.test(address)) {
    problems.push(`--temporal-address must be host:port, got ${quote(address)}`);
  }
  const namespace = str(raw, 'temporalNamespace', '--temporal-namespace', problems) ?? temporalDefaults.namespace;
  const taskQueues = taskQueueList(taskQueuesRaw, problems);
  const functionName = str(raw, 'temporalFunction', '--temporal-function', problems);
  if (functionName === undefined) {
    problems.push('--temporal-function is required when Temporal spillover is configured (the function that hosts the worker)');
  }
  const maxWorkers = int(raw, 'temporalMaxWorkers', '--temporal-max-workers', 1, 1000, temporalDefaults.maxWorkers, problems);
  const workerLifetimeMs = duration(raw, 'temporalWorkerLifetime', '--temporal-worker-lifetime', 1_000, 900_000, temporalDefaults.workerLifetimeMs, problems);
  const pollIntervalMs = duration(raw, 'temporalPollInterval', '--temporal-poll-interval', 100, 300_000, temporalDefaults.pollIntervalMs, problems);
  const backlogThreshold = int(raw, 'temporalBacklogThreshold', '--temporal-backlog-threshold', 0, 1_000_000, temporalDefaults.backlogThreshold, problems);
  const coolOffMs = duration(raw, 'temporalCoolOff', '--temporal-cool-off', 0, 600_000, temporalDefaults.coolOffMs, problems);
  const tasksPerWorker = int(raw, 'temporalTasksPerWorker', '--temporal-tasks-per-worker', 1, 100_000, temporalDefaults.tasksPerWorker, problems);

  const apiKey = str(raw, 'temporalApiKey', '--temporal-api-key', problems);
  const certPath = str(raw, 'temporalTlsCert', '--temporal-tls-cert', problems);
  const keyPath = str(raw, 'temporalTlsKey', '--temporal-tls-key', problems);
  const caPath = str(raw, 'temporalTlsCa', '--temporal-tls-ca', problems);
  const serverName = str(raw, 'temporalTlsServerName', '--temporal-tls-server-name', problems);
  if ((certPath === undefined) !== (keyPath === undefined)) {
    problems.push('--temporal-tls-cert and --temporal-tls-key must be given together (mTLS needs both)');
  }
  const tlsDefault = apiKey !== undefined || certPath !== undefined || caPath !== undefined || serverName !== undefined;
  const tlsOn = bool(raw, 'temporalTls', '--temporal-tls', tlsDefault, problems);
  if (!tlsOn && tlsDefault) {
    problems.push('--temporal-tls is false but an API key or TLS certificate option is set: those need TLS');
  }

  if (problems.length > before || functionName === undefined) return undefined;
  return Object.freeze({
    address,
    namespace,
    taskQueues: Object.freeze(taskQueues),
    functionName,
    maxWorkers,
    workerLifetimeMs,
    pollIntervalMs,
    backlogThreshold,
    coolOffMs,
    tasksPerWorker,
    tls: tlsOn ? Object.freeze({ certPath, keyPath, caPath, serverName }) : undefined,
    apiKey,
  });
}

/** The config with the API key masked, for logging. */
export function redactTemporalConfig(config: TemporalConfig): Omit<TemporalConfig, 'apiKey'> & { apiKey?: string } {
  return { ...config, ...(config.apiKey !== undefined ? { apiKey: '***' } : {}) };
}

/** Parses "500ms", "5s", "10m", "1.5s" or a bare number of seconds into milliseconds; undefined if invalid. */
export function parseDurationMs(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : undefined;
  if (typeof value !== 'string') return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(value);
  if (!match) return undefined;
  const amount = Number(match[1]);
  const factor = match[2] === 'ms' ? 1 : match[2] === 'm' ? 60_000 : 1000;
  return Math.round(amount * factor);
}

function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);
}

function quote(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(JSON.stringify(value) ?? value);
}

function str(raw: Raw, key: string, flag: string, problems: string[]): string | undefined {
  const value = raw[key];
  if (isUnset(value)) return undefined;
  if (typeof value !== 'string') {
    problems.push(`${flag} must be a string, got ${quote(value)}`);
    return undefined;
  }
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

function int(raw: Raw, key: string, flag: string, min: number, max: number, fallback: number, problems: string[]): number {
  const value = raw[key];
  if (isUnset(value)) return fallback;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push(`${flag} must be an integer from ${min} to ${max}, got ${quote(value)}`);
    return fallback;
  }
  return n;
}

function duration(raw: Raw, key: string, flag: string, minMs: number, maxMs: number, fallback: number, problems: string[]): number {
  const value = raw[key];
  if (isUnset(value)) return fallback;
  const ms = parseDurationMs(value);
  if (ms === undefined || ms < minMs || ms > maxMs) {
    problems.push(`${flag} must be a duration from ${formatMs(minMs)} to ${formatMs(maxMs)} (e.g. 500ms, 5s, 10m), got ${quote(value)}`);
    return fallback;
  }
  return ms;
}

function bool(raw: Raw, key: string, flag: string, fallback: boolean, problems: string[]): boolean {
  const value = raw[key];
  if (isUnset(value)) return fallback;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|1|yes)$/i.test(value.trim())) return true;
  if (typeof value === 'string' && /^(false|0|no)$/i.test(value.trim())) return false;
  problems.push(`${flag} must be true or false, got ${quote(value)}`);
  return fallback;
}

function taskQueueList(value: unknown, problems: string[]): string[] {
  const items = isUnset(value) ? [] : Array.isArray(value) ? value : [value];
  const names: string[] = [];
  for (const item of items) {
    if (typeof item !== 'string') {
      problems.push(`--temporal-task-queues must be task queue names, got ${quote(item)}`);
      continue;
    }
    for (const part of item.split(',')) {
      const name = part.trim();
      if (name === '') continue;
      if (name.length > 1000) problems.push(`--temporal-task-queues names must be at most 1000 characters, got ${quote(name.slice(0, 40) + '...')}`);
      else if (!names.includes(name)) names.push(name);
    }
  }
  if (names.length === 0 && problems.every((p) => !p.startsWith('--temporal-task-queues'))) {
    problems.push('--temporal-task-queues needs at least one task queue when Temporal spillover is configured');
  }
  return names;
}

function formatMs(ms: number): string {
  if (ms === 0) return '0';
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
