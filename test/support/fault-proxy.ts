// An HTTP proxy for fault tests that must pick one AWS operation: only ChangeMessageVisibilityBatch answers
// 500, only Invoke is reset after the request reached the function, only ReceiveMessage hangs. Toxiproxy
// (toxiproxy.ts) cannot do that, because every SQS call shares one endpoint and one TCP stream.
// It names each request the way the SDK clients in node_modules send it:
//   SQS and CloudWatch: AWS JSON 1.0, `X-Amz-Target: AmazonSQS.ReceiveMessage` /
//   `GraniteServiceVersion20100801.PutMetricData` (both clients are awsQueryCompatible);
//   Lambda: REST JSON, POST /2015-03-31/functions/{name}/invocations with X-Amz-Invocation-Type.
// Other requests are forwarded as 'Unknown'. One proxy per test: all state lives in startFaultProxy's closure.
import { randomUUID } from 'node:crypto';
import {
  Agent,
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls';
import { phaseTls } from './phase-tls.ts';

export type SqsOperation =
  | 'ReceiveMessage'
  | 'DeleteMessage'
  | 'DeleteMessageBatch'
  | 'ChangeMessageVisibility'
  | 'ChangeMessageVisibilityBatch'
  | 'SendMessage'
  | 'SendMessageBatch'
  | 'GetQueueUrl'
  | 'GetQueueAttributes'
  | 'CreateQueue'
  | 'DeleteQueue'
  | 'PurgeQueue';
export type LambdaOperation = 'Invoke' | 'GetFunction' | 'GetFunctionConfiguration';
export type CloudWatchOperation = 'PutMetricData' | 'GetMetricData' | 'GetMetricStatistics' | 'ListMetrics';
/** Known names autocomplete; any X-Amz-Target operation name is accepted too. 'Unknown': a request we cannot name. */
export type Operation = SqsOperation | LambdaOperation | CloudWatchOperation | 'Unknown' | (string & {});
export type Service = 'sqs' | 'lambda' | 'cloudwatch' | 'unknown';

/** What the proxy learnt about a request before deciding on a fault. */
export interface RequestInfo {
  service: Service;
  operation: Operation;
  method: string;
  /** Path and query, as the client sent them. */
  path: string;
  /** Invoke only: X-Amz-Invocation-Type (RequestResponse when absent, as Lambda reads it); lets a rule skip DryRun. */
  invocationType: string | undefined;
  /** Lambda only: the FunctionName from the path (a name, partial ARN or ARN, with any qualifier). */
  functionName: string | undefined;
  /** SQS only: QueueUrl from the JSON body, so a rule can pick one queue. */
  queueUrl: string | undefined;
  /** The request body as text (the SDK sends JSON). */
  body: string;
}

/** Accepts the request and never answers; the connection stays open, even after the rule ends, until the client closes it. */
export interface HangFault {
  kind: 'hang';
}
/** Forwards the request, then holds the answer for `ms`. */
export interface DelayFault {
  kind: 'delay';
  ms: number;
}
/**
 * Forwards the request (so it really happens upstream), then resets the client's connection without answering.
 * `when`: 'answered' (default) waits for upstream's full answer first; 'sent' resets once the request is written.
 */
export interface ResetAfterSendFault {
  kind: 'reset-after-send';
  when?: 'answered' | 'sent';
}
/** Resets the client's connection without forwarding anything: the request never happened. */
export interface ResetBeforeSendFault {
  kind: 'reset-before-send';
}
/** Answers with an AWS-shaped error for the request's protocol, without forwarding, so the SDK throws that exception. */
export interface StatusFault {
  kind: 'status';
  /** HTTP status: 4xx is a sender/User fault, 5xx a receiver/Service fault. */
  status: number;
  /** The exception name the SDK should throw, e.g. InternalError, QueueDoesNotExist, TooManyRequestsException. */
  errorType: string;
  /** Default: "Injected <errorType> (fault proxy)". */
  message?: string;
  /** SQS/CloudWatch: the awsQuery code in x-amzn-query-error when it differs (AWS.SimpleQueueService.NonExistentQueue); default errorType. */
  queryErrorCode?: string;
  /** Extra body fields, e.g. Lambda's { Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded' }. */
  fields?: Readonly<Record<string, string>>;
  /** Extra response headers, e.g. { 'Retry-After': '1' }. */
  headers?: Readonly<Record<string, string>>;
}
/**
 * SQS *Batch calls only: the selected entries come back in `Failed`. `upstream`: 'skip' (default) removes them
 * from the request, so they really did not happen; 'apply' forwards the whole batch and only the answer lies.
 */
export interface EntryFailureFault {
  kind: 'entry-failure';
  /** Entry Ids (the request's Entries[].Id) to fail; default every entry. */
  entryIds?: readonly string[];
  /** Default ReceiptHandleIsInvalid. */
  code?: string;
  message?: string;
  /** Default true, as for an invalid receipt handle. */
  senderFault?: boolean;
  upstream?: 'skip' | 'apply';
}
/** For the window, new connections are refused (the listener closes) and requests on open connections are reset. */
export interface RefuseFault {
  kind: 'refuse';
}
export type RequestFault = HangFault | DelayFault | ResetAfterSendFault | ResetBeforeSendFault | StatusFault | EntryFailureFault;
export type Fault = RequestFault | RefuseFault;
export type FaultKind = Fault['kind'];

/** A fault for some requests. Without forMs or count it lasts until clear(); with both, whichever ends first. */
export interface RequestRuleOptions {
  /** Default every operation. */
  operation?: Operation | readonly Operation[];
  /** Invoke only, e.g. 'RequestResponse' to leave the start-up DryRun alone; default every type. */
  invocationType?: string | readonly string[];
  /** Narrows further, e.g. to one queue: (r) => r.queueUrl === q.url. */
  match?: (request: RequestInfo) => boolean;
  fault: RequestFault;
  /** The rule ends this long after inject(). */
  forMs?: number;
  /** The rule ends after faulting this many requests. */
  count?: number;
  /** Share (0-1) of matching requests that get the fault, for chaos runs; default 1. */
  probability?: number;
}
/** Refusing works on connections, not operations, so only a window (or clear()) applies. */
export interface RefuseRuleOptions {
  fault: RefuseFault;
  forMs?: number;
}
export type InjectOptions = RequestRuleOptions | RefuseRuleOptions;

export interface FaultRule {
  readonly id: number;
  /** Requests faulted so far (for refuse: requests reset on connections that were already open). */
  readonly hits: number;
  readonly active: boolean;
  /** Resolves when the rule stops applying (window over, count used, cleared); for refuse, once connections are accepted again. */
  readonly ended: Promise<void>;
  /** Ends the rule now; requests already held (hung, delayed) stay as they are. */
  clear(): void;
}

/** One request as the proxy saw it; a live object, updated as the request ends. */
export interface CallRecord {
  service: Service;
  operation: Operation;
  invocationType: string | undefined;
  functionName: string | undefined;
  queueUrl: string | undefined;
  /** Epoch ms when the request (headers and body) had arrived. */
  at: number;
  /** The rule that faulted it, if any. */
  ruleId: number | undefined;
  fault: FaultKind | undefined;
  /** The HTTP status the client received; undefined while pending, and for hung or reset requests. */
  status: number | undefined;
  /** The HTTP status upstream answered, for forwarded requests (a reset-after-send one too). */
  upstreamStatus: number | undefined;
  /** entry-failure: the entry Ids reported as failed. */
  failedEntryIds: string[] | undefined;
  /** Why forwarding failed (upstream unreachable); the client's connection was reset. */
  upstreamError: string | undefined;
  /** Epoch ms when the request ended: answered, reset, or closed by the client. */
  endedAt: number | undefined;
  /** The client closed the connection before getting an answer (it gave up on a hung or delayed request). */
  clientClosed: boolean;
}

export interface FaultProxyOptions {
  /** Where requests go, e.g. http://127.0.0.1:4566 (LocalStack) or the test Lambda endpoint's url. */
  upstream: string;
  /** Default 0: a free port (kept when a refuse window reopens the listener). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Randomness for `probability`, so a chaos run can be replayed with a seeded generator; default Math.random. */
  random?: () => number;
  /**
   * Sees every named request before its fault is decided, body included: a chaos run reads the receipt handles
   * of each DeleteMessageBatch from it. It must not throw.
   */
  onRequest?: (request: RequestInfo) => void;
  /**
   * Default false: a request the client gives up on (closes its connection before the answer) is still finished
   * upstream. True: the proxy aborts it upstream too, as the kernel closes a killed process's own sockets, so a
   * long poll of a process killed with SIGKILL does not go on taking messages at the server for it.
   */
  abortOnClientClose?: boolean;
}

export interface FaultProxy {
  /** http://127.0.0.1:<port>: an SDK client's `endpoint`, or AWS_ENDPOINT_URL_SQS / _LAMBDA / _CLOUDWATCH for the CLI. */
  readonly url: string;
  readonly port: number;
  readonly upstream: string;
  /** Adds a rule; the first active matching rule, in the order added, decides a request's fault. */
  inject(options: InjectOptions): FaultRule;
  /** Ends every rule. */
  clearAll(): void;
  /** Requests so far, in arrival order, optionally of one operation. */
  calls(operation?: Operation): CallRecord[];
  /** Resolves with the first call matching `predicate` (now or later); rejects after timeoutMs (default 10 s). */
  waitForCall(predicate: (call: CallRecord) => boolean, timeoutMs?: number): Promise<CallRecord>;
  /** Client connections open now (hung ones included). */
  openConnections(): number;
  /** Client connections open now that hold a hung request. */
  hungConnections(): number;
  /** Ends every rule, destroys every connection (hung ones too) and stops listening. */
  close(): Promise<void>;
}

interface SocketState {
  /** Requests on this connection not yet ended. */
  busy: number;
  hung: boolean;
}

interface RuleState {
  readonly id: number;
  readonly options: InjectOptions;
  hits: number;
  active: boolean;
  readonly ended: Promise<void>;
  end(): void;
}

interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Hop-by-hop headers belong to one connection and are not forwarded; content-length is recomputed. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'content-length',
]);

