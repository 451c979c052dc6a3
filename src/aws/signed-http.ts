import type { IncomingHttpHeaders } from 'node:http';
import { markNotSent } from '../core/errors.ts';
import { Http1Pool, type Http1Target } from './http1-pool.ts';
import type { AwsNetwork } from './network.ts';
import type { CallPacer } from './call-pacer.ts';
import { isSkewRefusal, SkewClock } from './clock-skew.ts';
import { SigV4Signer } from './sigv4.ts';
import { monotonicNow } from '../util/clock.ts';
import { TimerHeap, type HeapEntry } from '../util/timer-heap.ts';

/**
 * The lean hot path's transport: one AWS service's calls, signed with SigV4 (src/aws/sigv4.ts) and sent over
 * keep-alive HTTP/1.1 sockets (src/aws/http1-pool.ts: node:http's socket options and network errors, ECONNREFUSED,
 * ECONNRESET, ..., at a third of its memory per open request). No middleware stack, no per-call command objects:
 * about a third of the CPU of an SDK call (bench/fast.ts).
 */

/** What the signer needs of a credential provider; `@aws-sdk/credential-provider-node`'s defaultProvider() fits (memoized, refreshed before expiry). */
export type CredentialProvider = () => Promise<{
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
  expiration?: Date | undefined;
}>;

export interface HttpAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface SignedHttpOptions {
  /** The SigV4 signing name: "sqs", "lambda". */
  readonly service: string;
  readonly region: string;
  readonly credentials: CredentialProvider;
  /** Sockets per host: every worker loop may hold one long poll and one invocation open at a time. */
  readonly maxSockets: number;
  /** Spreads the starts of a burst of calls over turns of the event loop (shared by the services of a run). */
  readonly pacer?: CallPacer | undefined;
  /** This service's offset to AWS's clock (src/aws/clock-skew.ts); default a clock of its own. */
  readonly clock?: SkewClock | undefined;
  /** Proxies and the TLS context (src/aws/network.ts), shared by a run's services; default straight, the default CAs. */
  readonly network?: AwsNetwork | undefined;
}

/** Endpoints kept per client: a run sends to a handful (the service's endpoint, or one per queue URL). */
const MAX_TARGETS = 64;

export class SignedHttp {
  readonly #signer: SigV4Signer;
  readonly #credentials: CredentialProvider;
  readonly #sockets: Http1Pool;
  readonly #pacer: CallPacer | undefined;
  readonly #clock: SkewClock;
  readonly #targets = new Map<string, Http1Target>();

  constructor(options: SignedHttpOptions) {
    this.#pacer = options.pacer;
    this.#clock = options.clock ?? new SkewClock();
    this.#signer = new SigV4Signer(options.service, options.region);
    this.#credentials = options.credentials;
    this.#sockets = new Http1Pool(options.maxSockets, options.network);
  }

  /**
   * POSTs `body` to `origin` + `path`, signed at AWS's time (the clock's offset). Resolves with any HTTP answer
   * (the caller maps error statuses); rejects with Node's network error (ECONNREFUSED, ECONNRESET, ...), an
   * AnswerTooLarge error once the answer exceeds `maxAnswerBytes`, or, once `signal` aborts, an AbortError. A
   * failure before anything was sent is marked so (markNotSent). A refusal for clock skew is sent once more,
   * signed with the corrected clock, as the SDK does: AWS refused it unread, so even an Invoke may be repeated.
   */
  async post(
    origin: URL,
    path: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal | undefined,
    maxAnswerBytes: number,
  ): Promise<HttpAnswer> {
    const target = this.#target(origin);
    // At most two attempts, in one async step: a long poll waits here for up to 20 s, thousands at a time.
    for (let attempt = 1; ; attempt++) {
      const offsetMs = this.#clock.offsetMs;
      const sentAt = Date.now();
      try {
        signal?.throwIfAborted();
        const turn = this.#pacer?.turn();
        if (turn) {
          await turn;
          signal?.throwIfAborted();
        }
      } catch (err) {
        // Aborted before sending: nothing left this machine.
        throw markNotSent(err instanceof Error ? err : new Error(String(err)));
      }
      const answer: HttpAnswer = await this.#send(target, path, headers, body, signal, maxAnswerBytes);
      const { corrected } = this.#clock.sample(header(answer, 'date'), header(answer, 'age'), sentAt, offsetMs);
      if (attempt === 2 || answer.status < 400 || answer.status >= 500) return answer;
      const refusal = serviceError(answer);
      if (!isSkewRefusal(refusal.name, refusal.message, corrected)) return answer;
    }
  }

