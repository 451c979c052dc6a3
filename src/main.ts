#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=10
// The #! line's V8 flags, and why each (young generation capped, full collections before promoted garbage piles
// up): src/daemon/node-flags.ts, which also adds them when Node was started without them.
// main.ts parses the command line and the configuration, then hands the process to one of the commands: the
// daemon (src/daemon/daemon.ts), `workerless check` (src/check/run-check.ts) or `workerless migrate`
// (src/migrate/run-migrate.ts, which reads its own flags). It is the one module that
// touches `process` (argv, env, signals, stdio, exit codes); the commands get what they need from it as a port.
import { readFileSync } from 'node:fs';
import type { AwsEndpoints } from './aws/endpoints.ts';
import { restoreV8HeapGrowth } from './daemon/heap-growth.ts';
import { ensureNodeFlags } from './daemon/node-flags.ts';
import { EXIT_CODES_HELP, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './core/exit-codes.ts';

const nodeFlagWarnings = ensureNodeFlags(process); // first, before the heap grows: restarts Node with its flags, or warns
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
  // `workerless migrate`: a config from a function's SQS trigger, and the switch; its flags are not a run's.
  if (process.argv[2] === 'migrate') {
    const { runMigrate } = await import('./migrate/run-migrate.ts');
    return runMigrate(process.argv.slice(3), {
      stop: stop.signal,
      env: process.env,
      print: (text) => process.stdout.write(text),
      tell,
    });
  }
  const [{ collectOptions, helpText }, { OPTIONS: defs, resolveConfig, totalLoops }, { addDefaults }, { loadAwsRegion }] =
    await Promise.all([
      import('./config/cli.ts'),
      import('./config/config.ts'),
      import('./config/with-defaults.ts'),
      import('./config/region.ts'),
    ]);
  // `workerless check [options]` validates the same options as a run, then checks them instead of running.
  const check = process.argv[2] === 'check';
  const cli = collectOptions(process.argv.slice(check ? 3 : 2), process.env, defs);
  if (cli.help) {
    process.stdout.write(`${helpText(defs, EXIT_CODES_HELP)}\n`);
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
    for (const p of problems) tell(p);
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
    endpoints = await resolveAwsEndpoints(config.region, config.endpointUrl, { dynamodb: config.fleet !== undefined });
  } catch (err) {
    if (!(err instanceof EndpointConfigError)) throw err;
    for (const p of err.problems) tell(p);
    return EXIT_USAGE;
  }
  const queueRefs = config.routes.flatMap((route) => route.queues.queues.map((q) => q.ref));
  const warnings = [...nodeFlagWarnings, ...cli.warnings, ...plainHttpWarnings(endpoints, queueRefs)];
  if (check) {
    const { runCheck } = await import('./check/run-check.ts');
    return runCheck(config, endpoints, warnings, {
      stop: stop.signal,
      env: process.env,
      print: (text) => process.stdout.write(text),
      tell,
    });
  }
  const { createDaemonLogger } = await import('./daemon/daemon-logger.ts');
  const { logger, recentErrors } = await createDaemonLogger(config.logLevel, config.httpPort !== undefined, process.stdout, process.pid);
  for (const w of warnings) logger.warn(w);
  for (const route of config.routes.filter((r) => r.pollForSec === 0 && r.sleepSec === 0))
    logger.warn({ function: route.functionName }, '--poll-for 0 with --sleep 0: idle loops will call ReceiveMessage without pause');
  if (stop.signal.aborted) {
    logger.info('stopped before start-up');
    return EXIT_OK;
  }
  // A large run gives V8 its own heap growth back (src/daemon/heap-growth.ts); node:v8 loads only then.
  if (restoreV8HeapGrowth(totalLoops(config.routes), process.execArgv, process.env['NODE_OPTIONS'])) {
    process.getBuiltinModule('node:v8').setFlagsFromString('--heap-growing-percent=0');
  }
  const { runDaemon } = await import('./daemon/daemon.ts');
  return runDaemon(config, endpoints, logger, recentErrors, {
    stop,
    onSignal: (handler) => {
      onSignal = handler;
    },
    env: process.env,
    tell,
    exit: (code) => process.exit(code),
    version: version(),
  });
}

// How long a finished run, settled and flushed, may wait for the event loop to end before main exits anyway: a
// handle we cannot cancel (the Temporal client's gRPC connect, 10 s) must not hold the stop up.
const EXIT_GRACE_MS = 500;

/** One line for the operator on stderr. */
function tell(line: string): void {
  process.stderr.write(`workerless: ${line}\n`);
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
    setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
  },
  (err: unknown) => {
    tell(`unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(EXIT_FAILURE);
  },
);