/** The JSON-protocol services the clients in node_modules talk to, by X-Amz-Target prefix, with their Smithy namespace. */
const JSON_SERVICES: Readonly<Record<string, { service: Service; namespace: string }>> = {
  AmazonSQS: { service: 'sqs', namespace: 'com.amazonaws.sqs' },
  GraniteServiceVersion20100801: { service: 'cloudwatch', namespace: 'com.amazonaws.cloudwatch' },
};

const LAMBDA_FUNCTION_PATH = /^\/2015-03-31\/functions\/([^/]+)(\/invocations|\/configuration)?\/?$/;

/** Names a request from its headers, path and body (pure, so it is easy to test on its own). */
export function identifyRequest(method: string, path: string, headers: IncomingHttpHeaders, body: string): RequestInfo {
  const info: RequestInfo = {
    service: 'unknown',
    operation: 'Unknown',
    method,
    path,
    invocationType: undefined,
    functionName: undefined,
    queueUrl: undefined,
    body,
  };
  const target = headerValue(headers, 'x-amz-target');
  if (target !== undefined) {
    const dot = target.lastIndexOf('.');
    info.operation = target.slice(dot + 1);
    info.service = JSON_SERVICES[target.slice(0, dot)]?.service ?? 'unknown';
    if (info.service === 'sqs') {
      const queueUrl = parseJsonObject(body)?.['QueueUrl'];
      if (typeof queueUrl === 'string') info.queueUrl = queueUrl;
    }
    return info;
  }
  const match = LAMBDA_FUNCTION_PATH.exec(new URL(path, 'http://proxy').pathname);
  if (match !== null) {
    info.service = 'lambda';
    info.functionName = decodeURIComponent(match[1] ?? '');
    if (match[2] === '/invocations' && method === 'POST') {
      info.operation = 'Invoke';
      info.invocationType = headerValue(headers, 'x-amz-invocation-type') ?? 'RequestResponse';
    } else if (match[2] === '/configuration') {
      info.operation = 'GetFunctionConfiguration';
    } else if (match[2] === undefined && method === 'GET') {
      info.operation = 'GetFunction';
    }
  }
  return info;
}

