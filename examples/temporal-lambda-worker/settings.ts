// Worker settings from the function's environment, and the deadline arithmetic. No I/O: unit-tested.

export interface WorkerSettings {
  /** TEMPORAL_ADDRESS, default localhost:7233 */
  readonly address: string;
  /** TEMPORAL_NAMESPACE, default "default" */
  readonly namespace: string;
  /** The task queue this invocation polls: from the event if TEMPORAL_TASK_QUEUE lists it, else the first listed. */
  readonly taskQueue: string;
  /** TEMPORAL_API_KEY (Temporal Cloud); implies TLS. */
  readonly apiKey: string | undefined;
  readonly tls:
    | {
        /** TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH (mTLS) */
        readonly clientCertPath: string | undefined;
        readonly clientKeyPath: string | undefined;
        /** TEMPORAL_TLS_SERVER_CA_CERT_PATH */
        readonly serverCaCertPath: string | undefined;
        /** TEMPORAL_TLS_SERVER_NAME */
        readonly serverName: string | undefined;
      }
    | undefined;
  /**
   * WORKER_SHUTDOWN_BUFFER_MS, default 7000: polling stops this long before the invocation deadline.
   * Must exceed the stop timeout plus the time shutdown hooks need.
   */
  readonly shutdownBufferMs: number;
  /** WORKER_STOP_TIMEOUT_MS, default 5000: how long in-flight tasks may finish after polling stops. */
  readonly stopTimeoutMs: number;
  /** TEMPORAL_WORKFLOW_BUNDLE: prebuilt workflow bundle (see bundle.ts); without it the worker bundles at cold start. */
  readonly workflowBundlePath: string | undefined;
  /** WORKER_MAX_CONCURRENT_ACTIVITIES, default 10: activity slots per invocation (1 isolates activities). */
  readonly maxConcurrentActivities: number;
  /**
   * From the event: when workerless stops counting this worker (ms since epoch). Lambda may start a queued
   * Event late; stopping by then keeps workerless's "at most N workers alive" true.
   */
  readonly expiresAt: number | undefined;
  /**
   * From the event: the latest time to start polling. After it workerless has counted this worker as lost
   * (it may have invoked a replacement), so a late start would put one worker too many on the queue.
   */
  readonly startBy: number | undefined;
  /**
   * Worker Versioning, when the task queue uses it: the event's deploymentName + buildId (workerless sends the
   * version it invoked this function for), or TEMPORAL_DEPLOYMENT_NAME + TEMPORAL_WORKER_BUILD_ID; and
   * TEMPORAL_VERSIONING_BEHAVIOR (AUTO_UPGRADE or PINNED, default AUTO_UPGRADE) for workflows that set none.
   * Map each build ID to one published Lambda version or alias (--temporal-versions).
   */
  readonly deployment:
    { readonly deploymentName: string; readonly buildId: string; readonly behavior: 'AUTO_UPGRADE' | 'PINNED' } | undefined;
  /**
   * The event asked for a different version than TEMPORAL_WORKER_BUILD_ID says this code is: the mapping
   * points at the wrong Lambda version. The worker must not poll (it would run another version's workflows).
   */
  readonly versionMismatch: string | undefined;
}

export const defaultShutdownBufferMs = 7_000;
export const defaultStopTimeoutMs = 5_000;

type Env = Readonly<Record<string, string | undefined>>;

