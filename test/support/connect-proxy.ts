// An HTTP proxy on 127.0.0.1 that a test starts in its own process, as a corporate proxy would serve the daemon:
// CONNECT tunnels for https endpoints and absolute-form requests for http ones, optionally demanding credentials
// (407), refusing every tunnel (403) or closing the connection instead of answering. It counts what it carried, so a
// test can tell that the daemon went through it (and that NO_PROXY kept it away). Reusable by any test.
import http from 'node:http';
import net from 'node:net';

export type ProxyMode = 'open' | 'refuse' | 'close';

export interface ConnectProxyOptions {
  /** Demand Proxy-Authorization Basic with these (407 without them). */
  readonly credentials?: { readonly user: string; readonly password: string };
  /** `open` (default) carries everything, `refuse` answers 403, `close` drops the connection on each request. */
  readonly mode?: ProxyMode;
}

export interface ConnectProxy {
  readonly port: number;
  /** `http://127.0.0.1:<port>`, or with `user:password@` for credentials. */
  url(credentials?: { user: string; password: string }): string;
  /** The targets (host:port) of the tunnels opened, in order. */
  readonly tunnels: string[];
  /** The absolute URLs of the plain http requests forwarded, in order. */
  readonly forwarded: string[];
  /** What each CONNECT or forwarded request said in Proxy-Authorization (undefined: nothing). */
  readonly authorizations: (string | undefined)[];
  /** Requests refused (403, 407) or dropped. */
  refused: number;
  mode: ProxyMode;
  close(): Promise<void>;
}

export async function startConnectProxy(options: ConnectProxyOptions = {}): Promise<ConnectProxy> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  };
  const expected =
    options.credentials && `Basic ${Buffer.from(`${options.credentials.user}:${options.credentials.password}`).toString('base64')}`;
  const proxy: Omit<ConnectProxy, 'port' | 'url' | 'close'> = {
    tunnels: [],
    forwarded: [],
    authorizations: [],
    refused: 0,
    mode: options.mode ?? 'open',
  };
  /** Why a request is not carried (a status line), or undefined. */
  const refusal = (auth: string | undefined): string | undefined => {
    proxy.authorizations.push(auth);
    if (proxy.mode === 'refuse') return '403 Forbidden';
    if (expected !== undefined && auth !== expected) return '407 Proxy Authentication Required';
    return undefined;
  };
  const server = http.createServer((req, res) => {
    if (proxy.mode === 'close') return void (proxy.refused++, req.socket.destroy());
    const refused = refusal(req.headers['proxy-authorization']);
    if (refused !== undefined) {
      proxy.refused++;
      res.writeHead(Number(refused.slice(0, 3)), { 'proxy-authenticate': 'Basic realm="test"', connection: 'close' });
      return void res.end();
    }
    const target = new URL(req.url ?? '/');
    proxy.forwarded.push(target.href);
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const upstream = http.request(
      { host: target.hostname, port: target.port || 80, method: req.method, path: `${target.pathname}${target.search}`, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connection', track);
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    track(client);
    if (proxy.mode === 'close') return void (proxy.refused++, client.destroy());
    const refused = refusal(req.headers['proxy-authorization']);
    if (refused !== undefined) {
      proxy.refused++;
      return void client.end(`HTTP/1.1 ${refused}\r\nproxy-authenticate: Basic realm="test"\r\ncontent-length: 0\r\n\r\n`);
    }
    const at = (req.url ?? '').lastIndexOf(':');
    const host = (req.url ?? '').slice(0, at).replace(/^\[(.*)\]$/, '$1');
    const port = Number((req.url ?? '').slice(at + 1));
    const upstream = net.connect({ host, port }, () => {
      proxy.tunnels.push(req.url ?? '');
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    track(upstream);
    upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n'));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return Object.assign(proxy, {
    port,
    url: (credentials?: { user: string; password: string }) =>
      credentials
        ? `http://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}`
        : `http://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
