// The spillover controller: one loop per task queue reads the backlog, asks scaling.ts how many workers
// should be alive, and starts the difference as Lambda Event invocations. Failures are logged, backed off and
// never escape: SQS dispatching in the same process must not notice a Temporal or Lambda outage.
import { readFile } from 'node:fs/promises';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import type { Logger } from 'pino';
import { backoffMs, sleep } from '../backoff.ts';
import type { MetricsSink } from '../metrics/metrics-sink.ts';
import type { TemporalConfig } from './options.ts';
import { decideScaling, initialScalingState, recordInvocations, type ScalingLimits, type ScalingState } from './scaling.ts';
import { createTaskQueueStatsReader, describeTaskQueueVia, toObservation, type TaskQueueStatsReader } from './task-queue-stats.ts';
import { createLambdaWorkerInvoker, type InvokeOutcome, type WorkerInvocationPayload, type WorkerInvoker } from './worker-invoker.ts';

/** A connected stats reader that can be closed. */
export interface TemporalStatsConnection extends TaskQueueStatsReader {
  close(): Promise<void>;
}

export interface SpilloverDeps {
  logger: Logger;
  metrics: MetricsSink;
  lambda: LambdaClient;
  /** Opens the Temporal connection; default: @temporalio/client Connection.connect with the config's TLS / API key. */
  connect?: (config: TemporalConfig) => Promise<TemporalStatsConnection>;
  /** Replaces the Lambda invoker (tests). */
  invoker?: WorkerInvoker;
  /** Wall clock and sleep (tests); sleep must return early, without throwing, when the signal aborts. */
  clock?: { now(): number; sleep(ms: number, signal: AbortSignal): Promise<void> };
  random?: () => number;
}

/** Retry caps: a read or connect failure is retried within a minute; a refused invocation within five. */
const MAX_READ_BACKOFF_MS = 60_000;
const MAX_TRANSIENT_INVOKE_BACKOFF_MS = 60_000;
const MAX_REFUSED_INVOKE_BACKOFF_MS = 300_000;
/** Event invocations started at once for one scale-up. */
const INVOKE_BATCH = 10;
/** Workers re-poll at least every minute (server long-poll expiry is 60 s); 75 s means nobody is listening. */
const POLLER_RECENT_MS = 75_000;

/**
 * Runs the controller loops until `signal` aborts, then closes the connection and resolves.
 * Never rejects because of Temporal or Lambda failures; only a bug can make it throw.
 */
export async function startTemporalSpillover(config: TemporalConfig, deps: SpilloverDeps, signal: AbortSignal): Promise<void> {
  const logger = deps.logger.child({ component: 'temporal-spillover' });
  const clock = deps.clock ?? { now: Date.now, sleep };
  const random = deps.random ?? Math.random;
  const connect = deps.connect ?? connectTemporal;
  const invoker = deps.invoker ?? createLambdaWorkerInvoker(deps.lambda, config.functionName);

  logger.info(
    {
      address: config.address,
      namespace: config.namespace,
      taskQueues: config.taskQueues,
      function: config.functionName,
      maxWorkers: config.maxWorkers,
      pollIntervalMs: config.pollIntervalMs,
    },
    'temporal spillover starting',
  );
  const connection = await connectWithRetry(config, connect, logger, clock, random, signal);
  if (connection === undefined) {
    logger.info('temporal spillover stopped');
    return;
  }
  try {
    await Promise.all(
      config.taskQueues.map((taskQueue) =>
        runTaskQueue({ taskQueue, config, reader: connection, invoker, metrics: deps.metrics, logger: logger.child({ taskQueue }), clock, random }, signal),
      ),
    );
  } finally {
    await connection.close().catch((err: unknown) => logger.warn({ err }, 'could not close the temporal connection'));
    logger.info('temporal spillover stopped');
  }
}

