// `workerless check`: proves, before a deploy, that a configuration can run. It resolves every queue,
// DryRun-invokes the functions, reads their configuration and reserved concurrency and compares them with the
// routes as Lambda's SQS trigger would (function-fit.ts, queue-checks.ts), sends one CloudWatch datum and reads the
// Temporal task queues, and turns each outcome into one line. The I/O sits behind CheckPorts (check-adapters.ts
// builds the real ones), so this file decides only what was checked and what each failure means for the operator.
import { callErrorOf, unreachableReason, withDeadline, type ClassifiedError } from '../aws/errors.ts';
import type { Config, RouteConfig } from '../config/config.ts';
import { DRY_RUN_TENANT_ID } from '../daemon/function-check.ts';
import type { InvokeError, InvokeParams, InvokeResult } from '../invoke/lambda-invoker.ts';
import type { QueueSpec } from '../receive/queue-order.ts';
import { NETWORK_HINT, QueueResolveError, firstLine, queueNameOf, type ResolvedQueue } from '../aws/sqs-source.ts';
import type { TemporalConfig } from '../temporal/options.ts';
import { concurrencyFit, describeFunction, LATEST_PUBLISHED, type FunctionConfiguration, type FunctionLoad } from './function-fit.ts';
import { splitFunctionRef } from './function-ref.ts';
import { asResult, QUEUE_CHECKS } from './queue-checks.ts';

/** One check's outcome: `name` says what was checked ("queue payments"), `detail` what was found or what is wrong. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
  /** Passed, but worth the operator's attention: printed as `warn`; the exit code stays 0. */
  readonly warning?: true;
}

export interface CheckReport {
  readonly results: readonly CheckResult[];
  /** What a run needs but a check cannot prove without side effects. */
  readonly notes: readonly string[];
}

/** What the check reads of a task queue; the run's TaskQueueStats (from DescribeTaskQueue) satisfy it. */
export interface TaskQueueBacklog {
  /** `known: false`: the server sent no statistics (an unloaded task queue); the backlog is then unknown, not 0. */
  readonly workflow: { readonly backlog: number; readonly known?: boolean };
  readonly activity: { readonly backlog: number; readonly known?: boolean };
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
  /** An InvocationType DryRun Invoke of the function, with what it carries (the tenant of a tenant-isolated function). */
  dryRun(functionName: string, signal: AbortSignal, params?: InvokeParams): Promise<InvokeResult>;
  /**
   * GetFunctionConfiguration of the function as named, or at `qualifier` (then the name is unqualified); throws
   * an AwsCallError when Lambda refuses.
   */
  functionConfiguration(functionName: string, qualifier: string | undefined, signal: AbortSignal): Promise<FunctionConfiguration>;
  /** GetFunctionConcurrency of an unqualified function: its reserved concurrency, undefined when it has none; throws an AwsCallError. */
  reservedConcurrency(functionName: string, signal: AbortSignal): Promise<number | undefined>;
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
  const queueSpecs = config.routes.flatMap((route) => route.queues.queues.map((spec) => ({ spec, route })));
  const loads = functionLoads(config.routes);

  const [queues, routeFns, temporalFn, reserved, metrics, temporal] = await Promise.all([
    Promise.all(queueSpecs.map((q) => checkQueue(ports, q.spec, q.route.visibilityTimeoutSec, deadline()))),
    Promise.all(config.routes.map((route) => checkFunction(ports, 'function', route.functionName, deadline, dryRunParams(route)))),
    config.temporal ? checkFunctionDryRun(ports, 'Temporal worker function', config.temporal.functionName, deadline()) : undefined,
    Promise.all([...loads.keys()].map((fn) => readReserved(ports, fn, deadline()))),
    config.metricsEnabled ? checkMetrics(ports, config.metricsNamespace, deadline()) : undefined,
    config.temporal ? checkTemporal(ports, config.temporal, deadline) : [],
  ]);
  const fnOf = new Map(config.routes.map((route, i) => [route, routeFns[i]!]));
  const queueLines = queueSpecs.flatMap(({ route }, i) => {
    const queue = queues[i]!.resolved;
    if (queue === undefined) return [];
    const facts = { route, queue, fn: fnOf.get(route)?.runs };
    return QUEUE_CHECKS.map((check) => check(facts)).filter((r) => r !== undefined);
  });
  const concurrencyLines = [...loads].flatMap(([fn, load], i) => {
    const dryRunFailed = config.routes.some((route) => splitFunctionRef(route.functionName).function === fn && !fnOf.get(route)?.dryRun.ok);
    return concurrencyLine(fn, load, config.replicas, reserved[i]!, dryRunFailed, ports.endpoints?.lambda);
  });
  const results = [
    ...mergeUnreachable(queues.map((q) => q.result)),
    // Each function's configuration line after its DryRun line (never merged: only an unreachable service is).
    ...mergeUnreachable([
      ...routeFns.flatMap((f) => [f.dryRun, ...(f.configuration ? [f.configuration] : [])]),
      ...(temporalFn ? [temporalFn] : []),
    ]),
    ...queueLines,
    ...concurrencyLines,
    ...(metrics ? [metrics] : []),
    ...temporal,
  ];
  const notes =
    queueSpecs.length > 0
      ? [
          `${UNCHECKED_SQS_ACTIONS.join(', ')} are needed by a run but not checked: only receiving (which hides messages) or changing messages could prove them`,
        ]
      : [];
  return { results, notes };
}

