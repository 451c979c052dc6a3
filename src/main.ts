#!/usr/bin/env -S node --max-semi-space-size=8
// --max-semi-space-size=8: V8's young generation stops at 2 x 8 MiB instead of growing to 2 x 32 MiB under load,
// which took about 40 MiB off the peak RSS at concurrency 100 and about 130 MiB at 10,000, at no measurable CPU
// cost (bench/README.md). The Docker image's entrypoint and `npm start` pass the same flag.
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { AwsEndpoints } from './aws/endpoints.ts';
import type { Config } from './config/config.ts';
import type { Dispatcher } from './dispatch/dispatcher.ts';
import type { RecentErrors } from './operator/status/status-recorder.ts';
import type { OtelDispatchTracer } from './operator/tracing/otel.ts';

/** Exit codes: 0 clean stop, 1 runtime/start-up failure or forced stop, 2 invalid configuration. */
const EXIT_OK = 0;
const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/**
 * The root controller, and signal handlers installed before any dependency is loaded: everything else is
 * imported dynamically below, so a SIGTERM that arrives while Node is still loading the AWS SDK is a clean
 * stop (exit 0) rather than the default kill. The first SIGTERM/SIGINT aborts `stop` (stop receiving,
 * drain); runDaemon replaces `onSignal` with the full handler once it can report what is in flight.
 */
const stop = new AbortController();
let onSignal = (_signal: NodeJS.Signals): void => {
  if (stop.signal.aborted) process.exit(EXIT_FAILURE);
  stop.abort();
};
process.on('SIGTERM', (signal) => onSignal(signal));
process.on('SIGINT', (signal) => onSignal(signal));

async function main(): Promise<number> {
  const [{ collectOptions, helpText }, { OPTIONS: defs, resolveConfig }, { pino }, { addDefaults }, { loadAwsRegion }] = await Promise.all([
    import('./config/cli.ts'),
    import('./config/config.ts'),
    import('pino'),
    import('./config/with-defaults.ts'),
    import('./aws/region.ts'),
  ]);
  // `workerless check [options]` validates the same options as a run, then checks them instead of running.
  const check = process.argv[2] === 'check';
  const cli = collectOptions(process.argv.slice(check ? 3 : 2), process.env, defs);
  if (cli.help) {
    process.stdout.write(
      `${helpText(defs, 'Exit codes: 0 stopped cleanly (check: every check passed), 1 failure or forced stop (check: a check failed), 2 invalid configuration.')}\n`,
    );
    return EXIT_OK;
  }
  if (cli.version) {
    process.stdout.write(`${version()}\n`);
    return EXIT_OK;
  }
  // Without --region, the SDK's chain: the environment, the shared config profile (files read through the SDK's
  // loaders), the instance metadata.
  const awsRegion = addDefaults(cli.raw).has('region') ? undefined : await loadAwsRegion(process.env);
  const resolved = resolveConfig(cli.raw, process.env, undefined, awsRegion);
  const problems = [...cli.problems, ...(resolved.ok ? [] : resolved.problems)];
  if (!resolved.ok || problems.length > 0) {
    for (const p of problems) process.stderr.write(`workerless: ${p}\n`);
    process.stderr.write('Run "workerless --help" for the options.\n');
    return EXIT_USAGE;
  }
  const config = resolved.config;
  // The endpoints, once, by the SDK's rules; a setting the SDK would refuse on every call is a configuration error.
  const [{ resolveAwsEndpoints, EndpointConfigError }, { plainHttpWarnings }] = await Promise.all([
    import('./aws/endpoints.ts'),
    import('./aws/plain-http.ts'),
  ]);
  let endpoints: AwsEndpoints;
  try {
    endpoints = await resolveAwsEndpoints(config.region, config.endpointUrl);
  } catch (err) {
    if (!(err instanceof EndpointConfigError)) throw err;
    for (const p of err.problems) process.stderr.write(`workerless: ${p}\n`);
    return EXIT_USAGE;
  }
  const queueRefs = config.routes.flatMap((route) => route.queues.queues.map((q) => q.ref));
  const warnings = [...cli.warnings, ...plainHttpWarnings(endpoints, queueRefs)];
  if (check) return runCheck(config, endpoints, warnings);
  // With the HTTP server on, warn and error lines also feed the status page's "recent errors" (fields allow-listed).
  const recentErrors =
    config.httpPort !== undefined ? new (await import('./operator/status/status-recorder.ts')).RecentErrors() : undefined;
  const logger = recentErrors
    ? pino(
        { level: config.logLevel, base: { pid: process.pid } },
        pino.multistream([
          { level: 'trace', stream: process.stdout },
          { level: 'warn', stream: recentErrors.stream },
        ]),
      )
    : pino({ level: config.logLevel, base: { pid: process.pid } });
  for (const w of warnings) logger.warn(w);
  for (const route of config.routes.filter((r) => r.pollForSec === 0 && r.sleepSec === 0)) {
    logger.warn({ function: route.functionName }, '--poll-for 0 with --sleep 0: idle loops will call ReceiveMessage without pause');
  }
  if (stop.signal.aborted) {
    logger.info('stopped before start-up');
    return EXIT_OK;
  }
  return runDaemon(config, endpoints, logger, recentErrors);
}

