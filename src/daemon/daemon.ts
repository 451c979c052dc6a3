import type { Logger } from 'pino';
import { createAwsAdapters, type AwsAdapters } from '../aws/adapters.ts';
import { endpointName, type AwsEndpoints } from '../aws/endpoints.ts';
import { sdkAgents } from '../aws/sdk-agents.ts';
import { StartupError } from '../core/errors.ts';
import { totalLoops, totalQueues, type Config } from '../config/config.ts';
import type { Dispatcher } from '../dispatch/dispatcher.ts';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../core/exit-codes.ts';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';
import type { Operations } from '../operator/operations.ts';
import type { RecentErrors } from '../operator/status/status-recorder.ts';
import type { DaemonProcess } from './daemon-process.ts';
import { readOpenFileLimit } from './open-file-limit.ts';
import { joinFleet, type FleetRun } from './fleet-composition.ts';
import { PollShares } from './poll-shares.ts';
import { startRoutes } from './route-composition.ts';
import { startMetrics } from './run-metrics.ts';
import { awaitParts, handleShutdown } from './shutdown.ts';
import { socketBudget, type SocketBudget } from './socket-budget.ts';
import { runStartupChecks } from './startup-checks.ts';
import { logEndpoints, logStarted } from './startup-log.ts';
import { startTracing } from './tracing.ts';

// The daemon's wiring: tracing, the HTTP server, the AWS adapters, the start-up checks, metrics, the routes
// (src/daemon/route-composition.ts) and Temporal spillover, started in that order; tracing, the server and the
// sockets are released in runDaemon's `finally`, whatever the outcome. The policies live in their own files: the
// socket and descriptor budget in socket-budget.ts, the start-up checks in startup-checks.ts, signals, drain and
// forced exit in shutdown.ts. OpenTelemetry, prom-client, CloudWatch and the Temporal client are imported only
// when configured, since each costs resident memory.

/**
 * Runs the daemon until it is stopped (exit 0), fails (1: a start-up check, the HTTP port, a failed part) or
 * meets an invalid OTEL_* variable (2). Forced exits (a second signal, the shutdown timeout) end the process
 * from shutdown.ts.
 */
export async function runDaemon(
  config: Config,
  endpoints: AwsEndpoints,
  logger: Logger,
  recentErrors: RecentErrors | undefined,
  proc: DaemonProcess,
): Promise<number> {
  const { stop } = proc;
  const tracer = await startTracing(proc, endpoints, logger);
  if (tracer === 'invalid') return EXIT_USAGE;
  const budget = sizeRun(config, logger);
  const dispatchers: Dispatcher[] = [];
  // The queues the routes receive from now (found by prefix or tag, they change), for the metrics' per-queue policy.
  const queueCount = () => (dispatchers.length > 0 ? dispatchers.reduce((n, d) => n + d.queueCount, 0) : totalQueues(config.routes));
  // The HTTP server starts before the start-up checks, so /readyz says "starting" while they run.
  const ops = await startOperations(config, logger, proc, recentErrors, queueCount, budget.fds.httpMaxConnections);
  if (ops === 'failed') return EXIT_FAILURE;
  const beginShutdown = handleShutdown(proc, config, logger, ops, dispatchers);
  // Receive, delete, visibility, Invoke, the start-up checks and PutMetricData go through the lean signed-HTTP
  // client unless --aws-client sdk; the SDK's Lambda client for Temporal is loaded only when spillover is on.
  const aws = await createAwsAdapters(config.awsClient, config, endpoints, {
    maxSockets: budget.perHost,
    sqsMaxSockets: budget.sqsPerHost,
    metrics: ops?.prometheus,
    logger,
  });
  const lambdaEndpoint = endpointName(endpoints.lambda.url);
  logEndpoints(logger, config, endpoints, lambdaEndpoint);
  let fleet: FleetRun | undefined;
  try {
    const routes = await runStartupChecks(config, endpoints, aws, lambdaEndpoint, stop, logger);
    fleet = await joinFleet(config, endpoints, logger);
    if (stop.signal.aborted) return EXIT_OK;
    const metrics = await startMetrics(config, aws, logger, ops, queueCount);
    logStarted(logger, config, routes, tracer !== undefined);
    const parts = { aws, sink: metrics.sink, logger, tracer, polls: budget.polls, ops, fleet: fleet?.view };
    const started = startRoutes(config, routes, parts, stop.signal);
    dispatchers.push(...started.dispatchers);
    startFleet(fleet, stop.signal, started.dispatchers, metrics.sink, ops);
    const work = [...started.work];
    if (config.temporal) work.push((await startTemporal(config, aws, endpoints, metrics.sink, logger, stop.signal, fleet)).running);
    ops?.running(dispatchers);
    const failures = await awaitParts(work, stop, beginShutdown);
    await metrics.finish();
    return stopped(failures, logger, proc);
  } catch (err) {
    return startFailed(err, logger, proc);
  } finally {
    await fleet?.leave();
    fleet?.destroy();
    await tracer?.shutdown();
    await ops?.close();
    aws.destroy();
  }
}

