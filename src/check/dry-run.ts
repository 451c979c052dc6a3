// The start-up DryRun of a function, as `workerless check` and the daemon's start-up make it.
import type { RouteConfig } from '../dispatch/route.ts';
import type { InvokeParams } from '../core/function-invoker.ts';

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
export function dryRunParams(route: RouteConfig): InvokeParams | undefined {
  return route.tenantIdFrom !== undefined ? { tenantId: DRY_RUN_TENANT_ID } : undefined;
}
