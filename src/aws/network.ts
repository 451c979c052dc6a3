import { isIPv6 } from 'node:net';
import tls from 'node:tls';
import type { ConnectionFacts } from '../core/errors.ts';
import { loadCaBundle, type CaBundle } from './ca-bundle.ts';
import { bypassesProxy, proxyName, readProxyEnv, type ProxyEnv, type ProxySetting } from './proxy-env.ts';

/**
 * How a connection to AWS is made, the same for both clients (the lean transport, src/aws/http1-pool.ts, and the
 * SDK clients' agents, src/aws/sdk-agents.ts): straight to the endpoint or through the proxy the environment names
 * (src/aws/proxy-env.ts: HTTPS_PROXY, HTTP_PROXY, NO_PROXY with the AWS CLI's rules), and checked against which CAs
 * (the default ones, or the CA bundle: src/aws/ca-bundle.ts). Resolved once at start-up (resolveAwsNetwork); the
 * certificate and the host name are always checked.
 */

/** The proxy a connection goes through. */
export interface ProxyRoute {
  /** The proxy's host name or address (an IPv6 address without brackets) and port. */
  readonly host: string;
  readonly port: number;
  /** `Basic ...` for Proxy-Authorization, when the proxy's URL has a user and a password (as botocore sends it). */
  readonly authorization: string | undefined;
  /** `http://proxy.example:3128 (HTTPS_PROXY)`: never the user or password. */
  readonly name: string;
  /** The variable that named it, for the hint of a refusal. */
  readonly variable: string;
}

export class AwsNetwork {
  readonly #https: ProxyRoute | undefined;
  readonly #http: ProxyRoute | undefined;
  readonly #noProxy: ProxyEnv['noProxy'];
  readonly #ca: CaBundle | undefined;
  /** One TLS context for every connection to AWS, made on first use (see secureContext). */
  #context: tls.SecureContext | undefined;

  constructor(proxies: ProxyEnv = {}, ca?: CaBundle) {
    this.#https = proxies.https && route(proxies.https);
    this.#http = proxies.http && route(proxies.http);
    this.#noProxy = proxies.noProxy;
    this.#ca = ca;
  }

  /**
   * The proxy for a connection to `hostname`:`port` (https or http), or undefined to connect straight to it:
   * HTTPS_PROXY for https, HTTP_PROXY for http, unless NO_PROXY names the host (bypassesProxy). `hostname` may be an
   * IPv6 address with or without brackets; `port` undefined or the scheme's default is left out of the match, as a
   * URL leaves it out.
   */
  proxyFor(https: boolean, hostname: string, port: number | undefined): ProxyRoute | undefined {
    const proxy = https ? this.#https : this.#http;
    if (proxy === undefined) return undefined;
    const host = isIPv6(hostname) ? `[${hostname}]` : hostname;
    const netloc = port === undefined || port === (https ? 443 : 80) ? host : `${host}:${port}`;
    return bypassesProxy(this.#noProxy?.value, netloc) ? undefined : proxy;
  }

  /**
   * The TLS context every connection shares (the lean transport's and the SDK agents'): the default CAs, or the CA
   * bundle's certificates alone. One context: tls.connect without one builds a context per socket (OpenSSL's
   * SSL_CTX and its CA store, about 25 KiB a connection, issue 41), and with a bundle would parse it each time. The
   * certificate and the server's name are still checked on each connection.
   */
  secureContext(): tls.SecureContext {
    return (this.#context ??= tls.createSecureContext(this.#ca !== undefined ? { ca: this.#ca.pem } : {}));
  }

  /** What a certificate is checked against, for the line of a certificate fault. */
  get trust(): string {
    return this.#ca === undefined ? 'the default CAs' : `the CA bundle ${this.#ca.path} (${this.#ca.from})`;
  }

  /** What a failed connection's error carries (markConnectionFacts): the proxy it went through and the trust. */
  facts(proxy: ProxyRoute | undefined): ConnectionFacts {
    return { proxy: proxy?.name, trust: this.trust };
  }

  /** For the start-up log: the proxies, NO_PROXY and the CA bundle, when set (never a proxy's credentials). */
  describe(): Record<string, string> {
    return {
      ...(this.#https ? { httpsProxy: this.#https.name } : {}),
      ...(this.#http ? { httpProxy: this.#http.name } : {}),
      ...(this.#noProxy && (this.#https || this.#http) ? { noProxy: `${this.#noProxy.value} (${this.#noProxy.variable})` } : {}),
      ...(this.#ca ? { caBundle: `${this.#ca.path} (${this.#ca.from})` } : {}),
    };
  }
}

function route(setting: ProxySetting): ProxyRoute {
  const { url, variable } = setting;
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? 80 : Number(url.port),
    authorization: user !== '' && password !== '' ? `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` : undefined,
    name: `${proxyName(url)} (${variable})`,
    variable,
  };
}

/** Straight to every endpoint, against the default CAs: what a test or a tool without settings gets. */
export function directNetwork(): AwsNetwork {
  return new AwsNetwork();
}

/**
 * The network settings of `env` (process.env; the shared config files through the SDK's loader), or the problems
 * that make them unusable (a proxy URL that does not parse or is not http://, an empty, unreadable or certificate-less
 * CA bundle), each naming its setting: a configuration error, before any call.
 */
export async function resolveAwsNetwork(env: NodeJS.ProcessEnv = process.env): Promise<AwsNetwork | { problems: string[] }> {
  const { proxies, problems } = readProxyEnv(env);
  const ca = await loadCaBundle(env).catch((err: unknown) => ({
    problem: `the shared config file cannot be read for ca_bundle: ${err instanceof Error ? err.message : String(err)}`,
  }));
  if (ca !== undefined && 'problem' in ca) problems.push(ca.problem);
  if (problems.length > 0) return { problems };
  return new AwsNetwork(proxies, ca as CaBundle | undefined);
}