/** The error response AWS would send for `info`'s protocol, which the SDK maps to the exception named errorType. */
export function awsErrorResponse(info: Pick<RequestInfo, 'service'>, fault: StatusFault): UpstreamResponse {
  const message = fault.message ?? `Injected ${fault.errorType} (fault proxy)`;
  const sender = fault.status < 500;
  const headers: IncomingHttpHeaders = { 'x-amzn-requestid': randomUUID() };
  let body: Record<string, string>;
  const jsonService = Object.values(JSON_SERVICES).find((s) => s.service === info.service);
  if (jsonService !== undefined) {
    // awsQueryCompatible services: the SDK takes the code from x-amzn-query-error first, then __type.
    headers['content-type'] = 'application/x-amz-json-1.0';
    headers['x-amzn-query-error'] = `${fault.queryErrorCode ?? fault.errorType};${sender ? 'Sender' : 'Receiver'}`;
    body = { __type: `${jsonService.namespace}#${fault.errorType}`, message, ...fault.fields };
  } else {
    // REST JSON (Lambda): the code is the x-amzn-ErrorType header; Type says whose fault it was.
    headers['content-type'] = 'application/json';
    headers['x-amzn-errortype'] = fault.errorType;
    body = { Type: sender ? 'User' : 'Service', message, ...fault.fields };
  }
  for (const [name, value] of Object.entries(fault.headers ?? {})) headers[name.toLowerCase()] = value;
  return { status: fault.status, headers, body: Buffer.from(JSON.stringify(body)) };
}

