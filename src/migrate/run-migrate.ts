/**
 * `workerless migrate`: the config that does what a function's SQS trigger does (migrate.ts), and the switch
 * (cutover.ts). Every failure is one line on stderr and exit 1; an invalid flag, exit 2 with its name and value.
 */
import { EndpointConfigError, endpointName, resolveAwsEndpoints, type AwsEndpoints } from '../aws/endpoints.ts';
import { loadAwsRegion } from '../config/region.ts';
import { explainAwsError } from '../check/check-errors.ts';
import { AwsCallError } from '../core/errors.ts';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../core/exit-codes.ts';
import { interruptedLines, runServes, switchMappings, waitReady, type RunReads } from './cutover.ts';
import { migrateFunction } from './migrate.ts';
import { createMigrateAdapters, QueueCallError } from './migrate-adapters.ts';
import { MIGRATE_HELP, parseMigrateArgs, type MigrateOptions } from './migrate-options.ts';

/** The process, as main.ts hands it over (main stays the one module that touches `process`). */
export interface MigrateProcess {
  /** Aborted by SIGTERM/SIGINT. */
  readonly stop: AbortSignal;
  readonly env: NodeJS.ProcessEnv;
  /** The config file, or the switch's lines, on stdout. */
  print(text: string): void;
  /** One line on stderr, as `workerless: <line>`. */
  tell(line: string): void;
}

/** The IAM actions each call needs, named when AWS denies one. */
const ACTIONS: Record<string, readonly string[]> = {
  ListEventSourceMappings: ['lambda:ListEventSourceMappings'],
  UpdateEventSourceMapping: ['lambda:UpdateEventSourceMapping'],
  GetQueueUrl: ['sqs:GetQueueUrl'],
  GetQueueAttributes: ['sqs:GetQueueAttributes'],
};

export async function runMigrate(argv: readonly string[], proc: MigrateProcess): Promise<number> {
  const args = parseMigrateArgs(argv);
  if (args.help) {
    proc.print(`${MIGRATE_HELP}\n`);
    return EXIT_OK;
  }
  if ('problems' in args) {
    for (const p of args.problems) proc.tell(p);
    return EXIT_USAGE;
  }
  const options = args.options;
  const region = options.region ?? (await loadAwsRegion(proc.env))?.value;
  if (region === undefined) {
    proc.tell('--region is required (or set AWS_REGION, or region in the shared config profile)');
    return EXIT_USAGE;
  }
  let endpoints: AwsEndpoints;
  try {
    endpoints = await resolveAwsEndpoints(region, options.endpointUrl);
  } catch (err) {
    if (!(err instanceof EndpointConfigError)) throw err;
    for (const p of err.problems) proc.tell(p);
    return EXIT_USAGE;
  }
  const ports = createMigrateAdapters(region, options.endpointUrl, endpoints);
  try {
    return await act(options, ports, proc);
  } catch (err) {
    if (!(err instanceof AwsCallError)) throw err;
    // A stop (SIGINT/SIGTERM) aborts the call: an interruption, not an unreachable endpoint. The switch catches its
    // own (switchMappings), so this is a read, before any change.
    if (proc.stop.aborted) {
      proc.tell(`interrupted during ${err.operation}: nothing was changed`);
      return EXIT_FAILURE;
    }
    proc.tell(failureLine(options.functionName, err, endpoints));
    return EXIT_FAILURE;
  } finally {
    ports.close();
  }
}

async function act(options: MigrateOptions, ports: ReturnType<typeof createMigrateAdapters>, proc: MigrateProcess): Promise<number> {
  const { functionName } = options;
  if (options.action === 'print') {
    const outcome = await migrateFunction(functionName, ports, proc.stop);
    if (!outcome.ok) {
      proc.tell(outcome.problem);
      return EXIT_FAILURE;
    }
    proc.print(outcome.text);
    proc.tell(`${outcome.differences} difference${outcome.differences === 1 ? '' : 's'} from the trigger, listed at the top of the config`);
    return EXIT_OK;
  }
  let reads: RunReads | undefined;
  if (options.action === 'cutover') {
    const notReady = await waitReady(options.readyUrl!, options.readyTimeoutMs, ports, proc.stop);
    if (notReady !== undefined) {
      proc.tell(`--ready-url ${options.readyUrl!}: ${notReady}; the mappings stay enabled`);
      return EXIT_FAILURE;
    }
    const run = await ports.runReads(options.readyUrl!, proc.stop);
    if (proc.stop.aborted) {
      proc.tell(`interrupted while reading what ${options.readyUrl!} runs; the mappings stay enabled`);
      return EXIT_FAILURE;
    }
    if ('unreachable' in run || !runServes(functionName, run.functions)) {
      proc.tell(
        `--ready-url ${options.readyUrl!}: ${'unreachable' in run ? `ready, but which functions it invokes is unknown (${run.unreachable})` : `that run invokes ${run.functions.join(', ') || 'no function'}, not ${functionName}`}; the mappings stay enabled`,
      );
      return EXIT_FAILURE;
    }
    reads = { queues: new Set(run.queues), partial: options.partial };
  }
  const enable = options.action === 'rollback';
  const outcome = await switchMappings(functionName, enable, ports, proc.stop, (line) => proc.print(`${line}\n`), reads);
  switch (outcome.kind) {
    case 'no-mapping':
      proc.tell(`function ${functionName} has no SQS event source mapping: nothing to ${enable ? 'enable' : 'disable'}`);
      return EXIT_FAILURE;
    case 'unread': {
      const s = outcome.queues.length === 1 ? '' : 's';
      proc.tell(
        `--ready-url ${options.readyUrl!}: that run does not read queue${s} ${outcome.queues.join(', ')} of ${functionName}'s mappings, which would be left without a consumer; nothing was changed (run it with ${s === '' ? 'that queue' : 'those queues'}, or give --partial to disable only the mappings of the queues it reads)`,
      );
      return EXIT_FAILURE;
    }
    case 'interrupted':
      for (const line of interruptedLines(outcome, enable)) proc.tell(line);
      return EXIT_FAILURE;
    case 'switched':
      return EXIT_OK;
  }
}

/** One line for a refused or failed AWS call: what was asked, and the check's explanation (access, credentials, network). */
function failureLine(functionName: string, err: AwsCallError, endpoints: AwsEndpoints): string {
  const e = err.error;
  const lambda = err.operation.includes('EventSourceMapping');
  if (lambda && (e.code === 'ResourceNotFoundException' || e.status === 404))
    return `function ${functionName} not found (${err.operation})`;
  const endpoint = endpointName((lambda ? endpoints.lambda : endpoints.sqs).url);
  const { detail } = explainAwsError(e, lambda ? 'Lambda' : 'SQS', ACTIONS[err.operation] ?? [], endpoint);
  return `${err.operation} for ${err instanceof QueueCallError ? `queue ${err.queue} of ${functionName}'s mappings` : functionName}: ${detail}`;
}
