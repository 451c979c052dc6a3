/**
 * The command line of `workerless migrate`. --function, --region and --endpoint-url are the daemon's own options,
 * read through their definitions (src/config/options.ts), so they take the same values and give the same errors;
 * the rest are migrate's. Every invalid value is reported with its flag and value (exit 2), all at once.
 */
import parseArgv from 'yargs-parser';
import type { RawValue } from '../config/cli.ts';
import { addDefaults, parseDurationMs } from '../config/with-defaults.ts';
import { formatMs } from '../config/options.ts';

export type MigrateAction = 'print' | 'cutover' | 'rollback';

export interface MigrateOptions {
  readonly functionName: string;
  readonly region: string | undefined;
  readonly endpointUrl: string | undefined;
  readonly action: MigrateAction;
  /** --ready-url: the /readyz of the workerless run that takes over (with --cutover). */
  readonly readyUrl: string | undefined;
  /** --ready-timeout: how long --cutover waits for it, in milliseconds. */
  readonly readyTimeoutMs: number;
  /** --partial: --cutover disables the mappings of the queues the run reads and keeps the others enabled. */
  readonly partial: boolean;
}

export type MigrateArgs =
  | { readonly help: true }
  | { readonly help: false; readonly options: MigrateOptions }
  | { readonly help: false; readonly problems: readonly string[] };

const SHARED = ['function', 'region', 'endpoint-url'] as const;
const OWN_STRINGS = ['ready-url', 'ready-timeout'] as const;
const BOOLEANS = ['cutover', 'rollback', 'partial'] as const;
/** Every flag of `workerless migrate`: --help and docs/migrate.md list each (a unit test holds them to it). */
export const MIGRATE_FLAGS: readonly string[] = [...SHARED, ...BOOLEANS, ...OWN_STRINGS];
const READY_TIMEOUT_DEFAULT_MS = 300_000;
const READY_TIMEOUT_MIN_MS = 1_000;
const READY_TIMEOUT_MAX_MS = 3_600_000;

export const MIGRATE_HELP = `Usage: workerless migrate --function <name|ARN|name:alias> [--region r] [--endpoint-url url]
       workerless migrate --function <name> --cutover --ready-url <url of the run's /readyz> [--ready-timeout 5m] [--partial]
       workerless migrate --function <name> --rollback

Reads the function's SQS event source mappings (ListEventSourceMappings) and their queues (GetQueueAttributes)
and prints a workerless config file (YAML, for --config) that does the same: queues, batch size, batching
window, filters, MaximumConcurrency, ReportBatchItemFailures, metrics; its comments list the queues' redrive
policies and what differs from the trigger, with the reason. The config is checked as the daemon reads it.

  --cutover        Wait until --ready-url answers 200 and that run invokes the function (its status.json), then
                   disable the mappings (UpdateEventSourceMapping Enabled=false); both read the queues meanwhile,
                   which SQS's visibility timeout makes safe. Refuses, changing nothing, when the run does not read
                   the queue of an enabled mapping (that queue would have no consumer), and names each such queue
  --partial        With --cutover: disable only the mappings of the queues the run reads, keep the others enabled
  --ready-url      The /readyz of the workerless run with this config (its --http-port), e.g. http://10.0.0.5:8080/readyz
  --ready-timeout  How long --cutover waits for it (1s-1h) [default: ${formatMs(READY_TIMEOUT_DEFAULT_MS)}]
  --rollback       Enable the mappings again (Enabled=true)
  --region         AWS region (default: AWS_REGION, the shared config profile, ...)
  --endpoint-url   Endpoint for Lambda and SQS (LocalStack, moto); AWS_ENDPOINT_URL[_LAMBDA|_SQS] also work
  --help, -h       Show this help

Exit codes: 0 done, 1 a failure (no SQS mapping, access denied, unreachable, not ready in time, a queue the run
does not read, interrupted), 2 invalid flags.
See docs/migrate.md.`;

export function parseMigrateArgs(argv: readonly string[]): MigrateArgs {
  const parsed = parseArgv([...argv], {
    boolean: ['help', ...BOOLEANS],
    alias: { help: ['h'] },
    string: [...SHARED, ...OWN_STRINGS],
    configuration: { 'duplicate-arguments-array': false, 'strip-aliased': true, 'boolean-negation': false, 'camel-case-expansion': false },
  }) as Record<string, unknown> & { _: (string | number)[] };
  if (parsed['help'] === true) return { help: true };
  const problems: string[] = [];
  const known = new Set<string>(['_', '$0', 'help', ...SHARED, ...OWN_STRINGS, ...BOOLEANS]);
  for (const key of Object.keys(parsed)) if (!known.has(key)) problems.push(`unknown option --${key} (see workerless migrate --help)`);
  for (const extra of parsed._) problems.push(`unexpected argument "${String(extra)}" (options take the form --name value)`);

  // The daemon's options, read by their definitions: the same values accepted, the same error lines.
  const raw = new Map<string, RawValue>();
  for (const flag of SHARED) {
    const value = parsed[flag];
    if (value === '') problems.push(`--${flag} needs a value`);
    else if (value !== undefined) raw.set(flag, { value, origin: `--${flag}` });
  }
  const shared = addDefaults(raw);
  const functionName = shared.given('function');
  const region = shared.given('region');
  const endpointUrl = shared.given('endpoint-url');
  problems.push(...shared.problems);
  if (!raw.has('function')) problems.push('--function is required: the function whose SQS event source mappings to migrate');

  const cutover = parsed['cutover'] === true;
  const rollback = parsed['rollback'] === true;
  if (cutover && rollback) problems.push('--cutover and --rollback are opposites: give one');
  const readyUrl = text(parsed['ready-url']);
  if (readyUrl !== undefined && !isHttpUrl(readyUrl)) problems.push(`--ready-url must be an http(s) URL, got ${JSON.stringify(readyUrl)}`);
  if (cutover && readyUrl === undefined) problems.push('--cutover needs --ready-url: the /readyz of the workerless run that takes over');
  if (!cutover && readyUrl !== undefined) problems.push('--ready-url goes with --cutover');
  const partial = parsed['partial'] === true;
  if (partial && !cutover) problems.push('--partial goes with --cutover');
  const timeoutText = text(parsed['ready-timeout']);
  let readyTimeoutMs = READY_TIMEOUT_DEFAULT_MS;
  if (timeoutText !== undefined) {
    const ms = parseDurationMs(timeoutText);
    if (ms === undefined || ms < READY_TIMEOUT_MIN_MS || ms > READY_TIMEOUT_MAX_MS)
      problems.push(`--ready-timeout must be a duration from 1s to 1h (such as 90s or 5m), got ${JSON.stringify(timeoutText)}`);
    else readyTimeoutMs = ms;
    if (!cutover) problems.push('--ready-timeout goes with --cutover');
  }
  if (problems.length > 0 || functionName === undefined) return { help: false, problems: [...new Set(problems)] };
  return {
    help: false,
    options: {
      functionName,
      region,
      endpointUrl,
      action: cutover ? 'cutover' : rollback ? 'rollback' : 'print',
      readyUrl,
      readyTimeoutMs,
      partial,
    },
  };
}

/** A string flag's value (yargs-parser gives strings for them; a repeated flag keeps its last). */
function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
