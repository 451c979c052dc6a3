import type { FunctionInvoker, InvokeParams } from '../core/function-invoker.ts';
import { mustPass } from '../check/check-line.ts';
import { dryRunVerdict } from '../check/dry-run.ts';

/**
 * The start-up DryRun of a function: `workerless check`'s DryRun line (check/dry-run.ts), which must pass; throws a
 * StartupError with that line when it does not. `what` names the function in that line (default "function";
 * spillover says "Temporal worker function"); `endpoint`, the Lambda endpoint, is named when it cannot be reached.
 * `params`: what the DryRun carries (the tenant id of a tenant-isolated function: dryRunParams).
 */
export async function checkFunction(
  invoker: FunctionInvoker,
  functionName: string,
  signal?: AbortSignal,
  what = 'function',
  endpoint?: string,
  params?: InvokeParams,
): Promise<void> {
  mustPass(dryRunVerdict(what, functionName, await invoker.dryRun(signal, params), params, endpoint));
}
