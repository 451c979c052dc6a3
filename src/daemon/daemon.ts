import type { Logger } from 'pino';
import { createAwsAdapters } from '../aws/adapters.ts';
import type { QueueTarget } from '../aws/queue-discovery.ts';
import { PollShares } from './poll-shares.ts';
import { awsSocketCeiling, fdBudget, pollBudget, socketsPerHost } from './socket-budget.ts';
import { readOpenFileLimit } from './open-file-limit.ts';
import { endpointName, type AwsEndpoints } from '../aws/endpoints.ts';
import { StartupError } from '../core/errors.ts';
import { totalLoops, totalQueues, type Config } from '../config/config.ts';
import { Dispatcher } from '../dispatch/dispatcher.ts';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../core/exit-codes.ts';
import type { RecentErrors } from '../operator/status/status-recorder.ts';
import { OtelConfigError, describeProblem, resolveOtelEnv } from '../operator/tracing/otel-env.ts';
import type { OtelDispatchTracer } from '../operator/tracing/otel.ts';
import { awaitParts, handleShutdown } from './shutdown.ts';
import { checkFoundQueues, runStartupChecks } from './startup-checks.ts';
import { createDispatchers } from './route-composition.ts';
import { startMetrics } from './run-metrics.ts';
import { logEndpoints, logStarted } from './startup-log.ts';
import type { DaemonProcess } from './daemon-process.ts';

