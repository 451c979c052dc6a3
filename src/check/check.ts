// `workerless check`: proves, before a deploy, that a configuration can run. It resolves every queue,
// DryRun-invokes the functions, sends one CloudWatch datum and reads the Temporal task queues, and turns each
// outcome into one line. The I/O sits behind CheckPorts (check-adapters.ts builds the real ones), so this file
// decides only what was checked and what each failure means for the operator.
import { callErrorOf, unreachableReason, withDeadline, type ClassifiedError } from '../aws/errors.ts';
import type { Config } from '../config/config.ts';
import type { InvokeError, InvokeResult } from '../invoke/lambda-invoker.ts';
import type { QueueSpec } from '../receive/queue-order.ts';
import { NETWORK_HINT, QueueResolveError, firstLine, queueNameOf, type ResolvedQueue } from '../aws/sqs-source.ts';
import type { TemporalConfig } from '../temporal/options.ts';
import { checkFailureDestinations } from './failure-destination-check.ts';

/** One check's outcome: `name` says what was checked ("queue payments"), `detail` what was found or what is wrong. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

export interface CheckReport {
  readonly results: readonly CheckResult[];
  /** What a run needs but a check cannot prove without side effects. */
  readonly notes: readonly string[];
}

/** What the check reads of a task queue; the run's TaskQueueStats (from DescribeTaskQueue) satisfy it. */
export interface TaskQueueBacklog {
  readonly workflow: { readonly backlog: number };
  readonly activity: { readonly backlog: number };
}

/** A Temporal connection as the check uses it: the run's stats reader, and close. */
export interface TemporalCheckConnection {
  read(taskQueue: string, signal: AbortSignal): Promise<TaskQueueBacklog>;
  close(): Promise<void>;
}

/** The I/O the checks need; each call gets a signal that carries the check's deadline. */
export interface CheckPorts {
  /** Resolves one queue exactly as a run does; throws a QueueResolveError (or StartupError) when it cannot. */
  /** The queue with its own visibility timeout (check.ts applies the route's --visibility-timeout). */
  resolveQueue(spec: QueueSpec, signal: AbortSignal): Promise<ResolvedQueue>;
  /** An InvocationType DryRun Invoke of the function. */
  dryRun(functionName: string, signal: AbortSignal): Promise<InvokeResult>;
  /** Sends one datum to the namespace; throws an AwsCallError when CloudWatch refuses. */
  putCheckDatum(namespace: string, signal: AbortSignal): Promise<void>;
  /** Connects to Temporal with the run's connection options (TLS, API key); bounded by its own connect timeout. */
  connectTemporal(config: TemporalConfig): Promise<TemporalCheckConnection>;
  /** Why nothing answers on host:port over TCP, or undefined when something does: explains a failed connection. */
  probeTcp(address: string, signal: AbortSignal): Promise<string | undefined>;
  /** The Lambda and CloudWatch endpoints a run uses, named when they cannot be reached (SQS errors carry their own). */
  readonly endpoints?: { readonly lambda: string; readonly cloudwatch: string } | undefined;
}

export interface CheckOptions {
  /** Each check's deadline; default 10 s. */
  readonly deadlineMs?: number;
  /** Aborts every check (SIGINT). */
  readonly signal?: AbortSignal;
}

/** The datum `check` sends to prove cloudwatch:PutMetricData: CloudWatch has no dry run. Count 1, no dimensions. */
export const CHECK_METRIC = 'CheckRun';

const DEFAULT_DEADLINE_MS = 10_000;

/** SQS actions a run needs that only calls with side effects could prove (a receive hides messages). */
export const UNCHECKED_SQS_ACTIONS = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility'] as const;

