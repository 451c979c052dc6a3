// The compile stage of the Temporal spillover options: into a frozen, fully defaulted TemporalConfig. The options
// themselves (flags, each also WORKERLESS_TEMPORAL_* and a config-file key, with their ranges and defaults) are
// defined in ./options.ts and read as every other option is (with-defaults.ts), so that precedence
// (flag > env > file > default) and error messages are the same.
import type { OptionsWithDefaults } from './with-defaults.ts';
import { TEMPORAL_OPTIONS, defaultOf } from './options.ts';
import { parseEcsService, type TemporalConfig, type WorkerSetConfig } from '../temporal/options.ts';

/**
 * Validates the Temporal options. Problems go to `r` (one per invalid option, with the rest of the
 * configuration's); returns undefined when spillover is not configured (no task queues) or when a problem
 * was found. The TLS certificate, key and CA files must be readable (checked through `r`'s FileCheck).
 */
export function resolveTemporalConfig(r: OptionsWithDefaults): TemporalConfig | undefined {
  if (!r.has('temporal-task-queues')) {
    // Without task queues spillover is off, so any other Temporal option would be silently ignored: a
    // namespace from a shared env file or a misspelt task-queue variable would start a daemon that does nothing.
    for (const d of TEMPORAL_OPTIONS) {
      if (d.flag !== 'temporal-task-queues') r.reject(d.flag, 'is only used with --temporal-task-queues (none given)');
    }
    return undefined;
  }
  const before = r.problems.length;

  const address = r.read('temporal-address');
  if (!/^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):\d{1,5}$/.test(address)) {
    r.problem(`--temporal-address must be host:port, got ${JSON.stringify(address)}`);
  }
  const namespace = r.read('temporal-namespace');
  const taskQueues = taskQueueList(r);
  const functionName = r.read('temporal-function');
  if (functionName === undefined) {
    r.problem(
      '--temporal-function is required with --temporal-task-queues (env WORKERLESS_TEMPORAL_FUNCTION): the function that hosts the Temporal worker',
    );
  }
  const maxWorkers = r.read('temporal-max-workers');
  const maxWorkersTotal = r.read('temporal-max-workers-total');
  const workerLifetimeMs = r.read('temporal-worker-lifetime');
  // Unset, the start timeout is the default but at most the lifetime; set above it, it is an error.
  const workerStartTimeoutMs =
    r.given('temporal-worker-start-timeout') ?? Math.min(defaultOf('temporal-worker-start-timeout'), workerLifetimeMs);
  if (workerStartTimeoutMs > workerLifetimeMs && r.has('temporal-worker-start-timeout')) {
    r.reject('temporal-worker-start-timeout', `must not exceed --temporal-worker-lifetime (${workerLifetimeMs} ms)`);
  }
  const pollIntervalMs = r.read('temporal-poll-interval');
  const backlogThreshold = r.read('temporal-backlog-threshold');
  const maxBacklogAgeMs = r.read('temporal-max-backlog-age');
  const coolOffMs = r.read('temporal-cool-off');
  const tasksPerWorker = r.read('temporal-tasks-per-worker');
  const spillPriority = r.read('temporal-spill-priority');
  const fairness = r.read('temporal-fairness');
  if (fairness && maxBacklogAgeMs === undefined) {
    r.problem(
      "--temporal-fairness needs --temporal-max-backlog-age: with fairness keys, spillover decides urgency from the oldest task's age",
    );
  }
  const versionFunctions = versionFunctionMap(r);
  const workerSet = workerSetConfig(r, taskQueues);

  const apiKey = r.read('temporal-api-key');
  // Read now: the connection only reads them when it connects, and would retry an unreadable file forever.
  const certPath = r.read('temporal-tls-cert');
  const keyPath = r.read('temporal-tls-key');
  const caPath = r.read('temporal-tls-ca');
  const serverName = r.read('temporal-tls-server-name');
  // has(), not the paths: an unreadable file is reported once, not also as half a pair.
  if (r.has('temporal-tls-cert') !== r.has('temporal-tls-key')) {
    r.problem('--temporal-tls-cert and --temporal-tls-key must be given together (mTLS needs both)');
  }
  const tlsDefault =
    apiKey !== undefined ||
    (['temporal-tls-cert', 'temporal-tls-key', 'temporal-tls-ca', 'temporal-tls-server-name'] as const).some((f) => r.has(f));
  const tlsOn = r.read('temporal-tls') ?? tlsDefault;
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
    spillPriority,
    fairness,
    versionFunctions,
    workerSet,
    tls: tlsOn ? Object.freeze({ certPath, keyPath, caPath, serverName }) : undefined,
    apiKey,
  });
}

