import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';

export interface Probe {
  readonly ok: boolean;
  readonly reasons: readonly string[];
}

/** What the server serves; each handler is cheap and reads state the daemon already keeps. */
export interface HttpRoutes {
  liveness(): Probe;
  readiness(): Probe;
  metrics(): Promise<{ contentType: string; body: string }>;
  status(): unknown;
  statusPage: string;
}

export interface HttpServerHandle {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The opt-in HTTP server (--http-port): probes for Kubernetes and ECS, Prometheus metrics, the status page.
 * GET only; anything else is 404/405. It never holds the process open on its own.
 */
export async function startHttpServer(opts: { host: string; port: number; routes: HttpRoutes; logger: Logger }): Promise<HttpServerHandle> {
  const { routes, logger } = opts;
  const server: Server = createServer((req, res) => {
    void handle(req, res, routes).catch((err: unknown) => {
      logger.error({ err, path: req.url }, 'HTTP handler failed');
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
      else res.destroy();
    });
  });
  // Probes come every few seconds: keep-alive sockets must not keep a stopping process alive.
  server.keepAliveTimeout = 5_000;
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
  const path = (req.url ?? '/').split('?')[0];
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
      return send(res, 200, 'application/json', JSON.stringify(routes.status()));
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

function send(res: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store', ...headers });
  res.end(body);
}