async function connectWithRetry(
  config: TemporalConfig,
  connect: (config: TemporalConfig) => Promise<TemporalStatsConnection>,
  logger: Logger,
  clock: NonNullable<SpilloverDeps['clock']>,
  random: () => number,
  signal: AbortSignal,
): Promise<TemporalStatsConnection | undefined> {
  for (let attempt = 1; !signal.aborted; attempt++) {
    const pending = connect(config);
    // Connecting may take its full timeout; shutdown must not wait for it.
    let onAbort = (): void => {};
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted');
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const result = await Promise.race([pending, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
      if (result === 'aborted') {
        pending.then((late) => late.close(), () => undefined).catch(() => undefined);
        return undefined;
      }
      logger.info({ address: config.address, namespace: config.namespace, attempt }, 'connected to temporal');
      return result;
    } catch (err) {
      const retryInMs = backoffMs(attempt, Math.max(1_000, config.pollIntervalMs), MAX_READ_BACKOFF_MS, random);
      logger.warn({ err, address: config.address, attempt, retryInMs }, 'could not connect to temporal; retrying');
      await clock.sleep(retryInMs, signal);
    }
  }
  return undefined;
}

interface TaskQueueLoop {
  taskQueue: string;
  config: TemporalConfig;
  reader: TaskQueueStatsReader;
  invoker: WorkerInvoker;
  metrics: MetricsSink;
  logger: Logger;
  clock: NonNullable<SpilloverDeps['clock']>;
  random: () => number;
}

async function runTaskQueue(loop: TaskQueueLoop, signal: AbortSignal): Promise<void> {
  const { taskQueue, config, reader, metrics, logger, clock, random } = loop;
  const limits: ScalingLimits = {
    maxWorkers: config.maxWorkers,
    workerLifetimeMs: config.workerLifetimeMs,
    backlogThreshold: config.backlogThreshold,
    coolOffMs: config.coolOffMs,
    tasksPerWorker: config.tasksPerWorker,
    horizonMs: Math.max(config.pollIntervalMs, config.coolOffMs),
    pollerRecentMs: POLLER_RECENT_MS,
  };
  const dimensions = { TaskQueue: taskQueue };
  let state: ScalingState = initialScalingState;
  let readFailures = 0;
  let invokeFailures = 0;
  let invokeBlockedUntil = 0;

  while (!signal.aborted) {
    let observation;
    try {
      observation = toObservation(await reader.read(taskQueue, signal));
    } catch (err) {
      if (signal.aborted) break;
      readFailures++;
      const retryInMs = backoffMs(readFailures, config.pollIntervalMs, MAX_READ_BACKOFF_MS, random) + config.pollIntervalMs / 2;
      logger.warn({ err, attempt: readFailures, retryInMs }, 'could not read task queue statistics; retrying');
      await clock.sleep(retryInMs, signal);
      continue;
    }
    if (readFailures > 0) logger.info({ attempts: readFailures }, 'reading task queue statistics again');
    readFailures = 0;

    const now = clock.now();
    metrics.record({ name: 'Backlog', unit: 'Count', value: observation.backlog, dimensions });
    const decision = decideScaling(state, observation, limits, now);
    state = decision.state;
    const facts = {
      backlog: observation.backlog,
      liveWorkers: decision.liveWorkers,
      desiredWorkers: decision.desiredWorkers,
      reason: decision.reason,
    };
    logger.debug(facts, 'task queue observed');

    let invoked = 0;
    let refused = 0;
    if (decision.invoke > 0 && now < invokeBlockedUntil) {
      logger.debug({ ...facts, retryInMs: invokeBlockedUntil - now }, 'scale-up postponed after refused invocations');
    } else if (decision.invoke > 0) {
      const result = await invokeWorkers(loop, decision.invoke, signal);
      invoked = result.invoked;
      refused = result.refused;
      state = recordInvocations(state, clock.now(), invoked);
      if (invoked > 0) logger.info({ ...facts, workersInvoked: invoked, requestIds: result.requestIds }, 'workers invoked');
      if (result.failure !== undefined) {
        invokeFailures++;
        const permanent = result.failure.kind === 'refused';
        const retryInMs = backoffMs(
          invokeFailures,
          Math.max(1_000, config.pollIntervalMs),
          permanent ? MAX_REFUSED_INVOKE_BACKOFF_MS : MAX_TRANSIENT_INVOKE_BACKOFF_MS,
          random,
        ) + config.pollIntervalMs;
        invokeBlockedUntil = clock.now() + retryInMs;
        const context = {
          ...facts,
          function: config.functionName,
          invocationsRefused: refused,
          outcome: result.failure.kind,
          code: result.failure.code,
          errorMessage: result.failure.message,
          attempt: invokeFailures,
          retryInMs,
        };
        if (permanent) logger.error(context, 'the worker function refused the invocation; retrying later');
        else logger.warn(context, 'worker invocations failed; retrying later');
      } else if (invoked > 0) {
        invokeFailures = 0;
      }
    }
    metrics.record({ name: 'WorkersInvoked', unit: 'Count', value: invoked, dimensions });
    metrics.record({ name: 'InvocationsRefused', unit: 'Count', value: refused, dimensions });

    await clock.sleep(config.pollIntervalMs, signal);
  }
}

type Failure = Extract<InvokeOutcome, { kind: 'throttled' | 'refused' | 'failed' }>;

async function invokeWorkers(
  loop: TaskQueueLoop,
  count: number,
  signal: AbortSignal,
): Promise<{ invoked: number; refused: number; requestIds: string[]; failure: Failure | undefined }> {
  const requestedAt = loop.clock.now();
  const payload: WorkerInvocationPayload = {
    source: 'workerless.temporal-spillover',
    namespace: loop.config.namespace,
    taskQueue: loop.taskQueue,
    requestedAt,
    expiresAt: requestedAt + loop.config.workerLifetimeMs,
  };
  let invoked = 0;
  let refused = 0;
  let failure: Failure | undefined;
  const requestIds: string[] = [];
  // Small batches, stopping at the first refusal: once Lambda throttles, the rest of a burst would be too.
  for (let start = 0; start < count && failure === undefined && !signal.aborted; start += INVOKE_BATCH) {
    const size = Math.min(INVOKE_BATCH, count - start);
    const outcomes = await Promise.all(Array.from({ length: size }, () => loop.invoker.invoke(payload, signal)));
    for (const outcome of outcomes) {
      if (outcome.kind === 'invoked') {
        invoked++;
        if (outcome.requestId !== undefined) requestIds.push(outcome.requestId);
      } else if (outcome.kind !== 'aborted') {
        refused++;
        failure ??= outcome;
      }
    }
  }
  return { invoked, refused, requestIds, failure };
}

/** The default connection: @temporalio/client over gRPC, with TLS / mTLS / API key from the config. */
export async function connectTemporal(config: TemporalConfig): Promise<TemporalStatsConnection> {
  const options: ConnectionOptions = { address: config.address, connectTimeout: 10_000 };
  if (config.tls !== undefined) {
    const { certPath, keyPath, caPath, serverName } = config.tls;
    options.tls = {
      ...(serverName !== undefined ? { serverNameOverride: serverName } : {}),
      ...(caPath !== undefined ? { serverRootCACertificate: await readFile(caPath) } : {}),
      ...(certPath !== undefined && keyPath !== undefined
        ? { clientCertPair: { crt: await readFile(certPath), key: await readFile(keyPath) } }
        : {}),
    };
  }
  if (config.apiKey !== undefined) {
    options.apiKey = config.apiKey;
    // Temporal Cloud routes API-key requests by this header.
    options.metadata = { 'temporal-namespace': config.namespace };
  }
  const connection = await Connection.connect(options);
  const reader = createTaskQueueStatsReader(describeTaskQueueVia(connection), config.namespace);
  return { read: reader.read, close: () => connection.close() };
}