async function runDaemon(config: Config, endpoints: AwsEndpoints, logger: Logger, recentErrors: RecentErrors | undefined): Promise<number> {
  const [
    { createAwsAdapters },
    { Dispatcher },
    { checkFunction },
    { StartupError, resolveQueues },
    { SharedReceiveSource },
    { redactTemporalConfig },
    { fanOut },
    { OtelConfigError, describeProblem, resolveOtelEnv },
    { endpointName },
    { awsSocketCeiling, fdBudget, readOpenFileLimit },
  ] = await Promise.all([
    import('./aws/adapters.ts'),
    import('./dispatch/dispatcher.ts'),
    import('./invoke/function-check.ts'),
    import('./aws/sqs-source.ts'),
    import('./receive/shared-receive.ts'),
    import('./temporal/options.ts'),
    import('./operator/metrics/metrics-sink.ts'),
    import('./operator/tracing/otel-env.ts'),
    import('./aws/endpoints.ts'),
    import('./operator/http/fd-budget.ts'),
  ]);
  // Tracing is configured by the standard OTEL_* variables; an invalid one is a configuration error (exit 2).
  // OpenTelemetry, like the HTTP server's prom-client below, is loaded only when it is configured.
  let tracer: OtelDispatchTracer | undefined;
  try {
    tracer = resolveOtelEnv(process.env)
      ? await (await import('./operator/tracing/otel.ts')).createOtelTracer(process.env, logger, { functionRegion: endpoints.region })
      : undefined;
  } catch (err) {
    if (!(err instanceof OtelConfigError)) throw err;
    for (const p of err.problems) process.stderr.write(`workerless: ${describeProblem(p)}\n`);
    return EXIT_USAGE;
  }
  // Every worker loop may hold one long poll and one invocation open at a time.
  const loops = config.routes.reduce((sum, route) => sum + route.concurrency, 0);
  const maxSocketsPerHost = loops + 16;
  // The AWS pool comes first; the HTTP server gets a small share of what it leaves (src/operator/http/fd-budget.ts).
  const fds = fdBudget({
    openFileLimit: readOpenFileLimit(),
    awsSockets: awsSocketCeiling(maxSocketsPerHost),
    httpServer: config.httpPort !== undefined,
  });
  if (fds.shortfall) {
    logger.warn(
      fds.shortfall,
      'open-file limit below what the AWS sockets may need: AWS calls can fail with EMFILE; raise it (ulimit -n) or lower --concurrency',
    );
  }
  // The HTTP server starts before the start-up checks, so /readyz says "starting" while they run.
  const ops =
    config.httpPort !== undefined
      ? new (await import('./operator/operations.ts')).Operations(config, logger.child({ component: 'http' }), version(), recentErrors)
      : undefined;
  try {
    await ops?.start(fds.httpMaxConnections);
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    process.stderr.write(
      `workerless: cannot listen on ${config.httpHost}:${config.httpPort}: ${typeof code === 'string' ? code : String(err)}\n`,
    );
    return EXIT_FAILURE;
  }
  // A second signal or the shutdown timeout ends the process with code 1 after logging what was left in flight.
  const dispatchers: Dispatcher[] = [];
  const forceExit = (reason: string) => {
    logger.error(
      { reason, left: dispatchers.flatMap((d) => d.status().inFlight) },
      'forced exit; messages left in flight return after their visibility timeout',
    );
    process.exit(EXIT_FAILURE);
  };
  const beginShutdown = (signal: NodeJS.Signals | 'earlier signal' | 'failure') => {
    ops?.stopping();
    logger.info(
      { signal, shutdownTimeoutMs: config.shutdownTimeoutMs },
      'shutting down: no new receives; receives in flight complete (up to --poll-for), then every received message is invoked and settled',
    );
    setTimeout(() => forceExit('shutdown timeout'), config.shutdownTimeoutMs).unref();
  };
  onSignal = (signal) => {
    if (stop.signal.aborted) return forceExit(`second ${signal}`);
    stop.abort();
    beginShutdown(signal);
  };
  if (stop.signal.aborted) beginShutdown('earlier signal');

  // Receive, delete, visibility, Invoke, the start-up checks and PutMetricData go through the lean signed-HTTP
  // client unless --aws-client sdk; the SDK's Lambda client for Temporal is loaded only when spillover is on.
  const aws = await createAwsAdapters(config.awsClient, config, endpoints, {
    maxSockets: maxSocketsPerHost,
    metrics: ops?.prometheus,
    logger,
  });
  const lambdaEndpoint = endpointName(endpoints.lambda.url);
  logger.info(
    {
      region: endpoints.region,
      regionFrom: config.regionOrigin,
      fips: endpoints.useFips,
      dualStack: endpoints.useDualStack,
      sqs: endpointName(endpoints.sqs.url),
      // Without a configured endpoint, SQS calls for a queue URL go to that URL's host, as the SDK sends them.
      sqsQueueUrlCalls: endpoints.sqs.custom ? 'to the sqs endpoint' : "to the queue URL's host",
      lambda: lambdaEndpoint,
      cloudwatch: endpointName(endpoints.cloudwatch.url),
      awsClient: config.awsClient,
    },
    'AWS endpoints',
  );

  try {
    const startup = AbortSignal.any([stop.signal, AbortSignal.timeout(60_000)]);
    // Each route's queues and function, checked before anything is received.
    const routes = await Promise.all(
      config.routes.map(async (route) => {
        const queues = await resolveQueues(aws.sqs, route.queues.queues, route.visibilityTimeoutSec, startup, endpoints.sqs);
        const invoker = aws.invoker(route.functionName);
        await checkFunction(invoker, route.functionName, startup, 'function', lambdaEndpoint);
        return { route, queues, invoker };
      }),
    );
    for (const q of routes.flatMap((r) => r.queues).filter((q) => q.visibilityTimeoutSec === 0)) {
      logger.warn(
        { queue: q.name },
        'queue has VisibilityTimeout 0: a message can be received again while it is processed; set --visibility-timeout',
      );
    }
    // Spillover only invokes its function once a backlog builds, and then logs refusals and retries: a typo in
    // --temporal-function would go unnoticed until the day it is needed.
    const spillFn = config.temporal?.functionName;
    if (spillFn !== undefined)
      await checkFunction(await aws.sdkInvoker(spillFn), spillFn, startup, 'Temporal worker function', lambdaEndpoint);
    if (stop.signal.aborted) return EXIT_OK;

    const cloudwatchMetrics = config.metricsEnabled
      ? new (await import('./operator/metrics/cloudwatch.ts')).CloudWatchMetrics(
          await aws.cloudwatch(),
          logger.child({ component: 'metrics' }),
          {
            namespace: config.metricsNamespace,
          },
        )
      : undefined;
    const sink = fanOut([...(cloudwatchMetrics ? [cloudwatchMetrics] : []), ...(ops?.sinks ?? [])]);
    const metricsStop = new AbortController();
    const metricsLoop = cloudwatchMetrics?.run(config.metricsIntervalMs, metricsStop.signal);

    logger.info(
      {
        routes: routes.map(({ route, queues }) => ({
          function: route.functionName,
          queues: queues.map((q) => ({ name: q.name, weight: q.weight, fifo: q.fifo, url: q.url })),
          order: route.queues.mode,
          concurrency: route.concurrency,
          batchSize: route.batchSize,
          batchWindowMs: route.batchWindowMs,
          pollForSec: route.pollForSec,
          deleteMode: route.deleteMode,
        })),
        metrics: cloudwatchMetrics ? config.metricsNamespace : 'off',
        http: config.httpPort !== undefined ? `${config.httpHost}:${config.httpPort}` : 'off',
        tracing: tracer ? 'otlp' : 'off',
        temporal: config.temporal ? redactTemporalConfig(config.temporal) : 'off',
      },
      'workerless started',
    );
    for (const { route, queues, invoker } of routes) {
      dispatchers.push(
        new Dispatcher(
          {
            // The route's options, with its queues resolved.
            ...route,
            queues,
            orderMode: route.queues.mode,
            // Throttled batches may retry during the first part of the drain; the rest is left for invocations in flight.
            drainRetryMs: Math.max(0, config.shutdownTimeoutMs - 15_000),
          },
          {
            source: new SharedReceiveSource(aws.sqs),
            lookup: aws.sqs,
            invoker,
            metrics: sink,
            logger: logger.child(
              routes.length === 1 ? { component: 'dispatcher' } : { component: 'dispatcher', function: route.functionName },
            ),
            ...(tracer ? { tracer } : {}),
          },
        ),
      );
    }
    const work = dispatchers.map((d) => d.run(stop.signal));
    if (config.temporal) {
      // Loaded only when configured: the Temporal client is large and most deployments do not use it.
      const { runTemporalSpillover } = await import('./temporal/spillover.ts');
      work.push(runTemporalSpillover(config.temporal, { logger, metrics: sink, lambda: await aws.sdk.lambda() }, stop.signal));
    }
    ops?.running(dispatchers);
    // A part that fails (a worker loop's bug, spillover) stops the others the way a signal does, so they
    // drain and settle what they hold; the daemon then exits 1 with the reason instead of reporting a stop.
    const failures: unknown[] = [];
    await Promise.all(
      work.map((part) =>
        part.catch((err: unknown) => {
          failures.push(err);
          if (!stop.signal.aborted) {
            stop.abort();
            beginShutdown('failure');
          }
        }),
      ),
    );
    metricsStop.abort();
    await metricsLoop;
    await cloudwatchMetrics?.flush();
    if (failures.length > 0) {
      const reason = failures.map((f) => (f instanceof Error ? f.message : String(f))).join('; ');
      logger.fatal({ reason, err: failures[0] }, 'failed');
      process.stderr.write(`workerless: failed: ${reason}\n`);
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
      process.stderr.write(`workerless: ${err.message}\n`);
      return EXIT_FAILURE;
    }
    throw err;
  } finally {
    await tracer?.shutdown();
    await ops?.close();
    aws.destroy();
  }
}

