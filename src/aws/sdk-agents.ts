import type http from 'node:http';
import https from 'node:https';
import { isIPv6 } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { markConnectionFacts } from '../core/errors.ts';
import { nodeHttp } from '../util/node-http.ts';
import type { AwsNetwork, ProxyRoute } from './network.ts';
import { openTunnel } from './proxy-tunnel.ts';

/**
 * The agents of the SDK's clients (`--aws-client sdk`, Temporal spillover's Lambda client, the fleet's DynamoDB
 * client, the credential providers' STS and SSO clients): NodeHttpHandler takes them as they are. The SDK for
 * JavaScript reads neither HTTPS_PROXY nor AWS_CA_BUNDLE itself; these agents make its connections as the lean
 * transport makes its own (src/aws/http1-pool.ts), from the same AwsNetwork (src/aws/network.ts): one rule for the
 * proxy and NO_PROXY, CONNECT tunnels for https (src/aws/proxy-tunnel.ts) and absolute-form requests to the proxy
 * for http, as botocore sends them, the CA bundle in the one shared TLS context, and a failed connection's error
 * marked with the proxy and the trust (markConnectionFacts) for its one line.
 *
 * Keep-alive as before: up to `maxSockets` per host, and every one of them kept for reuse once its call is answered,
 * not only Node's default of 256 free ones. At high concurrency thousands of invocations end together and start
 * again at once; a socket closed after its answer costs the next call a connect, a close and a TLS handshake. Idle
 * sockets are closed by the server's keep-alive timeout.
 */
export function sdkAgents(maxSockets: number, network: AwsNetwork): { httpAgent: http.Agent; httpsAgent: https.Agent } {
  return { httpAgent: new AwsHttpAgent(maxSockets, network), httpsAgent: new AwsHttpsAgent(maxSockets, network) };
}

const keepAlive = (maxSockets: number) => ({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });

type ConnectCallback = (err: Error | null, stream: Duplex) => void;

/** https: a TLS socket straight to the endpoint, or inside a CONNECT tunnel; the shared context either way. */
class AwsHttpsAgent extends https.Agent {
  readonly #network: AwsNetwork;

  constructor(maxSockets: number, network: AwsNetwork) {
    // node:https's Agent passes its options to every tls.connect, the context with them.
    super({ ...keepAlive(maxSockets), secureContext: network.secureContext() });
    this.#network = network;
  }

  override createConnection(options: http.ClientRequestArgs, callback?: ConnectCallback): Duplex | null | undefined {
    const host = options.host ?? 'localhost';
    const port = Number(options.port ?? 443);
    const proxy = this.#network.proxyFor(true, host, port);
    if (proxy === undefined) return this.#watch(super.createConnection(options), undefined);
    openTunnel(proxy, host, port, (err, socket) => {
      if (err !== undefined || socket === undefined) {
        callback?.(markConnectionFacts(err ?? new Error('no tunnel'), this.#network.facts(proxy)), undefined as unknown as Duplex);
        return;
      }
      // Over the tunnel: node:https's own createConnection, so its TLS session cache serves these sockets too.
      const options_ = { ...options, socket } as http.ClientRequestArgs;
      callback?.(null, this.#watch(super.createConnection(options_), proxy) as Duplex);
    });
    return undefined;
  }

  /** Marks the error of a socket that fails before its handshake ends (an untrusted, mismatched or expired certificate). */
  #watch(socket: Duplex | null | undefined, proxy: ProxyRoute | undefined): Duplex | null | undefined {
    if (!(socket instanceof tls.TLSSocket)) return socket;
    const onError = (err: Error): void => void markConnectionFacts(err, this.#network.facts(proxy));
    // First among its listeners, so the facts are on the error before node:http hands it to the request.
    socket.prependOnceListener('error', onError);
    socket.once('secureConnect', () => socket.removeListener('error', onError));
    return socket;
  }
}

/** The proxy an http request was sent to, on the options node:http's Agent passes from addRequest to createConnection. */
const PROXY = Symbol('workerless.proxy');

/** node:http's Agent.addRequest(req, options), which this agent wraps. */
type AddRequest = (this: http.Agent, req: http.ClientRequest, options: http.RequestOptions) => void;

/** http: straight to the endpoint, or to the proxy with the request in absolute form and Proxy-Authorization. */
class AwsHttpAgent extends nodeHttp.Agent {
  readonly #network: AwsNetwork;

  constructor(maxSockets: number, network: AwsNetwork) {
    super(keepAlive(maxSockets));
    this.#network = network;
  }

  /**
   * node:http calls this with each request before its head is written (ClientRequest's constructor): a request for a
   * proxied host gets the absolute form and the proxy's credentials here, and its socket (pooled per proxy) goes to
   * the proxy. Not in Node's documentation, but node:http's own agent interface since its first versions.
   */
  addRequest(req: http.ClientRequest, options: http.RequestOptions): void {
    const host = options.host ?? 'localhost';
    const port = Number(options.port ?? 80);
    const proxy = this.#network.proxyFor(false, host, port);
    const base = (nodeHttp.Agent.prototype as unknown as { addRequest: AddRequest }).addRequest;
    if (proxy === undefined) return base.call(this, req, options);
    req.path = `http://${isIPv6(host) ? `[${host}]` : host}${port === 80 ? '' : `:${port}`}${req.path}`;
    if (proxy.authorization !== undefined) req.setHeader('proxy-authorization', proxy.authorization);
    base.call(this, req, { ...options, host: proxy.host, port: proxy.port, [PROXY]: proxy } as http.RequestOptions);
  }

  override createConnection(options: http.ClientRequestArgs, callback?: ConnectCallback): Duplex | null | undefined {
    const socket = super.createConnection(options, callback);
    const proxy = (options as { [PROXY]?: ProxyRoute })[PROXY];
    if (proxy !== undefined && socket) {
      const onError = (err: Error): void => void markConnectionFacts(err, this.#network.facts(proxy));
      socket.prependOnceListener('error', onError);
      socket.once('connect', () => socket.removeListener('error', onError));
    }
    return socket;
  }
}
