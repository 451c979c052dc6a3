import { capText } from '../util/cap-text.ts';
import { ANSWER_TOO_LARGE } from './answer-caps.ts';

/**
 * Classifies AWS SDK errors once, at the adapter boundary:
 * - throttled: the service asked us to slow down (retry later, the work was not done),
 * - retryable: 5xx, timeouts, network failures (retry with back-off),
 * - fatal: anything else (missing resource, access denied, invalid request): retrying will not help.
 */
export type ErrorKind = 'throttled' | 'retryable' | 'fatal';

export interface ClassifiedError {
  readonly kind: ErrorKind;
  /** Nothing of the request left this machine (see notSentCode): retrying cannot run anything twice. */
  readonly notSent?: true;
  /** The SDK exception name or the Node error code, e.g. "QueueDoesNotExist", "ECONNREFUSED". */
  readonly code: string;
  readonly message: string;
  readonly status?: number;
  /**
   * The `Reason` an error gave (Lambda's TooManyRequestsException: ReservedFunctionConcurrentInvocationLimitExceeded
   * and others), capped: it is the service's text, logged.
   */
  readonly reason?: string;
  /**
   * How long the service asked us to wait before trying again, in seconds (Lambda's TooManyRequestsException:
   * `retryAfterSeconds`, the Retry-After header), when it gave a number.
   */
  readonly retryAfterSec?: number;
  /**
   * Why no connection could be made, in words, when it was a TLS or proxy fault (connectionFault): an untrusted,
   * mismatched or expired certificate, a failed handshake, a proxy that refused or closed the tunnel or could not be
   * reached. The one line of a start-up or `workerless check` says it after the endpoint.
   */
  readonly fault?: string;
}

/** A Reason is an enum value of a few dozen characters; anything longer is cut. */
const REASON_CAP_BYTES = 128;

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

/**
 * LOCAL FAILURES: THE ONE PLACE that decides whether a failed AWS call sent nothing (EMFILE
 * and ENFILE included). Such a failure is retryable with back-off everywhere: an Invoke is
 * 'not-sent' (never 'unknown', which would hold its batch a whole visibility timeout), a delete or visibility
 * change is retried (never fatal). Only a failure after the request may have reached AWS (a reset once it was
 * written, no answer in time) stays an unknown outcome.
 * - The lean transport knows it for certain: SignedHttp marks a failure before its socket connected (or before
 *   anything was written: signing, credentials, the pacer) with markNotSent().
 * - The SDK path (and anything else) is judged by what the error says: these codes only arise before a connection
 *   exists (no file descriptor for a socket, DNS, refused or unroutable connect, the SDK's connect timeout), and a
 *   credential provider that fails runs before the request is signed.
 */
