// The spillover controller: one loop per task queue reads the backlog, asks scaling.ts how many workers
// should be alive, and starts the difference as Lambda Event invocations. Failures are logged, backed off and
// never escape: SQS dispatching in the same process must not notice a Temporal or Lambda outage.
import type { ECSClient } from '@aws-sdk/client-ecs';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { Logger } from 'pino';
import { sleep } from '../util/backoff.ts';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';
import { connectTemporal, connectWithRetry, type TemporalStatsConnection } from './connection.ts';
import type { TemporalConfig } from './options.ts';
import { runTaskQueue } from './task-queue-loop.ts';
import { type SpilloverClock } from './task-queue-context.ts';
import { WorkerBudget } from './worker-budget.ts';
import { createLambdaWorkerInvoker, type WorkerInvoker } from './worker-invoker.ts';
import type { WorkerSetActuator } from './ecs-worker-set.ts';

export interface SpilloverDeps {
  logger: Logger;
  metrics: MetricsSink;
  lambda: LambdaClient;
  /** Opens the Temporal connection; default: @temporalio/client Connection.connect with the config's TLS / API key. */
  connect?: (config: TemporalConfig) => Promise<TemporalStatsConnection>;
  /** Replaces the Lambda invoker (tests). */
  invoker?: WorkerInvoker;
  /** Wall clock and sleep (tests); sleep must return early, without throwing, when the signal aborts. */
  clock?: SpilloverClock;
  random?: () => number;
  /**
   * Where the ECS client of --temporal-ecs-service goes: the run's region and --endpoint-url, and the agents that
   * take it through the run's proxy and CA bundle (src/aws/sdk-agents.ts), as every other AWS client.
   */
  aws?: { readonly region: string; readonly endpointUrl: string | undefined; readonly requestHandler?: object | undefined };
  /** Replaces the ECS service actuator (tests). */
  workerSetActuator?: WorkerSetActuator;
  /** In a fleet, whether this replica handles a task queue now (TaskQueueLoop.serves); undefined: every one. */
  serves?: ((taskQueue: string) => boolean) | undefined;
}

/**
 * Runs the controller loops until `signal` aborts, then closes the connection and resolves.
 * Never rejects because of Temporal or Lambda failures; only a bug can make it throw.
 */
export async function runTemporalSpillover(config: TemporalConfig, deps: SpilloverDeps, signal: AbortSignal): Promise<void> {
  const logger = deps.logger.child({ component: 'temporal-spillover' });
  const clock = deps.clock ?? { now: Date.now, sleep };
  const random = deps.random ?? Math.random;
  const connect = deps.connect ?? connectTemporal;
  const invoker = deps.invoker ?? createLambdaWorkerInvoker(deps.lambda);
  const budget = new WorkerBudget(config.maxWorkersTotal, config.taskQueues);
  const workerSetActuator = deps.workerSetActuator ?? (await ecsActuator(config, deps.aws));
  const serves = deps.serves;

  logger.info(
    {
      address: config.address,
      namespace: config.namespace,
      taskQueues: config.taskQueues,
      function: config.functionName,
      maxWorkers: config.maxWorkers,
      maxWorkersTotal: config.maxWorkersTotal,
      maxBacklogAgeMs: config.maxBacklogAgeMs,
      spillPriority: config.spillPriority,
      fairness: config.fairness,
      versions: config.versionFunctions,
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
        runTaskQueue(
          {
            taskQueue,
            config,
            reader: connection,
            invoker,
            budget,
            metrics: deps.metrics,
            logger: logger.child({ taskQueue }),
            clock,
            random,
            workerSetActuator,
            serves: serves && (() => serves(taskQueue)),
          },
          signal,
        ),
      ),
    );
  } finally {
    await connection.close().catch((err: unknown) => logger.warn({ err }, 'could not close the temporal connection'));
    logger.info('temporal spillover stopped');
  }
}

/** The ECS service of --temporal-ecs-service; the ECS client is loaded only then. */
async function ecsActuator(config: TemporalConfig, aws: SpilloverDeps['aws']): Promise<WorkerSetActuator | undefined> {
  const ref = config.workerSet?.ecsService;
  if (ref === undefined) return undefined;
  const [{ client, endpoint }, { ecsWorkerSet }] = await Promise.all([ecsClient(aws), import('./ecs-worker-set.ts')]);
  return ecsWorkerSet(client, ref, endpoint);
}

/**
 * The ECS client of worker sets, in the run's region and at --endpoint-url (else the SDK's own resolution, which reads
 * AWS_ENDPOINT_URL_ECS), and the endpoint to name in its errors. `workerless check` builds the same.
 */
export async function ecsClient(aws: SpilloverDeps['aws']): Promise<{ client: ECSClient; endpoint: string }> {
  const { ECSClient } = await import('@aws-sdk/client-ecs');
  const region = aws?.region;
  const client = new ECSClient({
    ...(region !== undefined ? { region } : {}),
    ...(aws?.endpointUrl ? { endpoint: aws.endpointUrl } : {}),
    ...(aws?.requestHandler ? { requestHandler: aws.requestHandler } : {}),
  });
  const endpoint =
    aws?.endpointUrl ??
    process.env['AWS_ENDPOINT_URL_ECS'] ??
    process.env['AWS_ENDPOINT_URL'] ??
    `ecs.${region ?? 'the default region'}.amazonaws.com`;
  return { client, endpoint };
}