/** Comma-separated names (a YAML list arrives joined with commas), trimmed and without duplicates. */
/** --temporal-worker-set-*: undefined without --temporal-worker-set-max; the other set options need it. */
function workerSetConfig(r: OptionsWithDefaults, taskQueues: readonly string[]): WorkerSetConfig | undefined {
  const max = r.read('temporal-worker-set-max');
  const min = r.read('temporal-worker-set-min');
  const capacityPerSec = r.read('temporal-worker-capacity');
  const maxStep = r.read('temporal-worker-set-max-step');
  const upCooldownMs = r.read('temporal-scale-up-cooldown');
  const downCooldownMs = r.read('temporal-scale-down-cooldown');
  const dependent = [
    'temporal-worker-set-min',
    'temporal-worker-capacity',
    'temporal-worker-set-max-step',
    'temporal-scale-up-cooldown',
    'temporal-scale-down-cooldown',
    'temporal-ecs-service',
  ] as const;
  if (max === undefined) {
    for (const flag of dependent) if (r.has(flag)) r.reject(flag, 'is only used with --temporal-worker-set-max (none given)');
    return undefined;
  }
  if (min > max) r.reject('temporal-worker-set-min', `must not exceed --temporal-worker-set-max (${max})`);
  const ecsText = r.read('temporal-ecs-service');
  const ecsService = ecsText === undefined ? undefined : parseEcsService(ecsText);
  if (ecsText !== undefined && ecsService === undefined) r.reject('temporal-ecs-service', 'must be CLUSTER/SERVICE');
  else if (ecsService !== undefined && taskQueues.length !== 1) {
    r.reject('temporal-ecs-service', `sizes one task queue's workers; --temporal-task-queues names ${taskQueues.length}`);
  }
  return Object.freeze({ min, max, capacityPerSec, maxStep, upCooldownMs, downCooldownMs, ecsService });
}

function taskQueueList(r: OptionsWithDefaults): string[] {
  const value = r.read('temporal-task-queues');
  const names: string[] = [];
  for (const part of (value ?? '').split(',')) {
    const name = part.trim();
    if (name === '') continue;
    if (name.length > 1000)
      r.problem(`--temporal-task-queues names must be at most 1000 characters, got ${JSON.stringify(name.slice(0, 40) + '...')}`);
    else if (!names.includes(name)) names.push(name);
  }
  // A value such as " , " (a list of blanks); a value of the wrong type was reported by r.string().
  if (names.length === 0 && value !== undefined) r.reject('temporal-task-queues', 'needs at least one task queue name');
  return names;
}

/** "v1=fn:1,v2=fn:2" (a YAML list arrives joined with commas) -> { v1: 'fn:1', v2: 'fn:2' }, frozen. */
function versionFunctionMap(r: OptionsWithDefaults): Readonly<Record<string, string>> {
  const value = r.read('temporal-versions');
  const entries: Array<[string, string]> = [];
  for (const part of (value ?? '').split(',')) {
    const entry = part.trim();
    if (entry === '') continue;
    // Function names and ARNs never contain "=", Build IDs may: split at the last one.
    const at = entry.lastIndexOf('=');
    const buildId = entry.slice(0, Math.max(0, at)).trim();
    const fn = entry.slice(at + 1).trim();
    if (at <= 0 || buildId === '' || !/^[A-Za-z0-9_:.$-]{1,256}$/.test(fn)) {
      r.problem(
        `--temporal-versions entries must be BUILD_ID=FUNCTION (e.g. v1=temporal-worker:1), got ${JSON.stringify(entry)}${originText(r)}`,
      );
    } else if (entries.some(([id]) => id === buildId)) {
      r.problem(`--temporal-versions names Build ID ${JSON.stringify(buildId)} twice${originText(r)}`);
    } else {
      entries.push([buildId, fn]);
    }
  }
  return Object.freeze(Object.fromEntries(entries));
}

function originText(r: OptionsWithDefaults): string {
  const origin = r.origin('temporal-versions');
  return origin === undefined || origin === '--temporal-versions' ? '' : ` (from ${origin})`;
}
