// `workerless check` of a Lambda function: its DryRun, its configuration (GetFunctionConfiguration, with
// `$LATEST.PUBLISHED` for an unqualified Managed Instances function) and its reserved concurrency
// (GetFunctionConcurrency) against the routes' --concurrency x --replicas (function-fit.ts decides each comparison).
import { callErrorOf, unreachableReason, type ClassifiedError } from '../core/errors.ts';
import type { RouteConfig } from '../dispatch/route.ts';
import type { InvokeParams } from '../core/function-invoker.ts';
import { concurrencyFit, describeFunction, LATEST_PUBLISHED, type FunctionConfiguration, type FunctionLoad } from './function-fit.ts';
import { splitFunctionRef } from './function-ref.ts';
import { asResult } from './queue-checks.ts';
import { dryRunVerdict } from './dry-run.ts';
import { CREDENTIAL_ERRORS, explainAwsError, type Checked } from './check-errors.ts';
import type { CheckPorts, CheckResult } from './check-ports.ts';

/** The function's DryRun line (dry-run.ts reads the answer, as the daemon's start-up does). */
export async function checkFunctionDryRun(
  ports: CheckPorts,
  what: string,
  functionName: string,
  signal: AbortSignal,
  params?: InvokeParams,
): Promise<Checked> {
  return dryRunVerdict(what, functionName, await ports.dryRun(functionName, signal, params), params, ports.endpoints?.lambda);
}

/** A route's function: its DryRun line, its configuration line, and the configuration of the version it runs. */
export interface FunctionChecked {
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
export async function checkFunction(
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
export function functionLoads(routes: readonly RouteConfig[], fleetConcurrency?: number): Map<string, FunctionLoad> {
  const loads = new Map<string, FunctionLoad>();
  for (const route of routes) {
    const fn = splitFunctionRef(route.functionName).function;
    const load = loads.get(fn);
    const adaptive = route.adaptiveConcurrency !== undefined;
    loads.set(fn, {
      concurrency: [...(load?.concurrency ?? []), route.concurrency],
      adaptive: (load?.adaptive ?? true) && adaptive,
      ...(fleetConcurrency !== undefined ? { fleetConcurrency } : {}),
    });
  }
  return loads;
}

export type ReservedRead = { ok: true; reserved: number | undefined } | { ok: false; error: ClassifiedError };

export async function readReserved(ports: CheckPorts, functionName: string, signal: AbortSignal): Promise<ReservedRead> {
  try {
    return { ok: true, reserved: await ports.reservedConcurrency(functionName, signal) };
  } catch (err) {
    return { ok: false, error: callErrorOf(err) };
  }
}

/** The concurrency line of one function (none when its failed DryRun already says why it could not be read). */
export function concurrencyLine(
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
