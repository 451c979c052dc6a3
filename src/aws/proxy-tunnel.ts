import net from 'node:net';
import { markConnectionFacts, PROXY_TUNNEL_CODE } from '../core/errors.ts';
import type { ProxyRoute } from './network.ts';

/**
 * An HTTP CONNECT tunnel through a proxy to an https endpoint, for both clients (src/aws/http1-pool.ts,
 * src/aws/sdk-agents.ts), which then speak TLS to the endpoint through it: the proxy sees the host and port, never
 * the request. As botocore (urllib3) opens it: `CONNECT host:port HTTP/1.1`, a Host header, and Proxy-Authorization
 * when the proxy's URL has credentials; any 2xx answer opens the tunnel.
 */

/** How long a proxy may take to answer the CONNECT: a proxy that accepts and never answers would hold a call for ever. */
export const TUNNEL_TIMEOUT_MS = 10_000;

/** A proxy's answer head is a status line and a few headers; more than this is not a proxy's answer. */
const MAX_ANSWER_HEAD_BYTES = 16 * 1024;

/** The socket options of both transports (node:http's Agent): no Nagle delay, TCP keep-alive probes after 1 s idle. */
const SOCKET_OPTIONS = { noDelay: true, keepAlive: true, keepAliveInitialDelay: 1_000 } as const;

/**
 * Connects to the proxy and asks it for a tunnel to `host`:`port`. `done` is called once: with the open socket
 * (paused, nothing read past the proxy's answer), or with an error: the proxy's own network error (ECONNREFUSED...,
 * marked with the proxy), or one coded ERR_PROXY_TUNNEL whose message names the proxy and says what it did (refused
 * with its status, closed the connection, sent no answer in time). Returns the socket to the proxy, so that the
 * caller can destroy it while the tunnel is being opened (then `done` gets an error).
 */
export function openTunnel(
  proxy: ProxyRoute,
  host: string,
  port: number,
  done: (err: Error | undefined, socket: net.Socket | undefined) => void,
  timeoutMs = TUNNEL_TIMEOUT_MS,
): net.Socket {
  const authority = `${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
  const socket = net.connect({ host: proxy.host, port: proxy.port, ...SOCKET_OPTIONS });
  let head = Buffer.alloc(0);
  let over = false;
  const finish = (err: Error | undefined): void => {
    if (over) return;
    over = true;
    socket.setTimeout(0);
    socket.removeListener('data', onData);
    socket.removeListener('close', onClose);
    socket.removeListener('timeout', onTimeout);
    if (err !== undefined) {
      socket.removeListener('error', onError);
      socket.on('error', () => {});
      socket.destroy();
      done(err, undefined);
    } else {
      socket.removeListener('error', onError);
      socket.pause();
      done(undefined, socket);
    }
  };
  const refused = (what: string): Error => Object.assign(new Error(`the proxy ${proxy.name} ${what}`), { code: PROXY_TUNNEL_CODE });
  const connectTo = `the CONNECT to ${authority}`;
  const onData = (chunk: Buffer): void => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) {
      if (head.length > MAX_ANSWER_HEAD_BYTES) finish(refused(`answered ${connectTo} with something that is not HTTP`));
      return;
    }
    const status = /^HTTP\/1\.[01] (\d{3}) ?([^\r\n]*)/.exec(head.toString('latin1', 0, end));
    if (status === null) return finish(refused(`answered ${connectTo} with something that is not HTTP`));
    const code = Number(status[1]);
    if (code < 200 || code > 299)
      return finish(refused(`refused the tunnel to ${authority}: ${code} ${status[2]}${refusalHint(code, proxy)}`));
    // Nothing may follow the answer before our TLS handshake starts: bytes there would be the proxy's, not the endpoint's.
    if (head.length > end + 4) return finish(refused(`sent bytes after its answer to ${connectTo}`));
    finish(undefined);
  };
  const onClose = (): void => finish(refused(`closed the connection before answering ${connectTo}`));
  const onTimeout = (): void => finish(refused(`sent no answer to ${connectTo} within ${timeoutMs / 1000} s`));
  const onError = (err: Error): void => finish(markConnectionFacts(err, { proxy: proxy.name }));
  socket.setTimeout(timeoutMs);
  socket.on('data', onData);
  socket.on('close', onClose);
  socket.on('timeout', onTimeout);
  socket.on('error', onError);
  socket.once('connect', () => {
    const auth = proxy.authorization !== undefined ? `proxy-authorization: ${proxy.authorization}\r\n` : '';
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n${auth}\r\n`);
  });
  return socket;
}

/** What to check for the usual refusals. */
function refusalHint(status: number, proxy: ProxyRoute): string {
  if (status === 407)
    return proxy.authorization === undefined
      ? `; the proxy wants credentials: give them in ${proxy.variable} as http://user:password@host:port`
      : `; check the user and password in ${proxy.variable}`;
  if (status === 403) return `; the proxy does not allow it: check its rules, or NO_PROXY`;
  return '';
}
