import { unreachableReason } from '../aws/errors.ts';
import { NETWORK_HINT, StartupError, firstLine } from '../aws/sqs-source.ts';
import type { FunctionInvoker } from '../invoke/lambda-invoker.ts';

/**
 * Start-up check with InvocationType DryRun: proves the function exists and that we may invoke it, without
 * running it and without any IAM right beyond lambda:InvokeFunction. Throws a StartupError with one line.
 * `what` names the function in that line (default "function"; spillover says "Temporal worker function");
 * `endpoint`, the Lambda endpoint, is named when it cannot be reached.
 */
export async function checkFunction(
  invoker: FunctionInvoker,
  functionName: string,
  signal?: AbortSignal,
  what = 'function',
  endpoint?: string,
): Promise<void> {
  const outcome = await invoker.dryRun(signal);
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
  throw new StartupError(`cannot invoke ${what} "${functionName}": ${e.code}: ${firstLine(e.message)}`);
}
