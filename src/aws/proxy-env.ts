/**
 * Which proxy a call to AWS goes through, read from the environment with the AWS CLI's rules. The AWS CLI (botocore)
 * takes its proxies from Python's urllib.request: botocore/endpoint.py EndpointCreator._get_proxies calls
 * botocore/utils.py get_environ_proxies(url), which is getproxies() unless should_bypass_proxies(url), which is
 * proxy_bypass(netloc); on Linux these are CPython's getproxies_environment() and proxy_bypass_environment(). Then
 * botocore/httpsession.py ProxyConfiguration picks the proxy by the URL's scheme (https_proxy for https, http_proxy
 * for http), adds http:// to a proxy written without a scheme, and sends Proxy-Authorization Basic when the proxy's
 * URL has both a user and a password. Pure: no I/O; test/unit/aws/proxy-env.test.ts holds it to those sources.
 */

/** A proxy an environment variable names. */
export interface ProxySetting {
  /** The variable it came from, as written: `https_proxy`, `HTTPS_PROXY`. */
  readonly variable: string;
  /** The proxy's URL, with any user and password. */
  readonly url: URL;
}

/** The proxy settings of the environment. */
export interface ProxyEnv {
  readonly https?: ProxySetting | undefined;
  readonly http?: ProxySetting | undefined;
  /** The hosts that skip the proxy (`no_proxy` / `NO_PROXY`), as written. */
  readonly noProxy?: { readonly variable: string; readonly value: string } | undefined;
}

/**
 * The `<scheme>_proxy` variables as CPython's getproxies_environment() reads them: a name ending in `_proxy` in any
 * case counts, and one ending in lower-case `_proxy` is read again afterwards, so `https_proxy` wins over
 * `HTTPS_PROXY`, and an empty lower-case one removes the other. Under CGI (REQUEST_METHOD set) an upper-case
 * HTTP_PROXY is ignored (CVE-2016-1000110: a client's `Proxy:` header becomes HTTP_PROXY there).
 * Keyed by the scheme in lower case (`https`, `http`, `no`).
 */
export function proxyVariables(env: NodeJS.ProcessEnv): Map<string, { variable: string; value: string }> {
  const proxies = new Map<string, { variable: string; value: string }>();
  const found: { name: string; value: string; scheme: string }[] = [];
  for (const name of Object.keys(env)) {
    if (name.length > 5 && name[name.length - 6] === '_' && name.slice(-5).toLowerCase() === 'proxy') {
      const value = env[name] ?? '';
      const scheme = name.slice(0, -6).toLowerCase();
      found.push({ name, value, scheme });
      if (value) proxies.set(scheme, { variable: name, value });
    }
  }
  if ('REQUEST_METHOD' in env) proxies.delete('http');
  for (const { name, value, scheme } of found) {
    if (!name.endsWith('_proxy')) continue;
    if (value) proxies.set(scheme, { variable: name, value });
    else proxies.delete(scheme);
  }
  return proxies;
}

/**
 * The proxies of `env`, and a problem for each that cannot be used (exit 2, before any call): a URL that does not
 * parse, or a proxy that is not http:// (botocore can speak TLS to an https:// proxy; workerless tunnels TLS
 * through a plain http:// one only).
 */
export function readProxyEnv(env: NodeJS.ProcessEnv): { proxies: ProxyEnv; problems: string[] } {
  const vars = proxyVariables(env);
  const problems: string[] = [];
  const setting = (scheme: 'https' | 'http'): ProxySetting | undefined => {
    const found = vars.get(scheme);
    if (found === undefined) return undefined;
    let url: URL;
    try {
      url = new URL(withScheme(found.value));
    } catch {
      problems.push(`${found.variable} is not a proxy URL such as http://proxy.example:3128`);
      return undefined;
    }
    if (url.protocol !== 'http:') {
      problems.push(`${found.variable} names a ${url.protocol}// proxy: only an http:// proxy is supported (${proxyName(url)})`);
      return undefined;
    }
    return { variable: found.variable, url };
  };
  const no = vars.get('no');
  return { proxies: { https: setting('https'), http: setting('http'), ...(no ? { noProxy: no } : {}) }, problems };
}

/**
 * botocore's ProxyConfiguration._fix_proxy_url: a proxy without a scheme is an http:// one. A URL with another scheme
 * (socks5://) is kept as it is, to be refused by name rather than read as a host called "socks5".
 */
function withScheme(value: string): string {
  if (value.startsWith('http:') || value.startsWith('https:') || /^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return value;
  if (value.startsWith('//')) return `http:${value}`;
  return `http://${value}`;
}

/** The proxy as lines and logs name it: its scheme, host and port, never its user and password. */
export function proxyName(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

/**
 * CPython's proxy_bypass_environment(netloc) with `noProxy`: `*` alone bypasses every host; otherwise each
 * comma-separated entry (spaces trimmed, leading dots ignored, any case) matches the host, or the host and port
 * (`localhost:4566`), exactly or as a suffix at a dot (`amazonaws.com` matches `sqs.us-east-1.amazonaws.com`, not
 * `notamazonaws.com`). No CIDR ranges or wildcards inside an entry: an IP address is matched as text, so `10.0.0.1`
 * matches itself only (botocore's own note: "requests allowed for ip/cidr entries in no_proxy env that we don't
 * support"). `netloc`: the host, with `:port` when it is not the scheme's default, an IPv6 address in brackets.
 */
export function bypassesProxy(noProxy: string | undefined, netloc: string): boolean {
  if (noProxy === undefined) return false;
  if (noProxy === '*') return true;
  const host = netloc.toLowerCase();
  const port = /^(.*):([0-9]*)$/s.exec(host);
  const hostOnly = port && port[2] !== '' ? port[1]! : host;
  for (const raw of noProxy.split(',')) {
    if (raw.trim() === '') continue;
    const entry = raw.trim().replace(/^\.+/, '').toLowerCase();
    if (hostOnly === entry || host === entry) return true;
    if (hostOnly.endsWith(`.${entry}`) || host.endsWith(`.${entry}`)) return true;
  }
  return false;
}
