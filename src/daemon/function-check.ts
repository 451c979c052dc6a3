import { unreachableReason } from '../core/errors.ts';
import { NETWORK_HINT, StartupError, firstLine } from '../core/errors.ts';
import type { FunctionInvoker, InvokeParams } from '../core/function-invoker.ts';

/**
 * Start-up check with InvocationType DryRun: proves the function exists and that we may invoke it, without
 * running it and without any IAM right beyond lambda:InvokeFunction. Throws a StartupError with one line.
 * `what` names the function in that line (default "function"; spillover says "Temporal worker function");
 * `endpoint`, the Lambda endpoint, is named when it cannot be reached. `params`: what the DryRun carries (the tenant
 * id of a tenant-isolated function: DRY_RUN_TENANT_ID).
 */
export async function checkFunction(
  invoker: FunctionInvoker,
  functionName: string,
  signal?: AbortSignal,
  what = 'function',
  endpoint?: string,
  params?: InvokeParams,
): Promise<void> {
  const outcome = await invoker.dryRun(signal, params);
  if (outcome.ok) return;
  const e = outcome.error;
  // Throttling during a dry run still proves the function exists.
  if (e.kind === 'throttled') return;
  if (e.code === 'ResourceNotFoundException')
    throw new StartupError(`${what} "${functionName}" does not exist (ResourceNotFoundException)`);
  const unreachable = unreachableReason(e);
  if (unreachable) {
    const at = endpoint ? ` at ${endpoint}` : '';
    throw new StartupError(`cannot reach Lambda${at} to check ${what} "${functionName}": ${unreachable} (${NETWORK_HINT})`);
  }
  // A function in tenant isolation mode refuses an Invoke without a tenant id as an invalid parameter.
  const hint = e.code === 'InvalidParameterValueException' && params?.tenantId === undefined ? TENANT_HINT : '';
  throw new StartupError(`cannot invoke ${what} "${functionName}": ${e.code}: ${firstLine(e.message)}${hint}`);
}

const TENANT_HINT = ' (if the function is in tenant isolation mode, set --tenant-id-from)';
