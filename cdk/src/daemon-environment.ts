/**
 * The construct's props to the container's WORKERLESS_* environment, checked at synth by the daemon's own
 * configuration code (src/config: collectOptions -> addDefaults -> compileConfig), so the construct refuses exactly
 * what the daemon would refuse at start-up, with the same words, naming the prop and its variable.
 */
import { Token } from 'aws-cdk-lib';
import { collectOptions } from '../../src/config/cli.ts';
import { OPTIONS, resolveConfig, type Config } from '../../src/config/config.ts';
import { envName } from '../../src/config/options.ts';
import { addDefaults } from '../../src/config/with-defaults.ts';
import { FLAGS, type DaemonOptions } from './options.generated.ts';

/**
 * Options the construct sets itself, or does not support yet: every other option of the daemon is a prop.
 * function, queues, failureDestination, temporalFunction, temporalApiKey, fleetTable: given as CDK resources (same
 * names), so the task role's grants follow them;
 * httpPort, httpHost: the container serves /healthz on 8080 for its health check; region: the stack's;
 * config: the options are the environment, there is no file in the container; endpointUrl: for local tests only;
 * routes, queuesPrefix, queuesTag, temporalVersions: their IAM grants depend on names known only at run time;
 * temporalEcsService: the worker set's ECS service needs ecs:UpdateService and ecs:DescribeServices, not granted yet;
 * temporalTlsCert/Key/Ca: files, which Fargate cannot mount from a secret (use temporalApiKey).
 */
export const SET_BY_CONSTRUCT = [
  'function',
  'queues',
  'failureDestination',
  'temporalFunction',
  'temporalApiKey',
  'fleetTable',
  'httpPort',
  'httpHost',
  'region',
  'config',
  'endpointUrl',
  'routes',
  'queuesPrefix',
  'queuesTag',
  'temporalVersions',
  'temporalEcsService',
  'temporalTlsCert',
  'temporalTlsKey',
  'temporalTlsCa',
] as const satisfies readonly (keyof DaemonOptions)[];

/** The daemon's options a construct takes as plain values. */
export type WorkerlessOptions = Omit<DaemonOptions, (typeof SET_BY_CONSTRUCT)[number]>;

export const HTTP_PORT = 8080;

/** A value the construct sets, and what to validate in its place when it is a token (unknown until deploy). */
export interface SetValue {
  readonly value: string;
  readonly placeholder: string;
}

export interface EnvironmentInput {
  readonly options: WorkerlessOptions;
  readonly set: Readonly<Record<string, SetValue>>;
  readonly region: string;
  /** Whether the Temporal API key comes as an ECS secret (its value is not known at synth). */
  readonly temporalApiKey: boolean;
}

export interface DaemonEnvironment {
  readonly environment: Record<string, string>;
  /** The daemon's configuration compiled from the validated environment (placeholders for tokens). */
  readonly config: Config;
}

/** How a typed prop is written into its variable: as the flag takes it on the command line. */
function text(value: unknown): string {
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  return JSON.stringify(value);
}

function isToken(value: unknown): boolean {
  return (typeof value === 'string' || typeof value === 'number') && Token.isUnresolved(value);
}

/**
 * The environment of the container, or an Error listing every problem, each naming the prop and its variable
 * ("concurrency: --concurrency must be an integer from 1 to 10000, got "0" (from WORKERLESS_CONCURRENCY)").
 */
export function daemonEnvironment(input: EnvironmentInput): DaemonEnvironment {
  const environment: Record<string, string> = {};
  const checked: Record<string, string> = {};
  const unsupported = new Set<string>(SET_BY_CONSTRUCT);
  const problems: string[] = [];
  for (const [name, value] of Object.entries<unknown>(input.options)) {
    if (value === undefined) continue;
    const flag = (FLAGS as Record<string, string>)[name];
    if (flag === undefined || unsupported.has(name)) {
      problems.push(`${name} is not an option the construct takes`);
      continue;
    }
    environment[envName(flag)] = text(value);
    // A token's value is known only at deploy time: the daemon checks it when it starts.
    if (!isToken(value)) checked[envName(flag)] = text(value);
  }
  for (const [flag, v] of Object.entries(input.set)) {
    environment[envName(flag)] = v.value;
    checked[envName(flag)] = Token.isUnresolved(v.value) ? v.placeholder : v.value;
  }
  if (input.temporalApiKey) checked[envName('temporal-api-key')] = 'placeholder-api-key';
  const region = Token.isUnresolved(input.region) ? 'us-east-1' : input.region;
  const env = { ...checked, AWS_REGION: region };
  const collected = collectOptions([], env, OPTIONS);
  problems.push(...collected.problems);
  // The TLS files are not options of the construct: no file is read at synth.
  const result = resolveConfig(
    collected.raw,
    env,
    addDefaults(collected.raw, () => undefined),
  );
  if (!result.ok) problems.push(...result.problems);
  if (problems.length > 0 || !result.ok) {
    throw new Error(`invalid workerless options:\n${problems.map((p) => `  - ${named(p)}`).join('\n')}`);
  }
  return { environment, config: result.config };
}

/** Prefixes a daemon problem with the prop it came from, found through the variable it names. */
function named(problem: string): string {
  const match = /WORKERLESS_[A-Z0-9_]+/.exec(problem) ?? /--([a-z0-9-]+)/.exec(problem);
  if (match === null) return problem;
  const variable = match[0].startsWith('--') ? envName(match[1]!) : match[0];
  const prop = Object.keys(FLAGS).find((k) => envName((FLAGS as Record<string, string>)[k]!) === variable);
  return prop !== undefined ? `${prop}: ${problem}` : problem;
}