/** Runs every check that the configuration calls for, all of them even when some fail, each under its deadline. */
export async function runChecks(config: Config, ports: CheckPorts, options: CheckOptions = {}): Promise<CheckReport> {
  const deadline = (): AbortSignal => withDeadline(options.deadlineMs ?? DEFAULT_DEADLINE_MS, options.signal);
  const queueSpecs = config.routes.flatMap((route) =>
    route.queues.queues.map((spec) => ({ spec, visibility: route.visibilityTimeoutSec })),
  );
  const functions: { what: string; name: string }[] = config.routes.map((route) => ({ what: 'function', name: route.functionName }));
  if (config.temporal) functions.push({ what: 'Temporal worker function', name: config.temporal.functionName });

  const [queues, fns, metrics, temporal, destinations] = await Promise.all([
    Promise.all(queueSpecs.map((q) => checkQueue(ports, q.spec, q.visibility, deadline()))),
    Promise.all(functions.map((f) => checkFunctionDryRun(ports, f.what, f.name, deadline()))),
    config.metricsEnabled ? checkMetrics(ports, config.metricsNamespace, deadline()) : undefined,
    config.temporal ? checkTemporal(ports, config.temporal, deadline) : [],
    checkFailureDestinations(config, ports, deadline),
  ]);
  const results = [...mergeUnreachable(queues), ...destinations, ...mergeUnreachable(fns), ...(metrics ? [metrics] : []), ...temporal];
  const notes =
    queueSpecs.length > 0
      ? [
          `${UNCHECKED_SQS_ACTIONS.join(', ')} are needed by a run but not checked: only receiving (which hides messages) or changing messages could prove them`,
        ]
      : [];
  return { results, notes };
}

/** `ok   queue payments (...)`, `FAIL queue x: does not exist (...)`, `note ...`: one line each, no colour. */
export function formatReport(report: CheckReport): string[] {
  return [
    ...report.results.map((r) => (r.ok ? `ok   ${r.name} (${r.detail})` : `FAIL ${r.name}: ${r.detail}`)),
    ...report.notes.map((n) => `note ${n}`),
  ];
}

export function allPassed(report: CheckReport): boolean {
  return report.results.every((r) => r.ok);
}

/** A result that failed because its service could not be reached; merged with its siblings into one line. */
interface Checked extends CheckResult {
  readonly unreachable?: { readonly service: string; readonly reason: string };
}

async function checkQueue(
  ports: CheckPorts,
  spec: QueueSpec,
  visibilityOverrideSec: number | undefined,
  signal: AbortSignal,
): Promise<Checked> {
  const name = `queue ${queueNameOf(spec.ref)}`;
  try {
    const q = await ports.resolveQueue(spec, signal);
    const visibilitySec = visibilityOverrideSec ?? q.visibilityTimeoutSec;
    const visibility =
      visibilitySec === 0
        ? 'visibility 0 s: a message can be received again while it is processed, set --visibility-timeout'
        : `visibility ${visibilitySec} s${visibilityOverrideSec !== undefined ? ' (--visibility-timeout)' : ''}`;
    return { name, ok: true, detail: `${q.url}, fifo: ${q.fifo ? 'yes' : 'no'}, ${visibility}` };
  } catch (err) {
    if (!(err instanceof QueueResolveError)) return { name, ok: false, detail: err instanceof Error ? err.message : String(err) };
    const e = err.error;
    if (e.code === 'QueueDoesNotExist' || e.code === 'AWS.SimpleQueueService.NonExistentQueue') {
      return { name, ok: false, detail: `does not exist (${e.code})` };
    }
    // GetQueueAttributes is never tried when GetQueueUrl is refused, so both may be missing.
    const actions = err.operation === 'GetQueueUrl' ? ['sqs:GetQueueUrl', 'sqs:GetQueueAttributes'] : ['sqs:GetQueueAttributes'];
    return { name, ok: false, ...explainAwsError(e, 'SQS', actions, err.endpoint) };
  }
}