// The daemon's wiring: tracing, the HTTP server, the AWS adapters, the start-up checks, metrics, one Dispatcher
// per route and Temporal spillover, started in that order; tracing, the server and the sockets are released in
// runDaemon's `finally`, whatever the outcome. The policies live in their own files: the start-up checks in
// startup-checks.ts, signals, drain and forced exit in shutdown.ts, the socket pool in src/aws/adapters.ts.
// OpenTelemetry, prom-client, CloudWatch and the Temporal client are imported only when configured, since each
// costs resident memory.

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
  // Tracing is configured by the standard OTEL_* variables; an invalid one is a configuration error (exit 2).
  // OpenTelemetry, like the HTTP server's prom-client below, is loaded only when it is configured.
  let tracer: OtelDispatchTracer | undefined;
  try {
    tracer = resolveOtelEnv(proc.env)
      ? await (await import('../operator/tracing/otel.ts')).createOtelTracer(proc.env, logger, { functionRegion: endpoints.region })
      : undefined;
  } catch (err) {
    if (!(err instanceof OtelConfigError)) throw err;
    for (const p of err.problems) proc.tell(describeProblem(p));
    return EXIT_USAGE;
  }
  const loops = totalLoops(config.routes);
  const maxSocketsPerHost = socketsPerHost(loops);
  const openFileLimit = readOpenFileLimit();
  // One idle long poll per queue, as far as the open-file limit allows (src/daemon/socket-budget.ts).
  const polls = new PollShares(pollBudget({ openFileLimit, loops, httpServer: config.httpPort !== undefined }), (short) =>
    logger.warn(
      { openFileLimit, ...short },
      'open-file limit below one long poll per queue: the idle queues take turns for a poll, and a message may wait up to --poll-for; raise it (ulimit -n)',
    ),
  );
  const sqsSockets = socketsPerHost(loops, polls.budget);
  // The AWS pool comes first; the HTTP server gets a small share of what it leaves (src/daemon/socket-budget.ts).
  const fds = fdBudget({
    openFileLimit,
    awsSockets: awsSocketCeiling(sqsSockets, maxSocketsPerHost),
    httpServer: config.httpPort !== undefined,
  });
  if (fds.shortfall) {
    logger.warn(
      fds.shortfall,
      'open-file limit below what the AWS sockets may need: AWS calls can fail with EMFILE; raise it (ulimit -n) or lower --concurrency',
    );
  }
  const dispatchers: Dispatcher[] = [];
  // The queues the routes receive from now (found by prefix or tag, they change), for the metrics' per-queue policy.
  const queueCount = () => (dispatchers.length > 0 ? dispatchers.reduce((n, d) => n + d.queueCount, 0) : totalQueues(config.routes));
  // The HTTP server starts before the start-up checks, so /readyz says "starting" while they run.
  const ops =
    config.httpPort !== undefined
      ? new (await import('../operator/operations.ts')).Operations(
          config,
          logger.child({ component: 'http' }),
          proc.version,
          recentErrors,
          queueCount,
        )
      : undefined;
  try {
    await ops?.start(fds.httpMaxConnections);
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    proc.tell(`cannot listen on ${config.httpHost}:${config.httpPort}: ${typeof code === 'string' ? code : String(err)}`);
    return EXIT_FAILURE;
  }
  const beginShutdown = handleShutdown(proc, config, logger, ops, dispatchers);

  // Receive, delete, visibility, Invoke, the start-up checks and PutMetricData go through the lean signed-HTTP
  // client unless --aws-client sdk; the SDK's Lambda client for Temporal is loaded only when spillover is on.
  const aws = await createAwsAdapters(config.awsClient, config, endpoints, {
    maxSockets: maxSocketsPerHost,
    sqsMaxSockets: sqsSockets,
    metrics: ops?.prometheus,
    logger,
  });
  const lambdaEndpoint = endpointName(endpoints.lambda.url);
  logEndpoints(logger, config, endpoints, lambdaEndpoint);

  try {
    const routes = await runStartupChecks(config, endpoints, aws, lambdaEndpoint, stop, logger);
    if (stop.signal.aborted) return EXIT_OK;

    const metrics = await startMetrics(config, aws, logger, ops, queueCount);
    logStarted(logger, config, routes, tracer !== undefined);
    dispatchers.push(...createDispatchers(config, routes, aws, metrics.sink, logger, tracer, polls));
    const work = dispatchers.map((d) => d.run(stop.signal));
    // Routes whose queues are found, not listed: re-read every --queues-refresh, changed live (src/aws/queue-discovery.ts).
    routes.forEach(({ route, discovery }, i) => {
      if (discovery === undefined) return;
      const dispatcher = dispatchers[i]!;
      const log = logger.child({ component: 'discovery', function: route.functionName });
      // The route receives from the queues found, and the status page shows them before they have traffic; a queue
      // found once running gets the start-up's queue check, logged, not fatal.
      const target: QueueTarget = {
        setQueues: (queues, tagLimits) => {
          dispatcher.setQueues(queues, tagLimits);
          ops?.status.showQueues(queues.map((q) => q.name));
        },
        joined: (queues) => checkFoundQueues(route, queues, log),
      };
      // The tags' limits of the queues found at start-up (--queue-options holds the rest).
      target.setQueues(discovery.found.queues, discovery.found.tagLimits);
      discovery.finder.report(discovery.found, metrics.sink, true);
      work.push(discovery.finder.run(target, stop.signal, metrics.sink));
    });
    if (config.temporal) {
      // Loaded only when configured: the Temporal client is large and most deployments do not use it.
      const { runTemporalSpillover } = await import('../temporal/spillover.ts');
      work.push(
        runTemporalSpillover(
          config.temporal,
          {
            logger,
            metrics: metrics.sink,
            lambda: await aws.sdk.lambda(),
            aws: { region: config.region, endpointUrl: config.endpointUrl },
          },
          stop.signal,
        ),
      );
    }
    ops?.running(dispatchers);
    const failures = await awaitParts(work, stop, beginShutdown);
    await metrics.finish();
    if (failures.length > 0) {
      const reason = failures.map((f) => (f instanceof Error ? f.message : String(f))).join('; ');
      logger.fatal({ reason, err: failures[0] }, 'failed');
      proc.tell(`failed: ${reason}`);
      return EXIT_FAILURE;
    }
    logger.info('stopped cleanly');
    return EXIT_OK;
  } catch (err) {
    // A signal during start-up aborts the start-up calls: that is a clean stop, not a failure.
    if (stop.signal.aborted) {
      logger.info('stopped during start-up');
      return EXIT_OK;
    }
    if (err instanceof StartupError) {
      logger.fatal({ reason: err.message }, 'cannot start');
      proc.tell(err.message);
      return EXIT_FAILURE;
    }
    throw err;
  } finally {
    await tracer?.shutdown();
    await ops?.close();
    aws.destroy();
  }
}