  /**
   * Signs the request at AWS's time and sends it. Not async: the signed headers live only until the request is
   * written, not for as long as its answer takes.
   */
  #send(
    target: Http1Target,
    path: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal | undefined,
    maxAnswerBytes: number,
  ): Promise<HttpAnswer> {
    return this.#credentials().then(
      (credentials) => {
        const signed: Record<string, string> = { ...headers, host: target.host, 'content-length': String(Buffer.byteLength(body)) };
        this.#signer.sign({ method: 'POST', path, headers: signed, body }, credentials, this.#clock.signingDate());
        return this.#sockets.post(target, path, signed, body, signal, maxAnswerBytes, abortError);
      },
      (err: unknown) => {
        // The credentials could not be loaded: nothing left this machine.
        throw markNotSent(err instanceof Error ? err : new Error(String(err)));
      },
    );
  }

  /** `origin` as a request needs it, read once: every read of a URL's host, hostname, port or protocol is a new string. */
  #target(origin: URL): Http1Target {
    let target = this.#targets.get(origin.href);
    if (target === undefined) {
      if (this.#targets.size >= MAX_TARGETS) this.#targets.clear();
      target = {
        host: origin.host,
        hostname: origin.hostname,
        port: origin.port ? Number(origin.port) : undefined,
        https: origin.protocol === 'https:',
      };
      this.#targets.set(origin.href, target);
    }
    return target;
  }

  destroy(): void {
    this.#sockets.destroy();
  }
}

