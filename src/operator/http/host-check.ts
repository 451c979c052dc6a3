import { isIP } from 'node:net';

/**
 * Which `Host` headers the HTTP server answers: the defence against DNS rebinding. A page on another site can
 * point its own name at 127.0.0.1 (or at a pod's address) once it has loaded, and then read our endpoints as
 * its own origin; the browser still sends that name as `Host`. So a request is answered only when its `Host`
 * names this server:
 * - an IP address, v4 or [v6]: no name was resolved, so nothing was rebound. This is what the kubelet's probes
 *   (`Host: <pod IP>:<port>`), Prometheus's pod and endpoint scrapes, ECS and load-balancer health checks send;
 * - `localhost` and `*.localhost` (RFC 6761: browsers resolve them to loopback themselves, never through DNS);
 * - the name the server was told to bind to (--http-host), if it is a name;
 * - the names of --http-allowed-hosts: `name` exactly, `.example.com` for example.com and every name under it,
 *   `*` for any name (turns the check off).
 * A missing `Host` is refused: HTTP/1.1 requires it (RFC 9112, section 3.2), and every browser and probe sends it.
 * The port is not compared: a rebinding attack uses the server's own port, so it would prove nothing.
 */
export interface HostPolicy {
  /** --http-host, the address or name the server listens on. */
  readonly bindHost: string;
  /** --http-allowed-hosts, as given (entries lower-cased here). */
  readonly allowedHosts: readonly string[];
}

/** Compiles the policy once: a predicate over the raw `Host` header. */
export function hostChecker(policy: HostPolicy): (host: string | undefined) => boolean {
  const names = new Set<string>();
  const suffixes: string[] = [];
  let any = false;
  for (const entry of [...policy.allowedHosts, ...(isIP(policy.bindHost) === 0 ? [policy.bindHost] : [])]) {
    const name = normalise(entry);
    if (name === '*') any = true;
    else if (name.startsWith('.')) {
      suffixes.push(name);
      names.add(name.slice(1));
    } else if (name !== '') names.add(name);
  }
  return (header) => {
    const name = hostName(header);
    if (name === undefined) return false;
    if (any || isIP(name) !== 0) return true;
    if (name === 'localhost' || name.endsWith('.localhost')) return true;
    return names.has(name) || suffixes.some((s) => name.endsWith(s));
  };
}

/** The name or address of a `Host` header without its port and brackets; undefined when there is none. */
function hostName(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const host = header.trim();
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    // An IPv6 literal is bracketed in a Host header (RFC 3986, section 3.2.2); only an address may be.
    const address = end > 0 ? host.slice(1, end) : '';
    return isIP(address) === 6 ? address.toLowerCase() : undefined;
  }
  const colon = host.indexOf(':');
  const name = normalise(colon === -1 ? host : host.slice(0, colon));
  return name === '' ? undefined : name;
}

/** Host names compare case-insensitively, and `example.com.` is `example.com`. */
function normalise(name: string): string {
  const lower = name.trim().toLowerCase();
  return lower.length > 1 && lower.endsWith('.') ? lower.slice(0, -1) : lower;
}
