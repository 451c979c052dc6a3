// `workerless check`: proves, before a deploy, that a configuration can run. It resolves every queue,
// DryRun-invokes the functions, reads their configuration and reserved concurrency and compares them with the
// routes as Lambda's SQS trigger would (function-fit.ts, queue-checks.ts), sends one CloudWatch datum, reads the
// Temporal task queues and checks the fleet's table, and turns each outcome into one line. The I/O sits behind
// CheckPorts (check-adapters.ts builds the real ones), so this file decides only what is checked and how the
// lines are put together; the checks of a function (function-checks.ts), of Temporal (temporal-check.ts) and of
// the fleet's table (fleet-check.ts) and what an AWS error means for the operator (check-errors.ts) are files of
// their own.
import { callErrorOf, withDeadline } from '../core/errors.ts';
import type { Config } from '../config/config.ts';
import type { QueueSpec } from '../receive/queue-order.ts';
import { describeSelector, type QueueSelector } from '../receive/queue-set.ts';
import { discoveryFailure, discoveryLine } from './discovery-check.ts';
import { QUEUE_RESOLVES_AT_ONCE, queueNameOf, type ResolvedQueue } from '../core/queue.ts';
import { mapBounded } from '../util/each-bounded.ts';
import { splitFunctionRef } from './function-ref.ts';
import { QUEUE_CHECKS } from './queue-checks.ts';
import { queueResolveVerdict } from './queue-resolve.ts';
import { explainAwsError, type Checked } from './check-errors.ts';
import { checkFunction, checkFunctionDryRun, concurrencyLine, functionLoads, readReserved } from './function-checks.ts';
import { dryRunParams } from './dry-run.ts';
import { checkLine } from './check-line.ts';
import { checkTemporal } from './temporal-check.ts';
import { checkFleetTable } from './fleet-check.ts';
import { spilloverFunctions } from '../temporal/options.ts';
import type { CheckPorts, CheckReport, CheckResult } from './check-ports.ts';

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
  const loads = functionLoads(config.routes, config.fleet?.concurrency);

  const [found, queues, routeFns, temporalFns, reserved, metrics, temporal, fleet] = await Promise.all([
    Promise.all(config.routes.flatMap((route) => (route.discovery ? [checkDiscovery(ports, route.discovery, deadline())] : []))),
    // As many at a time as the start-up resolves, each under a deadline of its own from when it starts.
    mapBounded(queueSpecs, QUEUE_RESOLVES_AT_ONCE, (q) => checkQueue(ports, q.spec, q.route.visibilityTimeoutSec, deadline())),
    Promise.all(config.routes.map((route) => checkFunction(ports, 'function', route.functionName, deadline, dryRunParams(route)))),
    Promise.all(
      (config.temporal ? spilloverFunctions(config.temporal) : []).map((fn) =>
        checkFunctionDryRun(ports, 'Temporal worker function', fn, deadline()),
      ),
    ),
    Promise.all([...loads.keys()].map((fn) => readReserved(ports, fn, deadline()))),
    config.metricsEnabled ? checkMetrics(ports, config.metricsNamespace, deadline()) : undefined,
    config.temporal ? checkTemporal(ports, config.temporal, deadline) : [],
    config.fleet ? checkFleetTable(ports, config.fleet, deadline()) : undefined,
  ]);
  const ecs = config.temporal?.workerSet?.ecsService;
  const ecsLine: CheckResult[] =
    ecs !== undefined && ports.ecsService !== undefined
      ? [{ name: `ECS service ${ecs.cluster}/${ecs.service}`, ...(await ports.ecsService(ecs, deadline())) }]
      : [];
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
    ...found,
    ...mergeUnreachable(queues.map((q) => q.result)),
    // Each function's configuration line after its DryRun line (never merged: only an unreachable service is).
    ...mergeUnreachable([...routeFns.flatMap((f) => [f.dryRun, ...(f.configuration ? [f.configuration] : [])]), ...temporalFns]),
    ...queueLines,
    ...concurrencyLines,
    ...(metrics ? [metrics] : []),
    ...temporal,
    ...ecsLine,
    ...(fleet ? [fleet] : []),
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
    ...report.results.map((r) => (!r.ok ? `FAIL ${checkLine(r)}` : r.warning ? `warn ${checkLine(r)}` : `ok   ${r.name} (${r.detail})`)),
    ...report.notes.map((n) => `note ${n}`),
  ];
}

export function allPassed(report: CheckReport): boolean {
  return report.results.every((r) => r.ok);
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
    return { result: queueResolveVerdict(spec.ref, err) };
  }
}

/** What a route's --queues-prefix or --queues-tag matches now (src/check/discovery-check.ts). */
async function checkDiscovery(ports: CheckPorts, selector: QueueSelector, signal: AbortSignal): Promise<CheckResult> {
  try {
    const { found, unreadable } = await ports.findQueues(selector, signal);
    return discoveryLine(describeSelector(selector), found, unreadable);
  } catch (err) {
    const line = discoveryFailure(describeSelector(selector), err);
    const at = line.indexOf(': ');
    return { name: line.slice(0, at), ok: false, detail: line.slice(at + 2) };
  }
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