/** `workerless check`: one line per check on stdout; exit 0 when every check passed, 1 otherwise. */
async function runCheck(config: Config, endpoints: AwsEndpoints, warnings: readonly string[]): Promise<number> {
  const [{ runChecks, formatReport, allPassed }, { createCheckAdapters }, { OtelConfigError, describeProblem, resolveOtelEnv }] =
    await Promise.all([import('./check/check.ts'), import('./check/check-adapters.ts'), import('./operator/tracing/otel-env.ts')]);
  // Invalid OTEL_* variables stop a run with exit 2, so they fail the check the same way.
  try {
    resolveOtelEnv(process.env);
  } catch (err) {
    if (!(err instanceof OtelConfigError)) throw err;
    for (const p of err.problems) process.stderr.write(`workerless: ${describeProblem(p)}\n`);
    return EXIT_USAGE;
  }
  for (const w of warnings) process.stderr.write(`workerless: warning: ${w}\n`);
  const adapters = createCheckAdapters(config, endpoints);
  try {
    const report = await runChecks(config, adapters, { signal: stop.signal });
    process.stdout.write(`${formatReport(report).join('\n')}\n`);
    return allPassed(report) && !stop.signal.aborted ? EXIT_OK : EXIT_FAILURE;
  } finally {
    adapters.close();
  }
}

function version(): string {
  for (const rel of ['../../package.json', '../package.json']) {
    try {
      return (JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { version: string }).version;
    } catch {
      // try the next layout (dist/src/main.js or src/main.ts)
    }
  }
  return 'unknown';
}

main().then(
  (code) => {
    process.exitCode = code;
    // Everything is settled and flushed by now. A handle we cannot cancel (the Temporal client's gRPC connect,
    // which has its own 10 s timeout) must not hold the stop up: exit soon if the event loop does not end itself.
    setTimeout(() => process.exit(code), 500).unref();
  },
  (err: unknown) => {
    process.stderr.write(`workerless: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(EXIT_FAILURE);
  },
);
