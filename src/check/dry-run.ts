// The DryRun of a function, as `workerless check` and the daemon's start-up make it, and the one reading of its
// answer that both print.
import type { RouteConfig } from '../dispatch/route.ts';
import type { InvokeParams, InvokeResult } from '../core/function-invoker.ts';
import { explainAwsError, type Checked } from './check-errors.ts';

/**
 * The tenant id of the start-up DryRun against a function in tenant isolation mode. Such a function needs a tenant id
 * on every Invoke ("When invoking a function that has tenant isolation enabled, you must provide a tenant-id
 * parameter": AWS Lambda Developer Guide, "Invoking Lambda functions with tenant isolation"), and a DryRun is an
 * Invoke that validates its parameter values without running the function (Invoke API reference,
 * InvocationType). So the DryRun names a tenant; no environment is created for it, since nothing runs. It is a
 * name of its own, so a tenant's logs and a condition on the tenant id can tell it from real tenants.
 */
export const DRY_RUN_TENANT_ID = 'workerless-dry-run';

/** A tenant-isolated function's DryRun names a tenant, as the run's start-up check does (src/daemon/startup-checks.ts). */
export function dryRunParams(route: Pick<RouteConfig, 'tenantIdFrom'>): InvokeParams | undefined {
  return route.tenantIdFrom !== undefined ? { tenantId: DRY_RUN_TENANT_ID } : undefined;
}

/**
 * What the answer to a DryRun Invoke (InvocationType DryRun: proves the function exists and that we may invoke it,
 * without running it and without any IAM right beyond lambda:InvokeFunction) means, as the line named
 * `<what> <functionName>` (`what`: "function", or "Temporal worker function" for spillover's):
 *
 * - allowed: passes (`DryRun invoke allowed`, naming the tenant it carried);
 * - throttled: passes, since a throttled DryRun still proves the function exists and may be invoked;
 * - missing: `does not exist (ResourceNotFoundException)`;
 * - unreachable: `cannot reach Lambda at <endpoint>: <reason> (<network hint>)`, with `unreachable` set so that
 *   `workerless check` says it once for all the functions behind one endpoint;
 * - refused: `cannot invoke: <why>` (access denied names lambda:InvokeFunction, refused credentials say so, else
 *   Lambda's code and message), with the tenant hint when a DryRun that named no tenant was refused as an invalid
 *   parameter, as a function in tenant isolation mode refuses it.
 *
 * `workerless check` prints this line; the daemon's start-up throws it as a StartupError when it fails (check-line.ts).
 */
export function dryRunVerdict(
  what: string,
  functionName: string,
  outcome: InvokeResult,
  params: InvokeParams | undefined,
  endpoint: string | undefined,
): Checked {
  const name = `${what} ${functionName}`;
  if (outcome.ok)
    return { name, ok: true, detail: `DryRun invoke allowed${params?.tenantId !== undefined ? ` (tenant ${params.tenantId})` : ''}` };
  const e = outcome.error;
  if (e.kind === 'throttled')
    return { name, ok: true, detail: `DryRun invoke throttled (${e.code}), which proves it exists and may be invoked` };
  if (e.code === 'ResourceNotFoundException') return { name, ok: false, detail: `does not exist (${e.code})` };
  const explained = explainAwsError(e, 'Lambda', ['lambda:InvokeFunction'], endpoint);
  if (explained.unreachable !== undefined) return { name, ok: false, ...explained };
  const hint = e.code === 'InvalidParameterValueException' && params?.tenantId === undefined ? TENANT_HINT : '';
  return { name, ok: false, detail: `cannot invoke: ${explained.detail}${hint}` };
}

const TENANT_HINT = ' (if the function is in tenant isolation mode, set --tenant-id-from)';