/**
 * `ok   queue payments (...)`, `warn queue payments visibility: ...`, `FAIL queue x: does not exist (...)`,
 * `note ...`: one line each, no colour.
 */
export function formatReport(report: CheckReport): string[] {
  return [
    ...report.results.map((r) =>
      !r.ok ? `FAIL ${r.name}: ${r.detail}` : r.warning ? `warn ${r.name}: ${r.detail}` : `ok   ${r.name} (${r.detail})`,
    ),
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

/** The queue's line, and the queue itself when it was resolved (for QUEUE_CHECKS). */
interface QueueChecked {
  readonly result: Checked;
  readonly resolved?: ResolvedQueue;
}

async function checkQueue(
  ports: CheckPorts,
  spec: QueueSpec,
  visibilityOverrideSec: number | undefined,
  signal: AbortSignal,
): Promise<QueueChecked> {
  const name = `queue ${queueNameOf(spec.ref)}`;
  try {
    const q = await ports.resolveQueue(spec, signal);
    const visibilitySec = visibilityOverrideSec ?? q.visibilityTimeoutSec;
    const visibility =
      visibilitySec === 0
        ? 'visibility 0 s: a message can be received again while it is processed, set --visibility-timeout'
        : `visibility ${visibilitySec} s${visibilityOverrideSec !== undefined ? ' (--visibility-timeout)' : ''}`;
    return { result: { name, ok: true, detail: `${q.url}, fifo: ${q.fifo ? 'yes' : 'no'}, ${visibility}` }, resolved: q };
  } catch (err) {
    if (!(err instanceof QueueResolveError))
      return { result: { name, ok: false, detail: err instanceof Error ? err.message : String(err) } };
    const e = err.error;
    if (e.code === 'QueueDoesNotExist' || e.code === 'AWS.SimpleQueueService.NonExistentQueue') {
      return { result: { name, ok: false, detail: `does not exist (${e.code})` } };
    }
    // GetQueueAttributes is never tried when GetQueueUrl is refused, so both may be missing.
    const actions = err.operation === 'GetQueueUrl' ? ['sqs:GetQueueUrl', 'sqs:GetQueueAttributes'] : ['sqs:GetQueueAttributes'];
    return { result: { name, ok: false, ...explainAwsError(e, 'SQS', actions, err.endpoint) } };
  }
}

/** A tenant-isolated function's DryRun names a tenant, as the run's start-up check does (src/daemon/function-check.ts). */
function dryRunParams(route: RouteConfig): InvokeParams | undefined {
  return route.tenantIdFrom !== undefined ? { tenantId: DRY_RUN_TENANT_ID } : undefined;
}

async function checkFunctionDryRun(
  ports: CheckPorts,
  what: string,
  functionName: string,
  signal: AbortSignal,
  params?: InvokeParams,
): Promise<Checked> {
  const name = `${what} ${functionName}`;
  const outcome = await ports.dryRun(functionName, signal, params);
  if (outcome.ok)
    return { name, ok: true, detail: `DryRun invoke allowed${params?.tenantId !== undefined ? ` (tenant ${params.tenantId})` : ''}` };
  const e: InvokeError = outcome.error;
  // A throttled dry run still proves the function exists and may be invoked.
  if (e.kind === 'throttled')
    return { name, ok: true, detail: `DryRun invoke throttled (${e.code}), which proves it exists and may be invoked` };
  if (e.code === 'ResourceNotFoundException') return { name, ok: false, detail: `does not exist (${e.code})` };
  return { name, ok: false, ...explainAwsError(e, 'Lambda', ['lambda:InvokeFunction'], ports.endpoints?.lambda) };
}

/** A route's function: its DryRun line, its configuration line, and the configuration of the version it runs. */
interface FunctionChecked {
  readonly dryRun: Checked;
  /** Undefined when the DryRun line already says why nothing could be read (no such function, unreachable). */
  readonly configuration: CheckResult | undefined;
  /** GetFunctionConfiguration of the version an invocation runs; undefined when it could not be read. */
  readonly runs: FunctionConfiguration | undefined;
}

/**
 * The DryRun, and beside it GetFunctionConfiguration: of the function as configured, and for an unqualified
 * Managed Instances function also of `$LATEST.PUBLISHED`, the version such an invoke runs.
 */
async function checkFunction(
  ports: CheckPorts,
  what: string,
  functionName: string,
  deadline: () => AbortSignal,
  params?: InvokeParams,
): Promise<FunctionChecked> {
  const ref = splitFunctionRef(functionName);
  const readConfiguration = async () => {
    const configured = await ports.functionConfiguration(functionName, undefined, deadline());
    if (!configured.managedInstances || ref.qualifier !== undefined) return { configured, runs: configured };
    try {
      const published = await ports.functionConfiguration(ref.function, LATEST_PUBLISHED, deadline());
      return { configured, published, runs: published };
    } catch (err) {
      const e = callErrorOf(err);
      if (e.code === 'ResourceNotFoundException') return { configured, runs: undefined };
      // $LATEST was read: say what it is, and why the version that runs could not be.
      const { detail } = explainAwsError(e, 'Lambda', ['lambda:GetFunctionConfiguration'], ports.endpoints?.lambda);
      return { configured, published: { unreadable: detail }, runs: undefined };
    }
  };
  const [dryRun, read] = await Promise.all([
    checkFunctionDryRun(ports, what, functionName, deadline(), params),
    readConfiguration().then(
      (r) => ({ ok: true as const, ...r }),
      (err: unknown) => ({ ok: false as const, error: callErrorOf(err) }),
    ),
  ]);
  const name = `${what} ${functionName} configuration`;
  if (read.ok) {
    return {
      dryRun,
      configuration: asResult(name, describeFunction(functionName, ref.qualifier, read.configured, read.published)),
      runs: read.runs,
    };
  }
  if (!dryRun.ok && saidByDryRun(read.error)) return { dryRun, configuration: undefined, runs: undefined };
  const { detail } = explainAwsError(read.error, 'Lambda', ['lambda:GetFunctionConfiguration'], ports.endpoints?.lambda);
  return {
    dryRun,
    configuration: {
      name,
      ok: true,
      warning: true,
      detail: `${detail}; so its timeout and version are not checked, nor its queues' visibility timeout against its timeout`,
    },
    runs: undefined,
  };
}

/** A read that failed for a reason the function's failed DryRun line already gives. */
function saidByDryRun(e: ClassifiedError): boolean {
  return e.code === 'ResourceNotFoundException' || unreachableReason(e) !== undefined || CREDENTIAL_ERRORS.has(e.code);
}

/** The routes of each function, by its unqualified name: reserved concurrency is the function's, whatever the alias. */
function functionLoads(routes: readonly RouteConfig[]): Map<string, FunctionLoad> {
  const loads = new Map<string, FunctionLoad>();
  for (const route of routes) {
    const fn = splitFunctionRef(route.functionName).function;
    const load = loads.get(fn);
    const adaptive = route.adaptiveConcurrency !== undefined;
    loads.set(fn, {
      concurrency: [...(load?.concurrency ?? []), route.concurrency],
      adaptive: (load?.adaptive ?? true) && adaptive,
    });
  }
  return loads;
}

type ReservedRead = { ok: true; reserved: number | undefined } | { ok: false; error: ClassifiedError };

async function readReserved(ports: CheckPorts, functionName: string, signal: AbortSignal): Promise<ReservedRead> {
  try {
    return { ok: true, reserved: await ports.reservedConcurrency(functionName, signal) };
  } catch (err) {
    return { ok: false, error: callErrorOf(err) };
  }
}

/** The concurrency line of one function (none when its failed DryRun already says why it could not be read). */
function concurrencyLine(
  functionName: string,
  load: FunctionLoad,
  replicas: number,
  read: ReservedRead,
  dryRunFailed: boolean,
  endpoint: string | undefined,
): CheckResult[] {
  const name = `function ${functionName} concurrency`;
  if (read.ok) return [asResult(name, concurrencyFit(load, replicas, read.reserved))];
  if (dryRunFailed && saidByDryRun(read.error)) return [];
  const { detail } = explainAwsError(read.error, 'Lambda', ['lambda:GetFunctionConcurrency'], endpoint);
  return [{ name, ok: true, warning: true, detail: `${detail}; so --concurrency is not compared with its reserved concurrency` }];
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
          const known = stats.workflow.known !== false && stats.activity.known !== false;
          const backlog = known
            ? String(stats.workflow.backlog + stats.activity.backlog)
            : 'unknown (no statistics: an unloaded task queue)';
          return { name, ok: true, detail: `${where}, backlog ${backlog}` };
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
      const { unreachable: _, ...result } = r;
      out.push(result);
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