/** Reads the settings; throws one error naming every invalid variable. */
export function workerSettingsFromEnv(env: Env, event?: unknown): WorkerSettings {
  const problems: string[] = [];
  const text = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const ms = (name: string, fallback: number, min: number): number => {
    const value = text(name);
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) {
      problems.push(`${name} must be an integer >= ${min} (milliseconds), got ${JSON.stringify(value)}`);
      return fallback;
    }
    return n;
  };

  const queues = (text('TEMPORAL_TASK_QUEUE') ?? '')
    .split(',')
    .map((q) => q.trim())
    .filter((q) => q !== '');
  if (queues.length === 0) problems.push('TEMPORAL_TASK_QUEUE must name the task queue(s) this worker serves');
  const requested = requestedTaskQueue(event);
  const taskQueue = requested !== undefined && queues.includes(requested) ? requested : (queues[0] ?? '');

  const apiKey = text('TEMPORAL_API_KEY');
  const clientCertPath = text('TEMPORAL_TLS_CLIENT_CERT_PATH');
  const clientKeyPath = text('TEMPORAL_TLS_CLIENT_KEY_PATH');
  const serverCaCertPath = text('TEMPORAL_TLS_SERVER_CA_CERT_PATH');
  const serverName = text('TEMPORAL_TLS_SERVER_NAME');
  if ((clientCertPath === undefined) !== (clientKeyPath === undefined)) {
    problems.push('TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH must be set together');
  }
  const tlsFlag = text('TEMPORAL_TLS');
  const tlsOn =
    tlsFlag !== undefined
      ? /^(true|1)$/i.test(tlsFlag)
      : apiKey !== undefined || clientCertPath !== undefined || serverCaCertPath !== undefined || serverName !== undefined;

  const shutdownBufferMs = ms('WORKER_SHUTDOWN_BUFFER_MS', defaultShutdownBufferMs, 0);
  const stopTimeoutMs = ms('WORKER_STOP_TIMEOUT_MS', defaultStopTimeoutMs, 0);
  if (shutdownBufferMs <= stopTimeoutMs) {
    problems.push(
      `WORKER_SHUTDOWN_BUFFER_MS (${shutdownBufferMs}) must exceed WORKER_STOP_TIMEOUT_MS (${stopTimeoutMs}) plus the time shutdown hooks need, or Lambda ends the drain`,
    );
  }
  const maxConcurrentActivities = ms('WORKER_MAX_CONCURRENT_ACTIVITIES', 10, 1);

  const envDeploymentName = text('TEMPORAL_DEPLOYMENT_NAME');
  const envBuildId = text('TEMPORAL_WORKER_BUILD_ID');
  if ((envDeploymentName === undefined) !== (envBuildId === undefined)) {
    problems.push('TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID must be set together (Worker Versioning)');
  }
  const eventDeploymentName = eventString(event, 'deploymentName');
  const eventBuildId = eventString(event, 'buildId');
  const fromEvent = eventDeploymentName !== undefined && eventBuildId !== undefined;
  const deploymentName = envDeploymentName ?? (fromEvent ? eventDeploymentName : undefined);
  const buildId = envBuildId ?? (fromEvent ? eventBuildId : undefined);
  const versionMismatch =
    fromEvent && envBuildId !== undefined && (envBuildId !== eventBuildId || envDeploymentName !== eventDeploymentName)
      ? `invoked for ${eventDeploymentName}/${eventBuildId} but this code is ${envDeploymentName}/${envBuildId}`
      : undefined;
  const behavior = (text('TEMPORAL_VERSIONING_BEHAVIOR') ?? 'AUTO_UPGRADE').toUpperCase();
  if (behavior !== 'AUTO_UPGRADE' && behavior !== 'PINNED') {
    problems.push(`TEMPORAL_VERSIONING_BEHAVIOR must be AUTO_UPGRADE or PINNED, got ${JSON.stringify(behavior)}`);
  }

  if (problems.length > 0) throw new Error(`invalid worker settings: ${problems.join('; ')}`);
  return {
    address: text('TEMPORAL_ADDRESS') ?? 'localhost:7233',
    namespace: text('TEMPORAL_NAMESPACE') ?? 'default',
    taskQueue,
    apiKey,
    tls: tlsOn ? { clientCertPath, clientKeyPath, serverCaCertPath, serverName } : undefined,
    shutdownBufferMs,
    stopTimeoutMs,
    workflowBundlePath: text('TEMPORAL_WORKFLOW_BUNDLE'),
    maxConcurrentActivities,
    expiresAt: eventNumber(event, 'expiresAt'),
    startBy: eventNumber(event, 'startBy'),
    deployment:
      deploymentName !== undefined && buildId !== undefined
        ? { deploymentName, buildId, behavior: behavior === 'PINNED' ? 'PINNED' : 'AUTO_UPGRADE' }
        : undefined,
    versionMismatch,
  };
}

/**
 * How long to poll: until the invocation deadline (or the expiry workerless gave, if sooner) minus the shutdown
 * buffer. The buffer covers the stop timeout (in-flight tasks finish) and shutdown hooks; at zero the
 * invocation should not poll at all.
 */
export function pollingWindowMs(remainingTimeMs: number, shutdownBufferMs: number, untilExpiryMs = Number.POSITIVE_INFINITY): number {
  return Math.max(0, Math.floor(Math.min(remainingTimeMs, untilExpiryMs) - shutdownBufferMs));
}

function eventNumber(event: unknown, key: string): number | undefined {
  if (event === null || typeof event !== 'object') return undefined;
  const value = (event as Record<string, unknown>)[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function eventString(event: unknown, key: string): string | undefined {
  if (event === null || typeof event !== 'object') return undefined;
  const value = (event as Record<string, unknown>)[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function requestedTaskQueue(event: unknown): string | undefined {
  if (event === null || typeof event !== 'object') return undefined;
  const taskQueue = (event as { taskQueue?: unknown }).taskQueue;
  return typeof taskQueue === 'string' && taskQueue !== '' ? taskQueue : undefined;
}