/** A ReceiveMessage open at least this long, or that lasted as long, is a long poll (a short receive takes milliseconds). */
const LONG_POLL_MS = 1_000;

/**
 * How many of the queues named have had a long poll through the proxy by `now`: a ReceiveMessage open (or that
 * lasted) LONG_POLL_MS or more. Once all have, a daemon's start-up (its first pass of short receives) is over.
 */
export function queuesLongPolled(proxy: FaultProxy, names: readonly string[], now: number): number {
  const polled = new Set<string>();
  for (const c of proxy.calls('ReceiveMessage')) {
    if ((c.endedAt ?? now) - c.at < LONG_POLL_MS) continue;
    polled.add(queueName(c));
  }
  return names.filter((n) => polled.has(n)).length;
}

/** How long after `at` the first ReceiveMessage on each of the queues named started, in their order; Infinity for none. */
export function firstReceiveAfter(proxy: FaultProxy, names: readonly string[], at: number): number[] {
  const first = new Map<string, number>();
  for (const c of proxy.calls('ReceiveMessage')) {
    const name = queueName(c);
    if (c.at > at && !first.has(name)) first.set(name, c.at - at);
  }
  return names.map((name) => first.get(name) ?? Infinity);
}

/** The queue a call was made to: the last step of its queue URL ('' when it names none). */
const queueName = (c: CallRecord): string => c.queueUrl?.slice(c.queueUrl.lastIndexOf('/') + 1) ?? '';