async function checkFunctionDryRun(ports: CheckPorts, what: string, functionName: string, signal: AbortSignal): Promise<Checked> {
  const name = `${what} ${functionName}`;
  const outcome = await ports.dryRun(functionName, signal);
  if (outcome.ok) return { name, ok: true, detail: 'DryRun invoke allowed' };
  const e: InvokeError = outcome.error;
  // A throttled dry run still proves the function exists and may be invoked.
  if (e.kind === 'throttled')
    return { name, ok: true, detail: `DryRun invoke throttled (${e.code}), which proves it exists and may be invoked` };
  if (e.code === 'ResourceNotFoundException') return { name, ok: false, detail: `does not exist (${e.code})` };
  return { name, ok: false, ...explainAwsError(e, 'Lambda', ['lambda:InvokeFunction'], ports.endpoints?.lambda) };
}

async function checkMetrics(ports: CheckPorts, namespace: string, signal: AbortSignal): Promise<Checked> {
  const name = `metrics ${namespace}`;
  try {
    await ports.putCheckDatum(namespace, signal);
    return { name, ok: true, detail: `PutMetricData allowed; sent ${CHECK_METRIC} = 1` };
  } catch (err) {
    return {
      name,
      ok: false,
      ...explainAwsError(callErrorOf(err), 'CloudWatch', ['cloudwatch:PutMetricData'], ports.endpoints?.cloudwatch),
    };
  }
}

