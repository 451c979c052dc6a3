/**
 * Why an Invoke failed, as it matters for what may be done next with its messages:
 * - throttled: Lambda refused to run it now (429); nothing ran, retry later.
 * - not-sent: the request never left this machine (DNS, a refused connect, EMFILE, credentials that cannot be
 *   loaded, a connect timeout: src/core/errors.ts notSentCode decides); nothing ran, retry with back-off.
 * - unknown: the request may have reached Lambda and the function may still be running (reset after the
 *   request was sent, a 5xx, no answer in time); re-invoking now could run a message twice at once.
 * - unusable: the function cannot run at all (access denied, deleted alias, KMS, an update in progress,
 *   VPC set-up); every message would fail the same way, so the function is paused, not the message.
 * - rejected: this request is wrong (payload too large, invalid content), or its answer is larger than Lambda
 *   can send (6 MB, src/core/answer-caps.ts: a broken endpoint or proxy; the function did run, so it must not be
 *   invoked again as an unknown outcome would be): a failure of these messages only, which go back to the queue's
 *   own redrive while the rest of the daemon carries on.
 */
export type InvokeErrorKind = 'throttled' | 'not-sent' | 'unknown' | 'unusable' | 'rejected';

export interface InvokeError {
  readonly kind: InvokeErrorKind;
  /** The SDK exception name or the Node error code. */
  readonly code: string;
  readonly message: string;
  readonly status?: number;
  /** Lambda's `Reason` for a throttle (TooManyRequestsException), as given; see throttle-reason.ts. */
  readonly reason?: string;
  /** A throttle's Retry-After (TooManyRequestsException's retryAfterSeconds), in milliseconds: the retry waits at least this. */
  readonly retryAfterMs?: number;
  /** A `rejected` answer of a function that ran (over 6 MB): its response was unusable, the Invoke was not refused. */
  readonly ran?: true;
}

export interface InvocationResponse {
  /** The raw response payload (the handler's JSON result), if any. */
  readonly payload: string | undefined;
  /** Lambda's X-Amz-Function-Error (e.g. "Unhandled"). */
  readonly functionError: string | undefined;
  /** Lambda's x-amzn-RequestId of the invocation, when the answer had one: a failure record names it. */
  readonly requestId?: string | undefined;
}

export type InvokeResult = { ok: true; response: InvocationResponse } | { ok: false; error: InvokeError };

/** What one invocation carries besides its payload (docs/targets.md). */
export interface InvokeParams {
  /** DurableExecutionName (header X-Amz-Durable-Execution-Name): 1-64 characters of [a-zA-Z0-9-_]. */
  readonly durableExecutionName?: string;
  /** InvocationType Event instead of RequestResponse: Lambda accepts the start and answers 202. */
  readonly async?: boolean;
  /** TenantId (header X-Amz-Tenant-Id), for functions in tenant isolation mode. */
  readonly tenantId?: string;
}

/**
 * Invokes the target function, synchronously unless `params.async`. Never throws for AWS errors: they come back
 * classified.
 */
export interface FunctionInvoker {
  invoke(payload: string, signal?: AbortSignal, params?: InvokeParams): Promise<InvokeResult>;
  /** InvocationType DryRun: checks that the function exists and we may invoke it, without running it. */
  dryRun(signal?: AbortSignal, params?: InvokeParams): Promise<InvokeResult>;
}