/** ReceiveMessage calls started in [from, to) on each of the queues named, in their order (matched by queue URL). */
export function receivesPerQueue(proxy: FaultProxy, names: readonly string[], from: number, to: number): number[] {
  const counts = new Map(names.map((name) => [name, 0]));
  for (const c of proxy.calls('ReceiveMessage')) {
    if (c.at < from || c.at >= to) continue;
    const n = counts.get(queueName(c));
    if (n !== undefined) counts.set(queueName(c), n + 1);
  }
  return names.map((name) => counts.get(name)!);
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstream = new URL(options.upstream);
  const host = options.host ?? '127.0.0.1';
  const random = options.random ?? Math.random;
  // Upstream connections are reused like the SDK's own, so a test does not pay a TCP handshake per call.
  const upstreamTls = upstream.protocol === 'https:';
  const agent = upstreamTls ? new HttpsAgent({ keepAlive: true }) : new Agent({ keepAlive: true });
  const sendUpstream = upstreamTls ? httpsRequest : httpRequest;
  // In the TLS phase (phase-tls.ts) clients speak HTTPS to the proxy, as they do to AWS; a reset is still a TCP
  // reset of the connection under the TLS session.
  const phase = phaseTls();
  const secureContext: SecureContext | undefined =
    phase === undefined ? undefined : createSecureContext({ key: phase.key, cert: phase.cert });
  const tcpUnder = new WeakMap<Socket, Socket>();
  const sockets = new Map<Socket, SocketState>();
  const timers = new Set<NodeJS.Timeout>();
  const callLog: CallRecord[] = [];
  const callListeners = new Set<() => void>();
  let rules: RuleState[] = [];
  let nextRuleId = 1;
  let listener: NetServer | undefined;
  let listenerWork: Promise<void> = Promise.resolve();
  let closed = false;

  const callsChanged = (): void => {
    for (const notify of [...callListeners]) notify();
  };
  const later = (ms: number, fn: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };
  const refusing = (): boolean => rules.some((r) => r.active && r.options.fault.kind === 'refuse');

  // The HTTP server never listens itself: a replaceable net listener hands it connections, so a refuse window
  // can close the port (connect gets ECONNREFUSED) and reopen the same port afterwards.
  const http = createHttpServer({ requestTimeout: 0 }, (req, res) => {
    void handle(req, res);
  });
  // Connections are recycled as AWS does (idle ones closed after a while), not kept forever.
  http.keepAliveTimeout = 5_000;

  const accept = (tcp: Socket): void => {
    if (closed) {
      tcp.destroy();
      return;
    }
    const socket = secureContext === undefined ? tcp : new TLSSocket(tcp, { isServer: true, secureContext });
    if (socket !== tcp) {
      tcpUnder.set(socket, tcp);
      tcp.on('error', () => {});
      tcp.once('close', () => socket.destroy());
    }
    sockets.set(socket, { busy: 0, hung: false });
    socket.once('close', () => sockets.delete(socket));
    http.emit('connection', socket);
  };

  const openListener = async (port: number): Promise<NetServer> => {
    // The port can stay briefly unavailable after the previous listener closed; retry for up to a second.
    for (let attempt = 0; ; attempt += 1) {
      const server = createNetServer(accept);
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen({ port, host }, () => {
            server.off('error', reject);
            resolve();
          });
        });
        return server;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 50) throw err;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };

  /** Opens or closes the listener to match the rules; closing is immediate, reopening is awaited through the returned promise. */
  const syncListener = (): Promise<void> => {
    const wanted = (): boolean => !closed && !refusing();
    if (!wanted()) {
      listener?.close();
      listener = undefined;
      // A server that stops listening drops its idle keep-alive connections too; busy and hung ones stay.
      for (const [socket, state] of sockets) if (state.busy === 0 && !state.hung) socket.destroy();
    }
    listenerWork = listenerWork
      .then(async () => {
        if (!wanted() || listener !== undefined) return;
        const opened = await openListener(port);
        if (wanted()) listener = opened;
        else opened.close();
      })
      .catch((err: unknown) => {
        console.error('fault proxy: could not reopen its listener', err);
      });
    return listenerWork;
  };

  const first = await openListener(options.port ?? 0);
  listener = first;
  const port = (first.address() as AddressInfo).port;
  // The phase's certificate names localhost and 127.0.0.1.
  const url = `${secureContext === undefined ? 'http' : 'https'}://${host}:${port}`;

  const makeRule = (ruleOptions: InjectOptions): RuleState => {
    if (ruleOptions.fault.kind === 'refuse' && ('count' in ruleOptions || 'operation' in ruleOptions || 'probability' in ruleOptions)) {
      throw new Error('a refuse rule acts on connections: give it only forMs (or end it with clear())');
    }
    let resolveEnded: () => void = () => {};
    const ended = new Promise<void>((resolve) => (resolveEnded = resolve));
    const rule: RuleState = {
      id: nextRuleId++,
      options: ruleOptions,
      hits: 0,
      active: true,
      ended,
      end() {
        if (!rule.active) return;
        rule.active = false;
        rules = rules.filter((r) => r !== rule);
        if (ruleOptions.fault.kind === 'refuse') void syncListener().then(resolveEnded);
        else resolveEnded();
      },
    };
    return rule;
  };

  const matches = (rule: RuleState, info: RequestInfo): boolean => {
    const o = rule.options;
    if (o.fault.kind === 'refuse') return false;
    const ruleOptions = o as RequestRuleOptions;
    const list = <T>(value: T | readonly T[] | undefined): readonly T[] | undefined =>
      value === undefined ? undefined : Array.isArray(value) ? (value as readonly T[]) : [value as T];
    const operations = list(ruleOptions.operation);
    if (operations !== undefined && !operations.includes(info.operation)) return false;
    const types = list(ruleOptions.invocationType);
    if (types !== undefined && (info.invocationType === undefined || !types.includes(info.invocationType))) return false;
    // An entry failure only makes sense where there are entries to fail.
    if (ruleOptions.fault.kind === 'entry-failure' && !(info.service === 'sqs' && info.operation.endsWith('Batch'))) return false;
    if (ruleOptions.match !== undefined && !ruleOptions.match(info)) return false;
    if (ruleOptions.probability !== undefined && random() >= ruleOptions.probability) return false;
    return true;
  };

  const pickRule = (info: RequestInfo): RuleState | undefined => {
    const rule = rules.find((r) => r.active && matches(r, info));
    if (rule === undefined) return undefined;
    rule.hits += 1;
    const count = (rule.options as RequestRuleOptions).count;
    if (count !== undefined && rule.hits >= count) rule.end();
    return rule;
  };

  /** Sends the request upstream; `sent` resolves once it is written, `response` with the buffered answer. */
  const forward = (
    req: IncomingMessage,
    body: Buffer,
    signal?: AbortSignal,
  ): { sent: Promise<void>; response: Promise<UpstreamResponse> } => {
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    headers['content-length'] = body.length;
    let markSent: () => void = () => {};
    const sent = new Promise<void>((resolve) => (markSent = resolve));
    const response = new Promise<UpstreamResponse>((resolve, reject) => {
      const upstreamReq = sendUpstream(new URL(req.url ?? '/', upstream), { method: req.method, headers, agent, signal }, (upstreamRes) => {
        const chunks: Buffer[] = [];
        upstreamRes.on('data', (chunk: Buffer) => chunks.push(chunk));
        upstreamRes.on('error', reject);
        upstreamRes.on('end', () =>
          resolve({ status: upstreamRes.statusCode ?? 502, headers: upstreamRes.headers, body: Buffer.concat(chunks) }),
        );
      });
      upstreamReq.on('error', reject);
      upstreamReq.end(body, markSent);
    });
    // The request may fail before it is written; `sent` must not wait for ever then.
    response.then(markSent, markSent);
    return { sent, response };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const socket = req.socket;
    const socketState = sockets.get(socket);
    if (socketState !== undefined) socketState.busy += 1;
    let weEnded = false;
    const clientGone = options.abortOnClientClose === true ? new AbortController() : undefined;
    // eslint-disable-next-line prefer-const -- the close handler reads it before the request has been identified
    let call: CallRecord | undefined;
    res.once('close', () => {
      if (socketState !== undefined) socketState.busy -= 1;
      if (call === undefined) return;
      call.endedAt ??= Date.now();
      // close() destroying a hung connection is not the client giving up.
      if (!weEnded && !closed) {
        call.clientClosed = true;
        clientGone?.abort();
      }
      callsChanged();
    });
    const reset = (): void => {
      weEnded = true;
      (tcpUnder.get(socket) ?? socket).resetAndDestroy();
    };
    const answer = (response: UpstreamResponse): void => {
      if (res.destroyed) return;
      weEnded = true;
      const headers: OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
      }
      headers['content-length'] = response.body.length;
      res.writeHead(response.status, headers);
      res.end(response.body);
      if (call !== undefined) {
        call.status = response.status;
        call.endedAt = Date.now();
        callsChanged();
      }
    };

    let body: Buffer;
    try {
      body = await readBody(req);
    } catch {
      return; // The client went away mid-request; there is nothing to fault or forward.
    }
    const info = identifyRequest(req.method ?? 'GET', req.url ?? '/', req.headers, body.toString('utf8'));
    call = {
      service: info.service,
      operation: info.operation,
      invocationType: info.invocationType,
      functionName: info.functionName,
      queueUrl: info.queueUrl,
      at: Date.now(),
      ruleId: undefined,
      fault: undefined,
      status: undefined,
      upstreamStatus: undefined,
      failedEntryIds: undefined,
      upstreamError: undefined,
      endedAt: undefined,
      clientClosed: false,
    };
    const record = call;
    options.onRequest?.(info);

    const refuseRule = rules.find((r) => r.active && r.options.fault.kind === 'refuse');
    if (refuseRule !== undefined) {
      // A connection opened before the window: the server behind it is gone, so the request is reset.
      refuseRule.hits += 1;
      record.ruleId = refuseRule.id;
      record.fault = 'refuse';
      callLog.push(record);
      reset();
      callsChanged();
      return;
    }
    const rule = pickRule(info);
    const fault = rule?.options.fault as RequestFault | undefined;
    if (rule !== undefined && fault !== undefined) {
      record.ruleId = rule.id;
      record.fault = fault.kind;
    }
    if (fault?.kind === 'hang' && socketState !== undefined) socketState.hung = true;
    // Logged once its fault is known, so waitForCall((c) => c.fault === 'hang') sees it at once.
    callLog.push(record);
    callsChanged();
    const upstreamFailed = (err: unknown): void => {
      record.upstreamError = err instanceof Error ? err.message : String(err);
      if (!res.destroyed) reset();
      callsChanged();
    };

    try {
      switch (fault?.kind) {
        case undefined: {
          const response = await forward(req, body, clientGone?.signal).response;
          record.upstreamStatus = response.status;
          answer(response);
          return;
        }
        case 'hang':
          // Never answered and never closed from this side: only the client (or close()) ends it.
          return;
        case 'delay': {
          const response = await forward(req, body).response;
          record.upstreamStatus = response.status;
          later(fault.ms, () => answer(response));
          return;
        }
        case 'reset-before-send':
          reset();
          return;
        case 'reset-after-send': {
          const forwarded = forward(req, body);
          forwarded.response.then(
            (response) => {
              record.upstreamStatus = response.status;
              callsChanged();
            },
            (err: unknown) => {
              record.upstreamError = err instanceof Error ? err.message : String(err);
              callsChanged();
            },
          );
          if (fault.when === 'sent') await forwarded.sent;
          else await forwarded.response.catch(() => undefined);
          reset();
          return;
        }
        case 'status':
          answer(awsErrorResponse(info, fault));
          return;
        case 'entry-failure':
          answer(await failEntries(req, body, fault, record));
          return;
      }
    } catch (err) {
      upstreamFailed(err);
    }
  };

  /** entry-failure: forwards what should really happen, then reports the selected entries as Failed. */
  const failEntries = async (
    req: IncomingMessage,
    body: Buffer,
    fault: EntryFailureFault,
    record: CallRecord,
  ): Promise<UpstreamResponse> => {
    const request = parseJsonObject(body.toString('utf8')) ?? {};
    const entries = Array.isArray(request['Entries']) ? (request['Entries'] as Array<{ Id?: unknown }>) : [];
    const selected = new Set(fault.entryIds ?? entries.map((e) => String(e.Id)));
    const failedIds = entries.map((e) => String(e.Id)).filter((id) => selected.has(id));
    const failed = failedIds.map((Id) => ({
      Id,
      SenderFault: fault.senderFault ?? true,
      Code: fault.code ?? 'ReceiptHandleIsInvalid',
      Message: fault.message ?? `Injected ${fault.code ?? 'ReceiptHandleIsInvalid'} (fault proxy)`,
    }));
    record.failedEntryIds = failedIds;
    const skip = (fault.upstream ?? 'skip') === 'skip';
    const forwardedEntries = skip ? entries.filter((e) => !selected.has(String(e.Id))) : entries;
    let answer: { Successful?: Array<{ Id?: unknown }>; Failed?: unknown[] } = { Successful: [], Failed: [] };
    let response: UpstreamResponse = {
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomUUID() },
      body: Buffer.alloc(0),
    };
    // SQS rejects an empty batch (EmptyBatchRequest), so a batch failed entirely is answered here alone.
    if (forwardedEntries.length > 0) {
      const upstreamBody = skip ? Buffer.from(JSON.stringify({ ...request, Entries: forwardedEntries })) : body;
      response = await forward(req, upstreamBody).response;
      record.upstreamStatus = response.status;
      if (response.status !== 200) return response; // A whole-batch error from upstream stays what it was.
      answer = parseJsonObject(response.body.toString('utf8')) ?? {};
    }
    const successful = (answer.Successful ?? []).filter((s) => !selected.has(String(s.Id)));
    const rewritten = { ...answer, Successful: successful, Failed: [...(answer.Failed ?? []), ...failed] };
    return { ...response, body: Buffer.from(JSON.stringify(rewritten)) };
  };

  const proxy: FaultProxy = {
    url,
    port,
    upstream: options.upstream,
    inject(ruleOptions) {
      if (closed) throw new Error('fault proxy is closed');
      const rule = makeRule(ruleOptions);
      rules.push(rule);
      if (ruleOptions.forMs !== undefined) later(ruleOptions.forMs, () => rule.end());
      if (ruleOptions.fault.kind === 'refuse') void syncListener();
      return {
        id: rule.id,
        get hits() {
          return rule.hits;
        },
        get active() {
          return rule.active;
        },
        ended: rule.ended,
        clear: () => rule.end(),
      };
    },
    clearAll() {
      for (const rule of [...rules]) rule.end();
    },
    calls(operation) {
      return operation === undefined ? [...callLog] : callLog.filter((c) => c.operation === operation);
    },
    waitForCall(predicate, timeoutMs = 10_000) {
      return new Promise<CallRecord>((resolve, reject) => {
        const check = (): void => {
          const hit = callLog.find(predicate);
          if (hit === undefined) return;
          cleanup();
          resolve(hit);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `no matching call within ${timeoutMs} ms; calls: ${JSON.stringify(callLog.map((c) => [c.operation, c.fault, c.status]))}`,
            ),
          );
        }, timeoutMs);
        const cleanup = (): void => {
          clearTimeout(timer);
          callListeners.delete(check);
        };
        callListeners.add(check);
        check();
      });
    },
    openConnections: () => sockets.size,
    hungConnections: () => [...sockets.values()].filter((s) => s.hung).length,
    async close() {
      if (closed) return;
      closed = true;
      for (const rule of [...rules]) rule.end();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      listener?.close();
      listener = undefined;
      for (const socket of sockets.keys()) socket.destroy();
      agent.destroy();
      await listenerWork;
    },
  };
  return proxy;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('close', () => {
      if (!req.complete) reject(new Error('client closed the request'));
    });
  });
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