/** One line when Temporal cannot be reached; else one per task queue, each proven with the run's DescribeTaskQueue. */
async function checkTemporal(ports: CheckPorts, config: TemporalConfig, deadline: () => AbortSignal): Promise<CheckResult[]> {
  const where = `namespace ${config.namespace} at ${config.address}`;
  let connection: TemporalCheckConnection;
  try {
    connection = await ports.connectTemporal(config);
  } catch (err) {
    // The client says only "Failed to connect before the deadline"; a plain TCP connect tells why.
    const reason = await ports.probeTcp(config.address, deadline());
    const detail =
      reason !== undefined
        ? `cannot reach Temporal: ${reason} (check --temporal-address and the network)`
        : `cannot connect: ${describeTemporalError(err)} (the port answers: check --temporal-tls, the TLS files and --temporal-api-key)`;
    return [{ name: `temporal ${config.address}`, ok: false, detail }];
  }
  try {
    return await Promise.all(
      config.taskQueues.map(async (taskQueue): Promise<CheckResult> => {
        const name = `temporal task queue ${taskQueue}`;
        try {
          const stats = await connection.read(taskQueue, deadline());
          return { name, ok: true, detail: `${where}, backlog ${stats.workflow.backlog + stats.activity.backlog}` };
        } catch (err) {
          const hint = grpcStatus(err) === 'PERMISSION_DENIED' ? ` (needs DescribeTaskQueue in namespace ${config.namespace})` : '';
          return { name, ok: false, detail: `${describeTemporalError(err)}${hint}` };
        }
      }),
    );
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** What both AWS error classifications (SQS/CloudWatch and Lambda Invoke) tell. */
type AwsErrorFacts = Pick<ClassifiedError, 'code' | 'message' | 'status'>;

/**
 * The line for an AWS error: access denied names the IAM actions, an unreachable service the endpoint that was
 * tried (when known) and the network hint.
 */
function explainAwsError(
  e: AwsErrorFacts,
  service: string,
  actions: readonly string[],
  endpoint: string | undefined,
): Omit<Checked, 'name' | 'ok'> {
  if (isAccessDenied(e)) return { detail: `access denied (needs ${actions.join(', ')})` };
  if (CREDENTIAL_ERRORS.has(e.code)) return { detail: `credentials refused (${e.code}): ${firstLine(e.message)}` };
  const reason = unreachableReason(e);
  if (reason !== undefined) {
    const where = endpoint !== undefined ? `${service} at ${endpoint}` : service;
    return { detail: `cannot reach ${where}: ${reason} (${NETWORK_HINT})`, unreachable: { service: where, reason } };
  }
  return { detail: `${e.code}: ${firstLine(e.message)}` };
}

/** The request was signed by someone AWS knows, who lacks the permission. */
function isAccessDenied(e: AwsErrorFacts): boolean {
  if (/^(AWS\.SimpleQueueService\.)?AccessDenied(Exception)?$|^AuthorizationError(Exception)?$|^UnauthorizedOperation$/.test(e.code))
    return true;
  return e.status === 403 && !CREDENTIAL_ERRORS.has(e.code) && !e.code.startsWith('KMS');
}

/** The credentials themselves are wrong, missing or expired: no IAM policy would help. */
const CREDENTIAL_ERRORS = new Set([
  'CredentialsProviderError',
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'SignatureDoesNotMatch',
  'IncompleteSignature',
  'IncompleteSignatureException',
  'MissingAuthenticationToken',
  'MissingAuthenticationTokenException',
  'ExpiredToken',
  'ExpiredTokenException',
  'RequestExpired',
  'InvalidAccessKeyId',
]);

/**
 * One line for several results whose service could not be reached for the same reason: an unreachable
 * endpoint is one problem, not one per queue. `queues a, b` when they are all queues, else the names joined.
 */
function mergeUnreachable(results: readonly Checked[]): CheckResult[] {
  const out: CheckResult[] = [];
  const groups = new Map<string, Checked[]>();
  for (const r of results) {
    if (r.unreachable === undefined) continue;
    const key = `${r.unreachable.service}\u0000${r.unreachable.reason}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const emitted = new Set<string>();
  for (const r of results) {
    if (r.unreachable === undefined) {
      out.push({ name: r.name, ok: r.ok, detail: r.detail });
      continue;
    }
    const key = `${r.unreachable.service}\u0000${r.unreachable.reason}`;
    if (emitted.has(key)) continue;
    emitted.add(key);
    const group = groups.get(key) ?? [r];
    const names = group.map((g) => g.name);
    const name =
      group.length > 1 && names.every((n) => n.startsWith('queue '))
        ? `queues ${names.map((n) => n.slice('queue '.length)).join(', ')}`
        : names.join(', ');
    out.push({ name, ok: false, detail: r.detail });
  }
  return out;
}

/** gRPC status names by code, for the statuses an operator can act on. */
const GRPC_STATUS: Readonly<Record<number, string>> = {
  1: 'CANCELLED',
  3: 'INVALID_ARGUMENT',
  4: 'DEADLINE_EXCEEDED',
  5: 'NOT_FOUND',
  7: 'PERMISSION_DENIED',
  8: 'RESOURCE_EXHAUSTED',
  9: 'FAILED_PRECONDITION',
  12: 'UNIMPLEMENTED',
  13: 'INTERNAL',
  14: 'UNAVAILABLE',
  16: 'UNAUTHENTICATED',
};

/** The gRPC status of a Temporal client error (a ServiceError carries the gRPC error as its cause). */
function grpcStatus(err: unknown, depth = 0): string | undefined {
  if (err === null || typeof err !== 'object' || depth > 3) return undefined;
  const e = err as { code?: unknown; cause?: unknown };
  if (typeof e.code === 'number') return GRPC_STATUS[e.code] ?? `gRPC status ${e.code}`;
  return grpcStatus(e.cause, depth + 1);
}

function describeTemporalError(err: unknown): string {
  // grpc-js writes "5 NOT_FOUND: ..."; the number says nothing more than the name.
  const message = firstLine(err instanceof Error ? err.message : String(err)).replace(/^\d+ ([A-Z_]+): /, '$1: ');
  if ((err as { name?: unknown } | null)?.name === 'AbortError') return 'timed out';
  const status = grpcStatus(err);
  return status !== undefined && !message.includes(status) ? `${status}: ${message}` : message;
}
