import { channel } from 'node:diagnostics_channel';
import net from 'node:net';
import tls from 'node:tls';
import { markConnectionFacts } from '../core/errors.ts';
import { closedBeforeSent, Connection, Exchange, RECHECK_IDLE_MS, type ConnectionOwner, type Http1Result } from './http1-connection.ts';
import { directNetwork, type AwsNetwork, type ProxyRoute } from './network.ts';
import { openTunnel } from './proxy-tunnel.ts';
import { monotonicNow } from '../util/clock.ts';

/**
 * The lean transport's sockets: keep-alive HTTP/1.1 over net.Socket (tls.TLSSocket for https), one request at a
 * time per socket, up to `maxSockets` per origin, the rest waiting in order for the next free one; a free socket is
 * reused last-in first-out and closed when the server closes it, after FREE_SOCKET_TIMEOUT_MS idle, or sooner when
 * the server's `Keep-Alive: timeout` hint (less a second) says so, as node:http's global Agent does. The answer is
 * read by src/aws/http1-answer.ts.
 *
 * A socket whose server has closed its side (its end of stream read) is never handed out again, even before its
 * 'close' comes: a request written there is lost, and an Invoke that was never run is then "unknown" (issue 42: 3-5
 * in 400 calls behind a server that closes connections idle for 200 ms; node:http's Agent destroys a free socket as
 * soon as it reads its end). And a socket idle for RECHECK_IDLE_MS or more is written to only after the event loop
 * has read what waits on it: a server's close that came while the loop was busy elsewhere (a stall, a burst of
 * answers read in the same turn) is seen first, and the call goes to another socket, not sent. Each socket and the
 * call it carries: src/aws/http1-connection.ts.
 *
 * Why not node:http: a socket with a request open costs about 17 KiB there (ClientRequest, its parser, the agent's
 * bookkeeping) and about 5 KiB here, which at one long poll per queue is most of the daemon's memory at 10,000
 * queues (bench/many-queues.ts prints both floors). The socket options and errors are node:http's: TCP_NODELAY,
 * TCP keep-alive probes after 1 s idle (the Agent's keepAliveMsecs), Node's own network errors (ECONNREFUSED,
 * ECONNRESET...), "socket hang up" (ECONNRESET) for a connection closed before any answer, and a failure before
 * the socket connected marked as not sent (markNotSent) for the caller's retry rules.
 *
 * Through a proxy (src/aws/network.ts decides which, with the AWS CLI's HTTPS_PROXY / HTTP_PROXY / NO_PROXY rules),
 * as botocore sends it: an https origin's sockets are CONNECT tunnels (src/aws/proxy-tunnel.ts) with TLS to the
 * endpoint inside; an http origin's requests go to the proxy in absolute form (`POST http://host:port/path`) with
 * Proxy-Authorization. A failed connection's error carries the proxy and the CAs it was checked against
 * (markConnectionFacts), for the one line that tells it (src/core/errors.ts connectionFault).
 */

/** An endpoint's parts that a request is sent to. */
export type { Http1Result } from './http1-connection.ts';

export interface Http1Target {
  /** The Host header: hostname and any port. */
  readonly host: string;
  readonly hostname: string;
  readonly port: number | undefined;
  readonly https: boolean;
}

/**
 * Published as each request starts, as node:http publishes `http.client.request.start`: {method, path, headers}
 * (the headers as given). bench/support/sdk-call-counter.ts counts the calls by it. Nothing is built unless someone
 * subscribes.
 */
const REQUEST_START_CHANNEL = 'workerless:http1:request:start';
const requestStart = channel(REQUEST_START_CHANNEL);

/** node:http's Agent keeps a free socket until one second before the server's announced idle limit. */
const KEEP_ALIVE_BUFFER_MS = 1_000;
/**
 * A free socket is closed after this long idle, hint or not: node:http's global Agent's `timeout` (5 s; the SDK's
 * NodeHttpHandler builds its agents without one, so it keeps free sockets until the server closes them). A server
 * that closes idle connections without a Keep-Alive hint (most AWS endpoints send none) races every reuse of a
 * socket as old as its limit: the sooner the pool lets go, the fewer servers it races. Nothing on the hot path idles
 * that long: a long poll's socket is reused at once, an Invoke's as soon as the next batch is ready.
 */