const NOT_SENT_CODES = new Set([
  'EMFILE',
  'ENFILE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const NOT_SENT_NAMES = new Set(['CredentialsProviderError', 'TokenProviderError']);
/** The SDK's NodeHttpHandler connect timeout ("Socket timed out without establishing a connection within ..."). */
const CONNECT_TIMEOUT_MESSAGE = 'without establishing a connection';
const NOT_SENT_MARK = Symbol.for('workerless.notSent');

/** Marks `err` as having failed before any byte of its request left this machine (the lean transport's own knowledge). */
export function markNotSent<E extends object>(err: E): E {
  (err as Record<symbol, boolean>)[NOT_SENT_MARK] = true;
  return err;
}

/**
 * Whether `err` failed with nothing sent (see NOT_SENT_CODES): by the transport's mark, else by its code or name.
 * Returns the code to report (EMFILE, CredentialsProviderError...), or undefined when something may have been sent.
 */
function notSentCode(err: unknown, depth = 0): string | undefined {
  if (err === null || typeof err !== 'object' || depth > 4) return undefined;
  const e = err as SdkErrorShape;
  const code = typeof e.code === 'string' ? e.code : undefined;
  const name = typeof e.name === 'string' ? e.name : 'Error';
  if (code !== undefined && NOT_SENT_CODES.has(code)) return code;
  if (NOT_SENT_NAMES.has(name)) return name;
  if (name === 'TimeoutError' && typeof e.message === 'string' && e.message.includes(CONNECT_TIMEOUT_MESSAGE)) return name;
  // Node's happy-eyeballs connect: an AggregateError of the per-address attempts, none of which connected.
  if (Array.isArray(e.errors) && e.errors.length > 0) {
    const codes = e.errors.map((inner) => notSentCode(inner, depth + 1));
    if (codes.every((c) => c !== undefined)) return codes[0];
  }
  const inner = notSentCode(e.cause, depth + 1);
  if (inner !== undefined) return inner;
  if ((err as Record<symbol, unknown>)[NOT_SENT_MARK] === true) return code ?? name;
  return undefined;
}

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $retryable?: unknown;
  /** Lambda's throttle reason: the SDK's TooManyRequestsException field, which the lean client's serviceError() copies. */
  Reason?: unknown;
  /** Lambda's TooManyRequestsException field, from the Retry-After header; the lean client's serviceError() copies it. */
  retryAfterSeconds?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/** `timeoutSignal`: the signal the call was given, so that hitting its AbortSignal.timeout() counts as a timeout. */
export function classifyAwsError(err: unknown, timeoutSignal?: AbortSignal): ClassifiedError {
  const e = (err ?? {}) as SdkErrorShape;
  // A certificate or a proxy that stopped the connection: before any byte of the request, so retrying sends nothing twice.
  const fault = e.$metadata?.httpStatusCode === undefined && e.name !== 'AbortError' ? connectionFault(err) : undefined;
  if (fault !== undefined) {
    const text = typeof e.message === 'string' && e.message !== '' ? e.message : fault.code;
    return { kind: 'retryable', code: fault.code, message: capText(text), notSent: true, fault: fault.text };
  }
  const networkCode = findNetworkCode(err);
  const name = typeof e.name === 'string' ? e.name : 'Error';
  // Capped (src/util/cap-text.ts): every log line and check report takes the message from here, and some refusals
  // quote the request, e.g. Lambda's InvalidRequestContentException quotes the payload it could not parse.
  const message = capText(typeof e.message === 'string' && e.message !== '' ? e.message : String(err));
  const status = typeof e.$metadata?.httpStatusCode === 'number' ? e.$metadata.httpStatusCode : undefined;
  const timedOut = timeoutSignal?.aborted && (timeoutSignal.reason as { name?: unknown } | undefined)?.name === 'TimeoutError';
  const notSent = status === undefined ? notSentCode(err) : undefined;
  if (notSent !== undefined) {
    // Our own deadline before a connection existed is a connect timeout; a shutdown's abort stays an abort.
    if (name === 'AbortError' && timedOut)
      return { kind: 'retryable', code: 'TimeoutError', message: 'no connection in time', notSent: true };
    if (name !== 'AbortError') return { kind: 'retryable', code: notSent, message, notSent: true };
  }
  // An answer over its cap (src/core/answer-caps.ts): a broken endpoint or proxy; the call did happen, and may be
  // repeated (ReceiveMessage's unread messages come back after their visibility timeout). Invoke: see classifyInvokeError.
  if (name === ANSWER_TOO_LARGE) return { kind: 'retryable', code: name, message };
  if (networkCode) return { kind: 'retryable', code: networkCode, message, ...(status ? { status } : {}) };
  // A call cut off by our own AbortSignal.timeout(): the SDK throws a plain AbortError, so the signal tells.
  if (timedOut) {
    return { kind: 'retryable', code: 'TimeoutError', message: 'no answer in time' };
  }
  if (THROTTLING.has(name) || status === 429) {
    const reason = typeof e.Reason === 'string' && e.Reason !== '' ? capText(e.Reason, REASON_CAP_BYTES) : undefined;
    const retryAfterSec = typeof e.retryAfterSeconds === 'string' ? Number(e.retryAfterSeconds) : NaN;
    return {
      kind: 'throttled',
      code: name,
      message,
      ...(status ? { status } : {}),
      ...(reason !== undefined ? { reason } : {}),
      ...(retryAfterSec >= 0 ? { retryAfterSec } : {}),
    };
  }
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
 * Why a service could not be reached ("timed out", the network error code such as "ECONNREFUSED", or a TLS or
 * proxy fault in words), or undefined when the error came from the service itself. Start-up checks turn this into
 * their one-line hint.
 */
export function unreachableReason(e: { readonly code: string; readonly fault?: string | undefined }): string | undefined {
  if (e.fault !== undefined) return e.fault;
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

/**
 * A signal that aborts when `signal` does or after `deadlineMs`, whichever comes first: as AbortSignal.timeout()
 * (a TimeoutError, a timer that never keeps the process alive), except that the abort waits for the loop's next
 * read of its sockets (setImmediate runs after the poll phase). After a stall of the event loop past the deadline the
 * timer runs first, and an answer that had arrived meanwhile would be dropped: a receive's messages hidden for a
 * visibility timeout, with one more receive count. The lean client's deadlines do the same (src/aws/signed-http.ts).
 */
export function withDeadline(deadlineMs: number, signal?: AbortSignal): AbortSignal {
  const controller = new AbortController();
  const lapse = () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  setTimeout(() => setImmediate(lapse), deadlineMs).unref();
  return signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
}

/** True for an error caused by our own AbortSignal (shutdown), which is not a failure. */
export function isAbort(err: unknown): boolean {
  const name = (err as { name?: unknown } | null)?.name;
  return name === 'AbortError';
}

/**
 * What the transport knew of a connection that failed before it carried the request, for connectionFault's words:
 * the proxy it went through (its URL without credentials and its variable) and what the certificate was checked
 * against. Both clients attach it (src/aws/http1-pool.ts, src/aws/sdk-agents.ts). (The certificate itself is gone by
 * then: Node frees a refused socket before it reports the error.)
 */
export interface ConnectionFacts {
  /** `http://proxy.example:3128 (HTTPS_PROXY)`. */
  readonly proxy?: string | undefined;
  /** `the default CAs`, `the CA bundle /etc/corp-ca.pem (AWS_CA_BUNDLE)`. */
  readonly trust?: string | undefined;
}

const CONNECTION_FACTS = Symbol.for('workerless.connectionFacts');

/** Attaches `facts` to `err` (the transport's own knowledge of the connection it failed on). */
export function markConnectionFacts<E extends object>(err: E, facts: ConnectionFacts): E {
  (err as Record<symbol, ConnectionFacts>)[CONNECTION_FACTS] = facts;
  return err;
}

/** Node's codes for a certificate that no trusted CA vouches for (OpenSSL's X509_V_ERR_* names). */
const UNTRUSTED_CERT = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_CHAIN_TOO_LONG',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'PATH_LENGTH_EXCEEDED',
]);

/** The code a proxy's refusal carries (src/aws/proxy-tunnel.ts): its message says it all. */
export const PROXY_TUNNEL_CODE = 'ERR_PROXY_TUNNEL';

/**
 * A TLS or proxy fault in `err` (or its causes) as one phrase for the operator, and its code; undefined for
 * anything else. The certificate is never skipped: the phrase says what to fix (a CA bundle, the host name, the
 * certificate's dates, the proxy's credentials).
 */
export function connectionFault(err: unknown, depth = 0): { code: string; text: string } | undefined {
  if (err === null || typeof err !== 'object' || depth > 4) return undefined;
  const e = err as SdkErrorShape & { reason?: unknown };
  const facts = (err as Record<symbol, ConnectionFacts | undefined>)[CONNECTION_FACTS] ?? {};
  const code = typeof e.code === 'string' ? e.code : undefined;
  // Node's own advice after a verification error ("; if the root CA is installed locally, try running Node.js with
  // --use-system-ca") is a flag of Node's, not ours: the hint below says what to set instead.
  if (code === PROXY_TUNNEL_CODE) return { code, text: typeof e.message === 'string' ? e.message : code };
  const said = typeof e.message === 'string' ? (e.message.split('; ')[0] ?? '') : '';
  if (code !== undefined && facts.proxy !== undefined && NOT_SENT_CODES.has(code))
    return { code, text: `cannot connect to the proxy ${facts.proxy}: ${code}` };
  if (code !== undefined && UNTRUSTED_CERT.has(code)) {
    const trust = facts.trust ?? 'the default CAs';
    const hint =
      facts.trust === undefined || facts.trust === 'the default CAs'
        ? '; for a private CA set AWS_CA_BUNDLE or ca_bundle in the profile'
        : '';
    return { code, text: `its certificate is not trusted by ${trust} (${code}: ${said}${hint})` };
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    const reason = typeof e.reason === 'string' ? e.reason : said;
    return { code, text: `its certificate is not for this host (${code}: ${reason})` };
  }
  if (code === 'CERT_HAS_EXPIRED') return { code, text: `its certificate has expired (${code}; or this machine's clock is wrong)` };
  if (code === 'CERT_NOT_YET_VALID') return { code, text: `its certificate is not valid yet (${code}; or this machine's clock is wrong)` };
  if (code !== undefined && code.startsWith('ERR_SSL_')) {
    const hint = /WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|HTTP_REQUEST/.test(code) ? '; does it speak plain http?' : '';
    return { code, text: `the TLS handshake failed (${code}: ${said}${hint})` };
  }
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const found = connectionFault(inner, depth + 1);
      if (found) return found;
    }
  }
  return connectionFault(e.cause, depth + 1);
}

/** A start-up failure with a one-line explanation for the operator. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** Appended to every "cannot reach" start-up message. */
export const NETWORK_HINT = 'check --endpoint-url / --region and the network';

export function firstLine(text: string): string {
  return text.split('\n')[0]?.trim() ?? '';
}