function header(answer: HttpAnswer, name: string): string | undefined {
  const v = answer.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** Listens once: a constant, not an options object per call. */
const ONCE = { once: true } as const;

/**
 * The deadlines of one client's calls, under one timer (src/util/timer-heap.ts): almost every call is answered
 * long before its deadline, and a setTimeout per call (its Timeout and closures) was made and cleared for nothing.
 */
export class CallDeadlines {
  readonly #heap = new TimerHeap<CallDeadline>(monotonicNow, (deadline) => deadline.lapse());

  /**
   * A signal that aborts when `parent` does or after `deadlineMs` (reason: a TimeoutError, which
   * classifyAwsError reports as "no answer in time"), and `clear()`, to call once the call is over: unlike
   * AbortSignal.timeout() + AbortSignal.any(), nothing of a finished call (its place on the heap, its listener on
   * the long-lived parent) stays behind until the deadline would have passed.
   */
  start(deadlineMs: number, parent?: AbortSignal): CallDeadline {
    const deadline = new CallDeadline(this.#heap, parent);
    if (parent?.aborted) deadline.handleEvent();
    else {
      this.#heap.set(deadline, monotonicNow() + deadlineMs);
      parent?.addEventListener('abort', deadline, ONCE);
    }
    return deadline;
  }
}

/** One call's deadline: its place on the heap, and the listener on its parent signal (this object, no closure). */
export class CallDeadline implements HeapEntry {
  dueAt = 0;
  slot = -1;
  readonly #controller = new AbortController();
  /** The abort of a lapsed deadline, due after the loop has read its sockets once more. */
  #lapsing: NodeJS.Immediate | undefined;
  readonly #heap: TimerHeap<CallDeadline>;
  readonly #parent: AbortSignal | undefined;

  constructor(heap: TimerHeap<CallDeadline>, parent: AbortSignal | undefined) {
    this.#heap = heap;
    this.#parent = parent;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The parent aborted (an EventListener object: the parent calls this). */
  handleEvent(): void {
    this.#controller.abort(this.#parent?.reason);
  }

  /**
   * The deadline passed with the call still open. The abort waits for the loop's next read of its sockets
   * (setImmediate runs after the poll phase): after a stall of the event loop past the deadline the timer runs
   * first, and an answer that had arrived meanwhile would be dropped, its messages hidden for a visibility timeout.
   */
  lapse(): void {
    this.#lapsing = setImmediate(() =>
      this.#controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    );
  }

  /** The call is over. */
  clear(): void {
    this.#heap.remove(this);
    this.#parent?.removeEventListener('abort', this);
    if (this.#lapsing !== undefined) clearImmediate(this.#lapsing);
  }
}

/** Like the SDK's: an AbortError whose cause is the signal's reason (a TimeoutError for a deadline). */
function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('Request aborted', { cause: signal.reason }), { name: 'AbortError' });
}

/** An AWS error answer, shaped like the SDK's service exceptions: what classifyAwsError reads. */
export interface ServiceError extends Error {
  readonly $metadata: { httpStatusCode: number; requestId?: string | undefined };
  readonly $fault: 'client' | 'server';
}

/**
 * The SDK's service exception for an error answer. AWS JSON 1.0 with awsQueryCompatible (SQS): the code is
 * the x-amzn-query-error header's first part, else the shape named by `__type`. REST JSON (Lambda): the
 * x-amzn-errortype header, else `__type` / `code` in the body. Either way without a namespace or URI suffix.
 */
export function serviceError(answer: HttpAnswer): ServiceError {
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(answer.body.toString('utf8'));
    if (parsed !== null && typeof parsed === 'object') body = parsed as Record<string, unknown>;
  } catch {
    // not JSON (a proxy's HTML page): the status decides
  }
  const header = (name: string) => {
    const v = answer.headers[name];
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const raw =
    header('x-amzn-query-error')?.split(';')[0] ??
    header('x-amzn-errortype') ??
    (typeof body['__type'] === 'string' ? body['__type'] : undefined) ??
    (typeof body['code'] === 'string' ? body['code'] : undefined) ??
    (answer.status >= 500 ? 'ServiceException' : 'UnknownError');
  const name = sanitizeErrorCode(raw);
  const text = body['message'] ?? body['Message'];
  const message = typeof text === 'string' && text !== '' ? text : `HTTP ${answer.status}`;
  const requestId = header('x-amzn-requestid');
  // Lambda's throttle reason, under the SDK's field name so both clients' errors are classified alike (errors.ts).
  const reason = typeof body['Reason'] === 'string' ? { Reason: body['Reason'] } : {};
  // Lambda's throttle says how long to wait in its Retry-After header: the SDK's retryAfterSeconds, as a string.
  const retryAfter = header('retry-after');
  return Object.assign(new Error(message), {
    name,
    ...reason,
    ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}),
    $metadata: { httpStatusCode: answer.status, ...(requestId ? { requestId } : {}) },
    $fault: answer.status >= 500 ? ('server' as const) : ('client' as const),
  });
}

/** "com.amazonaws.sqs#QueueDoesNotExist" or "ResourceNotFoundException:http://..." -> the bare code. */
export function sanitizeErrorCode(raw: string): string {
  let code = raw;
  const colon = code.indexOf(':');
  if (colon >= 0) code = code.slice(0, colon);
  const hash = code.indexOf('#');
  if (hash >= 0) code = code.slice(hash + 1);
  return code;
}

/** A path joined to an endpoint's own path ("http://host/prefix" + "/x" = "/prefix/x"). */
export function joinPath(endpoint: URL, path: string): string {
  const base = endpoint.pathname.replace(/\/+$/, '');
  return `${base}${path}` || '/';
}