export const FREE_SOCKET_TIMEOUT_MS = 5_000;
/** node:http's Agent keepAliveMsecs: TCP keep-alive probes start after this long without traffic. */
const TCP_KEEP_ALIVE_MS = 1_000;

export class Http1Pool {
  readonly #maxSockets: number;
  readonly #network: AwsNetwork;
  readonly #origins = new Map<string, Origin>();

  /** `network`: the proxies and the TLS context (default: straight to every endpoint, the default CAs). */
  constructor(maxSockets: number, network: AwsNetwork = directNetwork()) {
    this.#maxSockets = Math.max(1, maxSockets);
    this.#network = network;
  }

  /**
   * POSTs `body` with `headers` (given as they are; Connection: keep-alive is added) to `target` + `path`. Resolves
   * with any HTTP answer; rejects with Node's network error, a parse error (HPE_...), an AnswerTooLarge error once
   * the answer exceeds `maxAnswerBytes`, or, once `signal` aborts, `abortError(signal)`.
   */
  post(
    target: Http1Target,
    path: string,
    headers: Readonly<Record<string, string>>,
    body: string,
    signal: AbortSignal | undefined,
    maxAnswerBytes: number,
    abortError: (signal: AbortSignal) => Error,
  ): Promise<Http1Result> {
    const key = `${target.https ? 'https' : 'http'}://${target.hostname}:${target.port ?? ''}`;
    let origin = this.#origins.get(key);
    if (origin === undefined) {
      origin = new Origin(target, this.#maxSockets, this.#network);
      this.#origins.set(key, origin);
    }
    let head = `POST ${origin.forwardedTo}${path} HTTP/1.1\r\n`;
    for (const name in headers) {
      const value = headers[name]!;
      if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) throw new TypeError(`Invalid character in header content ["${name}"]`);
      head += `${name}: ${value}\r\n`;
    }
    head += origin.proxyHeaders;
    head += 'connection: keep-alive\r\n\r\n';
    if (requestStart.hasSubscribers) requestStart.publish({ method: 'POST', path, headers });
    return new Promise<Http1Result>((resolve, reject) => {
      const exchange = new Exchange(head + body, signal, maxAnswerBytes, abortError, resolve, reject);
      if (signal?.aborted) return exchange.fail(abortError(signal));
      origin.start(exchange);
    });
  }

  /** Closes every socket; calls still open fail as their connection ends. */
  destroy(): void {
    for (const origin of this.#origins.values()) origin.destroy();
    this.#origins.clear();
  }
}

/** One origin's sockets and the calls waiting for one. */
class Origin implements ConnectionOwner {
  readonly #target: Http1Target;
  readonly #maxSockets: number;
  /** Sockets open or connecting, busy or free. */
  readonly #open = new Set<Connection>();
  /** Free sockets, the most recently freed last. */
  readonly #free: Connection[] = [];
  /** Calls waiting for a socket, in order. */
  readonly #waiting = new Set<Exchange>();
  /** The last TLS session, to resume on the next connect (node:https's Agent caches them as well). */
  session: Buffer | undefined;
  /**
   * The proxies and the one TLS context all sockets share (AwsNetwork.secureContext): without it tls.connect builds
   * one a socket (the CA store and OpenSSL's SSL_CTX), about 25 KiB more a connection, which at one long poll per
   * queue is 250 MiB at 10,000 queues (issue 41). Verification is the same: the server's certificate and name are
   * checked per connection.
   */
  readonly #network: AwsNetwork;
  /** The proxy this origin's sockets go through, if any (decided once: the environment does not change). */
  readonly #proxy: ProxyRoute | undefined;
  /** `http://host:port` before each path when requests go to a proxy in absolute form (an http origin), else ''. */
  readonly forwardedTo: string;
  /** The Proxy-Authorization header line of such requests, else ''. */
  readonly proxyHeaders: string;
  #destroyed = false;

  constructor(target: Http1Target, maxSockets: number, network: AwsNetwork) {
    this.#target = target;
    this.#maxSockets = maxSockets;
    this.#network = network;
    this.#proxy = network.proxyFor(target.https, target.hostname, target.port);
    const forwarded = this.#proxy !== undefined && !target.https;
    this.forwardedTo = forwarded ? `http://${target.host}` : '';
    this.proxyHeaders =
      forwarded && this.#proxy?.authorization !== undefined ? `proxy-authorization: ${this.#proxy.authorization}\r\n` : '';
  }

