import type { Agent as HttpAgent, ClientRequest, IncomingHttpHeaders, IncomingMessage, RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { markNotSent } from '../core/errors.ts';
import { keepAliveAgentOptions } from './agent-options.ts';
import { nodeHttp } from '../util/node-http.ts';
import { answerTooLarge } from '../core/answer-caps.ts';
import type { CallPacer } from './call-pacer.ts';
import { isSkewRefusal, SkewClock } from './clock-skew.ts';
import { SigV4Signer } from './sigv4.ts';
import { monotonicNow } from '../util/clock.ts';
import { TimerHeap, type HeapEntry } from '../util/timer-heap.ts';

/**
 * The lean hot path's transport: one AWS service's calls, signed with SigV4 (src/aws/sigv4.ts) and sent over
 * keep-alive HTTP/1.1 sockets (node:http's Agent, the same transport the SDK's NodeHttpHandler uses, so network
 * failures surface with the same codes: ECONNREFUSED, ECONNRESET, ...). No middleware stack, no per-call
 * command objects: about a third of the CPU of an SDK call (bench/fast.ts).
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
}

/** An endpoint's parts that a request is sent with. */
interface Target {
  readonly host: string;
  readonly hostname: string;
  readonly port: number | undefined;
  readonly https: boolean;
}
/** Endpoints kept per client: a run sends to a handful (the service's endpoint, or one per queue URL). */
const MAX_TARGETS = 64;

export class SignedHttp {
  readonly #signer: SigV4Signer;
  readonly #credentials: CredentialProvider;
  readonly #http: HttpAgent;
  readonly #https: HttpsAgent;
  readonly #pacer: CallPacer | undefined;
  readonly #clock: SkewClock;
  readonly #targets = new Map<string, Target>();

  constructor(options: SignedHttpOptions) {
    this.#pacer = options.pacer;
    this.#clock = options.clock ?? new SkewClock();
    this.#signer = new SigV4Signer(options.service, options.region);
    this.#credentials = options.credentials;
    this.#http = new nodeHttp.Agent(keepAliveAgentOptions(options.maxSockets));
    this.#https = new HttpsAgent(keepAliveAgentOptions(options.maxSockets));
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
    const answer = await this.#attempt(origin, path, headers, body, signal, maxAnswerBytes);
    if (!answer.skewRefusal) return answer;
    return this.#attempt(origin, path, headers, body, signal, maxAnswerBytes);
  }

  async #attempt(
    origin: URL,
    path: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal | undefined,
    maxAnswerBytes: number,
  ): Promise<HttpAnswer & { skewRefusal: boolean }> {
    const target = this.#target(origin);
    const signedHeaders: Record<string, string> = { ...headers, host: target.host, 'content-length': String(Buffer.byteLength(body)) };
    const offsetMs = this.#clock.offsetMs;
    const sentAt = Date.now();
    try {
      signal?.throwIfAborted();
      const turn = this.#pacer?.turn();
      if (turn) {
        await turn;
        signal?.throwIfAborted();
      }
      const credentials = await this.#credentials();
      this.#signer.sign({ method: 'POST', path, headers: signedHeaders, body }, credentials, this.#clock.signingDate());
    } catch (err) {
      // Aborted before sending, or the credentials could not be loaded: nothing left this machine.
      throw markNotSent(err instanceof Error ? err : new Error(String(err)));
    }
    const answer = await send(
      target.https ? httpsRequest : nodeHttp.request,
      target.https ? this.#https : this.#http,
      target,
      path,
      signedHeaders,
      body,
      signal,
      maxAnswerBytes,
    );
    const { corrected } = this.#clock.sample(header(answer, 'date'), header(answer, 'age'), sentAt, offsetMs);
    let skewRefusal = false;
    if (answer.status >= 400 && answer.status < 500) {
      const refusal = serviceError(answer);
      skewRefusal = isSkewRefusal(refusal.name, refusal.message, corrected);
    }
    return Object.assign(answer, { skewRefusal });
  }

  /** `origin` as a request needs it, read once: every read of a URL's host, hostname, port or protocol is a new string. */
  #target(origin: URL): Target {
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
    this.#http.destroy();
    this.#https.destroy();
  }
}

