import type { TaskQueueLoop } from './task-queue-context.ts';
import type { ScalingTarget } from './task-queue-stats.ts';
import type { InvokeOutcome, WorkerInvocationPayload } from './worker-invoker.ts';

/** Event invocations started at once for one scale-up. */
const INVOKE_BATCH = 10;

type Failure = Extract<InvokeOutcome, { kind: 'throttled' | 'refused' | 'failed' }>;

export async function invokeWorkers(
  loop: TaskQueueLoop,
  functionName: string,
  target: ScalingTarget,
  count: number,
  signal: AbortSignal,
): Promise<{ requestIds: Array<string | undefined>; refused: number; failure: Failure | undefined }> {
  const requestedAt = loop.clock.now();
  const payload: WorkerInvocationPayload = {
    source: 'workerless.temporal-spillover',
    namespace: loop.config.namespace,
    taskQueue: loop.taskQueue,
    requestedAt,
    expiresAt: requestedAt + loop.config.workerLifetimeMs,
    startBy: requestedAt + loop.config.workerStartTimeoutMs,
    ...(target.version !== undefined ? { deploymentName: target.version.deploymentName, buildId: target.version.buildId } : {}),
  };
  let refused = 0;
  let failure: Failure | undefined;
  const requestIds: Array<string | undefined> = [];
  // Small batches, stopping at the first refusal: once Lambda throttles, the rest of a burst would be too.
  for (let start = 0; start < count && failure === undefined && !signal.aborted; start += INVOKE_BATCH) {
    const size = Math.min(INVOKE_BATCH, count - start);
    const outcomes = await Promise.all(Array.from({ length: size }, () => loop.invoker.invoke(functionName, payload, signal)));
    for (const outcome of outcomes) {
      if (outcome.kind === 'invoked') {
        requestIds.push(outcome.requestId);
      } else if (outcome.kind !== 'interrupted') {
        refused++;
        failure ??= outcome;
      }
    }
  }
  return { requestIds, refused, failure };
}