  start(exchange: Exchange): void {
    if (this.#destroyed) return exchange.fail(closedBeforeSent());
    let free = this.#free.pop();
    // A free socket the server has closed (its 'close' not yet handled) or idle past its bound (its timer late behind
    // a busy event loop) is passed over, and closed.
    const now = monotonicNow();
    while (free !== undefined && !free.usable(now)) {
      free.destroy();
      free = this.#free.pop();
    }
    if (free) free.send(exchange, now - free.freedAt >= RECHECK_IDLE_MS);
    else if (this.#open.size < this.#maxSockets) this.#connect().send(exchange);
    else {
      this.#waiting.add(exchange);
      exchange.queuedIn = this.#waiting;
    }
  }

  /** A socket's call is answered and the socket may carry another: to the next waiting call, else kept free. */
  release(connection: Connection, keepAliveMs: number | undefined): void {
    const next = this.#nextWaiting();
    if (next) return connection.send(next);
    // As node:http's Agent: the hint less a second, if it is sooner than the bound; a hint of a second or less, not kept.
    const idleMs =
      keepAliveMs === undefined ? FREE_SOCKET_TIMEOUT_MS : Math.min(keepAliveMs - KEEP_ALIVE_BUFFER_MS, FREE_SOCKET_TIMEOUT_MS);
    if (idleMs <= 0) return connection.destroy();
    connection.idle(idleMs, monotonicNow());
    this.#free.push(connection);
  }

  /** A socket closed: forgotten, and its place given to the next waiting call. */
  closed(connection: Connection): void {
    this.#open.delete(connection);
    const at = this.#free.indexOf(connection);
    if (at >= 0) this.#free.splice(at, 1);
    const next = this.#destroyed ? undefined : this.#nextWaiting();
    if (next) this.#connect().send(next);
  }

  /** Closes every socket and fails the calls waiting for one; nothing connects again. */
  destroy(): void {
    this.#destroyed = true;
    for (const exchange of this.#waiting) exchange.fail(closedBeforeSent());
    this.#waiting.clear();
    for (const connection of this.#open) connection.destroy();
  }

  #nextWaiting(): Exchange | undefined {
    for (const exchange of this.#waiting) {
      this.#waiting.delete(exchange);
      exchange.queuedIn = undefined;
      return exchange;
    }
    return undefined;
  }

  #connect(): Connection {
    const { hostname, https } = this.#target;
    const port = this.#target.port ?? (https ? 443 : 80);
    const proxy = this.#proxy;
    const connection = new Connection(this, https);
    this.#open.add(connection);
    if (proxy === undefined)
      connection.attach(https ? this.#tls({ host: hostname, port }) : net.connect({ host: hostname, port, ...SOCKET }));
    // An http origin through a proxy: its requests go to the proxy, in absolute form.
    else if (!https) connection.attach(net.connect({ host: proxy.host, port: proxy.port, ...SOCKET }));
    else {
      const tunnel = openTunnel(proxy, hostname, port, (err, socket) => {
        if (err !== undefined || socket === undefined) connection.tunnelFailed(err ?? new Error('no tunnel'));
        else connection.attach(this.#tls({ socket }));
      });
      connection.tunnelling(tunnel);
    }
    return connection;
  }

  /** A TLS socket to the endpoint, straight or over a tunnel, with the shared context and the last session. */
  #tls(over: { host: string; port: number } | { socket: net.Socket }): tls.TLSSocket {
    const { hostname } = this.#target;
    const socket = tls.connect({
      ...('socket' in over ? { socket: over.socket } : { ...over, ...SOCKET }),
      host: hostname,
      servername: net.isIP(hostname) === 0 ? hostname : undefined,
      session: this.session,
      secureContext: this.#network.secureContext(),
    });
    socket.on('session', (session: Buffer) => (this.session = session));
    return socket;
  }

  /** Marks an error of a connection that failed before it carried its request: the proxy, the trust. */
  connectFailed(err: Error): Error {
    return markConnectionFacts(err, this.#network.facts(this.#proxy));
  }
}

/** node:http's socket options: no Nagle delay, TCP keep-alive probes after keepAliveMsecs idle. */
const SOCKET = { noDelay: true, keepAlive: true, keepAliveInitialDelay: TCP_KEEP_ALIVE_MS } as const;