/**
 * Sends one request and collects its answer. Functions of their own so that what stays reachable while the
 * answer is awaited (up to 15 minutes for an Invoke, thousands at a time) is only the request, its headers and
 * these callbacks, not the signed request and the options and body of the caller's scope. The signal is
 * watched with one listener instead of http.request's `signal` option, which attaches end-of-stream tracking
 * (eight closures and their listeners) to every request for as long as it is open.
 */
function send(
  request: typeof nodeHttp.request,
  agent: HttpAgent,
  target: Target,
  path: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal | undefined,
  maxAnswerBytes: number,
): Promise<HttpAnswer> {
  // Headers as a flat array: node:http writes them as they are, without a second object of its own for them,
  // and the agent's copy of the options (kept per socket) holds this array instead of a dictionary object.
  const flat: string[] = [];
  for (const name in headers) flat.push(name, headers[name]!);
  // One options object, which node:http copies twice more (ClientRequest and Agent.addRequest).
  const options: RequestOptions =
    target.port === undefined
      ? { agent, hostname: target.hostname, method: 'POST', path, headers: flat }
      : { agent, hostname: target.hostname, port: target.port, method: 'POST', path, headers: flat };
  const req = request(options);
  const answer = collect(req, signal, maxAnswerBytes);
  req.end(body);
  return answer;
}

/**
 * The answer to `req`; closes over the request and the signal only. Never holds more than `maxAnswerBytes` of
 * it: a Content-Length above the cap is refused before a byte of the body is read, and a body that grows past it
 * (chunked, or longer than announced) is refused as soon as it does; either way the socket is destroyed, so the
 * rest is never read. A failure before the socket connected is marked as not sent (markNotSent): DNS, a refused
 * connect, no file descriptor for a socket (EMFILE), or a deadline that fell while still connecting.
 */
function collect(req: ClientRequest, signal: AbortSignal | undefined, maxAnswerBytes: number): Promise<HttpAnswer> {
  return new Promise<HttpAnswer>((resolve, reject) => {
    let connected = false;
    req.once('socket', (socket) => {
      // A reused keep-alive socket is connected already; a new one says so (TLS: once its handshake is done,
      // before which no byte of the request is written).
      if (!socket.connecting) connected = true;
      else socket.once('encrypted' in socket ? 'secureConnect' : 'connect', () => (connected = true));
    });
    req.once('response', (res: IncomingMessage) => {
      const announced = Number(res.headers['content-length']);
      if (announced > maxAnswerBytes) {
        res.destroy();
        return fail(answerTooLarge(announced, maxAnswerBytes, true));
      }
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > maxAnswerBytes) {
          chunks.length = 0;
          res.destroy();
          return fail(answerTooLarge(received, maxAnswerBytes, false));
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        signal?.removeEventListener('abort', onAbort);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
      });
      res.on('error', fail);
      // A connection cut in the middle of the answer: a reset after the request was sent.
      res.on('close', () => {
        if (!res.complete)
          fail(
            signal?.aborted
              ? abortError(signal)
              : Object.assign(new Error('connection closed before the answer was complete'), { code: 'ECONNRESET' }),
          );
      });
    });
    let failed = false;
    function onAbort(): void {
      req.destroy(abortError(signal!));
    }
    function fail(err: Error): void {
      // The first failure says what happened; the destroy it causes reports again.
      if (failed) return;
      failed = true;
      signal?.removeEventListener('abort', onAbort);
      const e = signal?.aborted && err.name !== 'AnswerTooLarge' ? abortError(signal) : err;
      reject(connected ? e : markNotSent(e));
    }
    req.on('error', fail);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
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

  /** The deadline passed with the call still open. */
  lapse(): void {
    this.#controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }

  /** The call is over. */
  clear(): void {
    this.#heap.remove(this);
    this.#parent?.removeEventListener('abort', this);
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
