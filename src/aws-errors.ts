/**
 * Classifies AWS SDK errors once, at the adapter boundary:
 * - throttled: the service asked us to slow down (retry later, the work was not done),
 * - retryable: 5xx, timeouts, network failures (retry with back-off),
 * - fatal: anything else (missing resource, access denied, invalid request): retrying will not help.
 */
export type ErrorKind = 'throttled' | 'retryable' | 'fatal';

export interface ClassifiedError {
  readonly kind: ErrorKind;
  /** The SDK exception name or the Node error code, e.g. "QueueDoesNotExist", "ECONNREFUSED". */
  readonly code: string;
  readonly message: string;
  readonly status?: number;
}

const THROTTLING = new Set([
  'ThrottlingException',
  'Throttling',
  'TooManyRequestsException',
  'RequestThrottled',
  'RequestThrottledException',
  'RequestLimitExceeded',
  'SlowDown',
  'ProvisionedThroughputExceededException',
  'EC2ThrottledException',
  'OverLimit',
]);

const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $retryable?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/** `timeoutSignal`: the signal the call was given, so that hitting its AbortSignal.timeout() counts as a timeout. */
export function classifyAwsError(err: unknown, timeoutSignal?: AbortSignal): ClassifiedError {
  const e = (err ?? {}) as SdkErrorShape;
  const networkCode = findNetworkCode(err);
  const name = typeof e.name === 'string' ? e.name : 'Error';
  const message = typeof e.message === 'string' && e.message !== '' ? e.message : String(err);
  const status = typeof e.$metadata?.httpStatusCode === 'number' ? e.$metadata.httpStatusCode : undefined;
  if (networkCode) return { kind: 'retryable', code: networkCode, message, ...(status ? { status } : {}) };
  // A call cut off by our own AbortSignal.timeout(): the SDK throws a plain AbortError, so the signal tells.
  if (timeoutSignal?.aborted && (timeoutSignal.reason as { name?: unknown } | undefined)?.name === 'TimeoutError') {
    return { kind: 'retryable', code: 'TimeoutError', message: 'no answer in time' };
  }
  if (THROTTLING.has(name) || status === 429) return { kind: 'throttled', code: name, message, ...(status ? { status } : {}) };
  if (name === 'TimeoutError' || name === 'RequestTimeout' || name === 'RequestTimeoutException') {
    return { kind: 'retryable', code: name, message, ...(status ? { status } : {}) };
  }
  if ((status !== undefined && status >= 500) || e.$retryable) {
    return { kind: 'retryable', code: name, message, ...(status ? { status } : {}) };
  }
  return { kind: 'fatal', code: name, message, ...(status ? { status } : {}) };
}

function findNetworkCode(err: unknown, depth = 0): string | undefined {
  if (err === null || typeof err !== 'object' || depth > 4) return undefined;
  const e = err as SdkErrorShape;
  if (typeof e.code === 'string' && NETWORK.has(e.code)) return e.code;
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const code = findNetworkCode(inner, depth + 1);
      if (code) return code;
    }
  }
  return findNetworkCode(e.cause, depth + 1);
}

/**
 * Why a service could not be reached ("timed out", or the network error code such as "ECONNREFUSED"), or
 * undefined when the error came from the service itself. Start-up checks turn this into their one-line hint.
 */
export function unreachableReason(e: { readonly code: string }): string | undefined {
  if (e.code === 'TimeoutError' || e.code === 'AbortError') return 'timed out';
  return NETWORK.has(e.code) ? e.code : undefined;
}

/**
 * An AWS call that failed, already classified by its adapter, so callers never look at SDK errors. `operation`
 * is the API name (ReceiveMessage, DeleteMessageBatch, ...) for logs.
 */
export class AwsCallError extends Error {
  override readonly name = 'AwsCallError';
  readonly operation: string;
  readonly error: ClassifiedError;

  constructor(operation: string, error: ClassifiedError) {
    super(`${operation} failed: ${error.code}: ${error.message}`);
    this.operation = operation;
    this.error = error;
  }
}

/** The classification of a failed adapter call; anything else that was thrown (a bug, a test fake) is classified here. */
export function callErrorOf(err: unknown): ClassifiedError {
  return err instanceof AwsCallError ? err.error : classifyAwsError(err);
}

/** A signal that aborts when `signal` does or after `deadlineMs`, whichever comes first. */
export function withDeadline(deadlineMs: number, signal?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(deadlineMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

/** True for an error caused by our own AbortSignal (shutdown), which is not a failure. */
export function isAbort(err: unknown): boolean {
  const name = (err as { name?: unknown } | null)?.name;
  return name === 'AbortError';
}
