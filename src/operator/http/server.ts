import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { capText } from '../../util/cap-text.ts';
import { nodeHttp } from '../../util/node-http.ts';
import { limitConnections } from './connection-limit.ts';
import { hostChecker } from './host-check.ts';
import { securityHeaders } from './security-headers.ts';

export interface Probe {
  readonly ok: boolean;
  readonly reasons: readonly string[];
}

/** What the server serves; each handler is cheap and reads state the daemon already keeps. */
export interface HttpRoutes {
  liveness(): Probe;
  readiness(): Probe;
  metrics(): Promise<{ contentType: string; body: string }>;
  /** `query`: the request's search parameters (/status.json?sort=&offset=&limit=). */
  status(query: URLSearchParams): unknown;
  statusPage: string;
}

// The bounds on a client. Node 24's defaults leave a connection that sends nothing open for 60 to 90 s
// (measured: the 60 s headersTimeout, checked every 30 s) and accept any number of them, each holding a file
// descriptor the AWS calls may need. A probe, a scrape or a browser sends its request at once, reads a small
// answer and comes back within seconds; none of them comes near these bounds.

/** A request's headers must arrive within this time of its connection or of the previous answer. */
const HEADERS_TIMEOUT_MS = 5_000;
/** The whole request (GET: headers only) within this time; Node requires it to be at least the headers timeout. */
const REQUEST_TIMEOUT_MS = 10_000;
/**
 * An idle keep-alive connection closes after this. Above the status page's 2 s poll, so a browser reuses its
 * connection; probes come every few seconds and must not keep a stopping process alive.
 */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/**
 * How often Node looks for connections past the headers or request timeout (default 30 s): this sets how
 * late a silent connection is closed after its 5 s.
 */
const CONNECTIONS_CHECK_INTERVAL_MS = 1_000;
/**
 * No byte in either direction for this long closes the socket in any state, including one the two timeouts
 * above no longer cover (a request read, its answer never written).
 */
const SOCKET_IDLE_TIMEOUT_MS = 10_000;
/** A request for a foreign Host is logged at most this often, with the count since the last line: a flood is one line a minute. */
const DROP_LOG_INTERVAL_MS = 60_000;

export interface HttpServerHandle {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The opt-in HTTP server (--http-port): probes for Kubernetes and ECS, Prometheus metrics, the status page.
 * GET only; anything else is 404/405. A request whose Host does not name this server is refused with 421
 * (src/operator/http/host-check.ts); every answer carries the security headers (security-headers.ts). It never
 * holds the process open on its own.
 */
export async function startHttpServer(opts: {
  host: string;
  port: number;
  routes: HttpRoutes;
  logger: Logger;
  /**
   * Connections held at once (src/daemon/socket-budget.ts); a further one takes the place of the one that has
   * waited longest without a complete request (connection-limit.ts).
   */
  maxConnections: number;
  /** --http-allowed-hosts: host names answered besides IP addresses, localhost and `host`. Default none. */
  allowedHosts?: readonly string[];
}): Promise<HttpServerHandle> {
  const { routes, logger, maxConnections } = opts;
  const hostAllowed = hostChecker({ bindHost: opts.host, allowedHosts: opts.allowedHosts ?? [] });
  let misdirected = 0;
  let lastMisdirectedLog = -Infinity;
  const refuseHost = (req: IncomingMessage, res: ServerResponse): void => {
    // No detail in the answer: whoever sent it learns only that this name is not served.
    send(res, 421, 'text/plain; charset=utf-8', 'misdirected request\n');
    misdirected++;
    const now = performance.now();
    if (now - lastMisdirectedLog < DROP_LOG_INTERVAL_MS) return;
    // The last Host refused, capped: an operator who put workerless behind a name sees which one to allow.
    logger.warn(
      { host: capText(req.headers.host ?? ''), refused: misdirected },
      'HTTP requests refused: their Host is not an IP address, localhost, --http-host or in --http-allowed-hosts',
    );
    misdirected = 0;
    lastMisdirectedLog = now;
  };
  const options = {
    headersTimeout: HEADERS_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: CONNECTIONS_CHECK_INTERVAL_MS,
  };
  const server: Server = nodeHttp.createServer(options, (req, res) => {
    if (!hostAllowed(req.headers.host)) return refuseHost(req, res);
    void handle(req, res, routes).catch((err: unknown) => {
      logger.error({ err, path: req.url }, 'HTTP handler failed');
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
      else res.destroy();
    });
  });
  // Without a 'timeout' listener Node destroys the socket.
  server.timeout = SOCKET_IDLE_TIMEOUT_MS;
  limitConnections(server, maxConnections, logger);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.unref();
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, routes: HttpRoutes): Promise<void> {
  const [path, search] = (req.url ?? '/').split('?', 2);
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { allow: 'GET, HEAD' });
  switch (path) {
    case '/healthz':
      return probe(res, routes.liveness());
    case '/readyz':
      return probe(res, routes.readiness());
    case '/metrics': {
      const { contentType, body } = await routes.metrics();
      return send(res, 200, contentType, body);
    }
    case '/status.json':
      return send(res, 200, 'application/json', JSON.stringify(routes.status(new URLSearchParams(search ?? ''))));
    case '/':
      return send(res, 200, 'text/html; charset=utf-8', routes.statusPage);
    default:
      return send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
  }
}

function probe(res: ServerResponse, result: Probe): void {
  const body = result.ok ? 'ok\n' : `${result.reasons.join('\n')}\n`;
  send(res, result.ok ? 200 : 503, 'text/plain; charset=utf-8', body);
}

/** Every answer goes through here, so every one carries the security headers; the one HTML answer is the status page. */
function send(res: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': contentType, ...securityHeaders(contentType.startsWith('text/html')), ...headers });
  res.end(body);
}