/**
 * The fleet's heartbeats run over the routes' Dispatchers, its gauges go to the run's sinks and its view to the
 * status page; at the stop, the member leaves first thing (its peers take its queues).
 */
function startFleet(
  fleet: FleetRun | undefined,
  stop: AbortSignal,
  dispatchers: readonly Dispatcher[],
  sink: MetricsSink,
  ops: Operations | undefined,
): void {
  if (fleet === undefined) return;
  fleet.start(dispatchers, sink);
  ops?.inFleet(() => fleet.snapshot());
  stop.addEventListener('abort', () => void fleet.leave(), { once: true });
}

/**
 * The run's sockets, descriptors and idle polls under the open-file limit (src/daemon/socket-budget.ts), each
 * shortfall told once; the polls shared by the routes by their queues of the moment.
 */
function sizeRun(config: Config, logger: Logger): Omit<SocketBudget, 'polls'> & { readonly polls: PollShares } {
  const openFileLimit = readOpenFileLimit();
  const budget = socketBudget({ openFileLimit, loops: totalLoops(config.routes), httpServer: config.httpPort !== undefined });
  // One idle long poll per queue, as far as the open-file limit allows.
  const polls = new PollShares(budget.polls, (short) =>
    logger.warn(
      { openFileLimit, ...short },
      'open-file limit below one long poll per queue: the idle queues take turns for a poll, and a message may wait up to --poll-for; raise it (ulimit -n)',
    ),
  );
  // The AWS pool comes first; the HTTP server gets a small share of what it leaves.
  if (budget.fds.shortfall) {
    logger.warn(
      budget.fds.shortfall,
      'open-file limit below what the AWS sockets may need: AWS calls can fail with EMFILE; raise it (ulimit -n) or lower --concurrency',
    );
  }
  return { ...budget, polls };
}

/** The HTTP server, when --http-port is set (prom-client loads only then); 'failed': it cannot listen, told. */
async function startOperations(
  config: Config,
  logger: Logger,
  proc: DaemonProcess,
  recentErrors: RecentErrors | undefined,
  queueCount: () => number,
  maxConnections: number,
): Promise<Operations | undefined | 'failed'> {
  if (config.httpPort === undefined) return undefined;
  const { Operations } = await import('../operator/operations.ts');
  const ops = new Operations(config, logger.child({ component: 'http' }), proc.version, recentErrors, queueCount);
  try {
    await ops.start(maxConnections);
    return ops;
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    proc.tell(`cannot listen on ${config.httpHost}:${config.httpPort}: ${typeof code === 'string' ? code : String(err)}`);
    return 'failed';
  }
}

/**
 * Temporal spillover, loaded only when configured: the Temporal client is large and most deployments do not use
 * it. Returns the running part (wrapped: a promise would be awaited here).
 */
async function startTemporal(
  config: Config,
  aws: AwsAdapters,
  endpoints: AwsEndpoints,
  sink: MetricsSink,
  logger: Logger,
  stop: AbortSignal,
  fleet: FleetRun | undefined,
): Promise<{ readonly running: Promise<void> }> {
  const { runTemporalSpillover } = await import('../temporal/spillover.ts');
  const deps = {
    logger,
    metrics: sink,
    lambda: await aws.sdk.lambda(),
    aws: { region: config.region, endpointUrl: config.endpointUrl, requestHandler: sdkAgents(4, endpoints.network) },
    serves: fleet && ((taskQueue: string) => fleet.servesTaskQueue(taskQueue)),
  };
  return { running: runTemporalSpillover(config.temporal!, deps, stop) };
}

/** How a run that got past its start-up ended: cleanly (0), or with the parts that failed (1). */
function stopped(failures: readonly unknown[], logger: Logger, proc: DaemonProcess): number {
  if (failures.length === 0) {
    logger.info('stopped cleanly');
    return EXIT_OK;
  }
  const reason = failures.map((f) => (f instanceof Error ? f.message : String(f))).join('; ');
  logger.fatal({ reason, err: failures[0] }, 'failed');
  proc.tell(`failed: ${reason}`);
  return EXIT_FAILURE;
}

/** A start-up that threw: a signal during it is a clean stop (it aborts the start-up calls), a StartupError a failure told in one line. */
function startFailed(err: unknown, logger: Logger, proc: DaemonProcess): number {
  if (proc.stop.signal.aborted) {
    logger.info('stopped during start-up');
    return EXIT_OK;
  }
  if (err instanceof StartupError) {
    logger.fatal({ reason: err.message }, 'cannot start');
    proc.tell(err.message);
    return EXIT_FAILURE;
  }
  throw err;
}
