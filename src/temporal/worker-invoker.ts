// Starts one Lambda-hosted Temporal worker: an asynchronous (Event) invocation, as Temporal Cloud's
// controller does. Lambda answers 202 once the event is queued; the worker then runs until its deadline.
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { isAbort } from '../core/errors.ts';
import { classifyInvokeError, retryHorizon } from '../invoke/lambda-errors.ts';

/**
 * What the worker receives. Optional for the worker: the example falls back to its own env, and a worker
 * built on @temporalio/lambda-worker's runWorker ignores it (its identity, `<request id>@<function ARN>`, is
 * what workerless recognises it by).
 */
export interface WorkerInvocationPayload {
  readonly source: 'workerless.temporal-spillover';
  readonly namespace: string;
  readonly taskQueue: string;
  /** When workerless asked for the worker (ms since epoch). */
  readonly requestedAt: number;
  /**
   * When workerless stops counting this worker as alive (requestedAt + worker lifetime). Lambda may hold an
   * Event in its queue (throttling) and start it late; a worker that stops polling by then keeps
   * "at most maxWorkers alive" true.
   */
  readonly expiresAt: number;
  /**
   * When workerless stops waiting for this worker to poll (requestedAt + --temporal-worker-start-timeout). A
   * worker that has not started polling by then must not start: workerless has counted it as lost and may
   * have invoked a replacement.
   */
  readonly startBy: number;
  /** Worker Versioning: the Worker Deployment Version whose tasks this worker is for (runWorker's first argument). */
  readonly deploymentName?: string;
  readonly buildId?: string;
}

/** Outcomes are values; only bugs throw. */
export type InvokeOutcome =
  | { readonly kind: 'invoked'; readonly requestId: string | undefined }
  /** Over the function's or the account's concurrency: retry after a back-off. (Kinds: src/invoke/lambda-errors.ts retryHorizon.) */
  | { readonly kind: 'throttled'; readonly code: string; readonly message: string }
  /** The function does not exist, access is denied or the request is invalid: retrying soon will not help (after-a-fix). */
  | { readonly kind: 'refused'; readonly code: string; readonly message: string }
  /** 5xx, timeout, network, a function state that passes on its own: retry soon, after a back-off. */
  | { readonly kind: 'failed'; readonly code: string; readonly message: string }
  /** Our own signal aborted (shutdown). */
  | { readonly kind: 'interrupted' };

export interface WorkerInvoker {
  /** `functionName`: name, ARN, or name:alias / name:version (the one mapped to the payload's Build ID). */
  invoke(functionName: string, payload: WorkerInvocationPayload, signal: AbortSignal): Promise<InvokeOutcome>;
}

export function createLambdaWorkerInvoker(lambda: LambdaClient): WorkerInvoker {
  return {
    async invoke(functionName, payload, signal) {
      try {
        const response = await lambda.send(
          new InvokeCommand({
            FunctionName: functionName,
            InvocationType: 'Event',
            Payload: new TextEncoder().encode(JSON.stringify(payload)),
          }),
          { abortSignal: signal },
        );
        return { kind: 'invoked', requestId: response.$metadata.requestId };
      } catch (err) {
        if (signal.aborted || isAbort(err)) return { kind: 'interrupted' };
        // The SQS path's classification (src/invoke/lambda-errors.ts), read for a caller that holds no messages.
        const error = classifyInvokeError(err);
        const { code, message } = error;
        const horizon = retryHorizon(error);
        if (horizon === 'throttled') return { kind: 'throttled', code, message };
        return { kind: horizon === 'soon' ? 'failed' : 'refused', code, message };
      }
    },
  };
}
