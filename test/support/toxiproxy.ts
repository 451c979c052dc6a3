// Toxiproxy for fault tests: one toxiproxy-server process per test (tests run in parallel, so nothing is
// shared), and a small typed client over its HTTP API. Toxiproxy works on TCP streams, so its faults hit every
// call to an upstream at once (a dead NAT, a slow link, a refused port); for a fault that must pick one AWS
// operation, use the fault proxy (fault-proxy.ts) instead.
// The binary comes from $WORKERLESS_TOXIPROXY (scripts/test.sh sets it), else `scripts/toxiproxy.sh ensure`.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from './http.ts';

const ENSURE_SCRIPT = fileURLToPath(new URL('../../scripts/toxiproxy.sh', import.meta.url));

/** Which way of the stream a toxic acts on: downstream = upstream's answers to the client (Toxiproxy's default). */
export type ToxicStream = 'upstream' | 'downstream';

/** The toxics the fault tests use, with the attributes Toxiproxy expects for each. */
export type Toxic =
  /** Holds the data; closes the connection after `timeout` ms, or never when 0 (a request that hangs). */
  | { type: 'timeout'; attributes: { timeout: number } }
  /** Delays every chunk by latency ± jitter ms. */
  | { type: 'latency'; attributes: { latency: number; jitter?: number } }
  /** Resets the connection (TCP RST) after `timeout` ms, at once when 0. */
  | { type: 'reset_peer'; attributes: { timeout: number } };

export interface ToxicOptions {
  /** Unique per proxy; default `<type>_<stream>`, as Toxiproxy names it. */
  name?: string;
  /** Default 'downstream'. */
  stream?: ToxicStream;
  /** Share of connections the toxic applies to, 0-1; default 1. */
  toxicity?: number;
}

export interface ToxiProxy {
  readonly name: string;
  /** host:port the proxy listens on (the port Toxiproxy picked when asked for 0). */
  readonly listen: string;
  /** http://host:port, for an SDK client's `endpoint` or AWS_ENDPOINT_URL_*. */
  readonly url: string;
  readonly upstream: string;
  /** Adds a toxic; returns its name, for removeToxic. */
  addToxic(toxic: Toxic, options?: ToxicOptions): Promise<string>;
  /** New connections go through again at once; connections the toxic already holds are not released. */
  removeToxic(name: string): Promise<void>;
  /** Disabled: the proxy closes its listener and every connection, so connecting is refused. */
  setEnabled(enabled: boolean): Promise<void>;
  /** Removes the proxy and closes its connections. */
  remove(): Promise<void>;
}

export interface Toxiproxy {
  /** http://127.0.0.1:<port> of the HTTP API. */
  readonly apiUrl: string;
  /** Proxies `upstream` (host:port); listens on `listen`, default 127.0.0.1:0 (a free port). */
  createProxy(options: { upstream: string; name?: string; listen?: string }): Promise<ToxiProxy>;
  /** The server's own output so far, for failure messages. */
  output(): string;
  /** Kills the process (every proxy and connection with it) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Where the toxiproxy-server binary is: $WORKERLESS_TOXIPROXY, else built (once per machine) by the script. */
export async function toxiproxyServerPath(): Promise<string> {
  const explicit = process.env['WORKERLESS_TOXIPROXY'];
  if (explicit !== undefined && explicit !== '') return explicit;
  // The first build takes about 30 s; a built one is found at once.
  const { stdout } = await promisify(execFile)(ENSURE_SCRIPT, ['ensure'], { timeout: 300_000 });
  return stdout.trim();
}

/** Starts a toxiproxy-server on a free loopback port and waits until its API answers. */
export async function startToxiproxy(options: { readyTimeoutMs?: number } = {}): Promise<Toxiproxy> {
  const binary = await toxiproxyServerPath();
  if (!existsSync(binary)) throw new Error(`toxiproxy-server not found at ${binary}: run "scripts/toxiproxy.sh ensure"`);
  // freePort() can race with another test taking the port; a second try with a new port covers it.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const port = await freePort();
    const child = spawn(binary, ['-host', '127.0.0.1', '-port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-20_000);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const apiUrl = `http://127.0.0.1:${port}`;
    try {
      await waitUntilReady(apiUrl, child, options.readyTimeoutMs ?? 10_000, () => output);
    } catch (err) {
      lastError = err;
      await stopChild(child, exited);
      continue;
    }
    return {
      apiUrl,
      createProxy: (proxyOptions) => createProxy(apiUrl, proxyOptions),
      output: () => output,
      stop: () => stopChild(child, exited),
    };
  }
  throw lastError;
}

async function waitUntilReady(apiUrl: string, child: ChildProcess, timeoutMs: number, output: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`toxiproxy-server exited with ${child.exitCode}: ${output()}`);
    try {
      const response = await fetch(`${apiUrl}/version`, { signal: AbortSignal.timeout(1_000) });
      await response.body?.cancel();
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await sleep(50);
  }
  throw new Error(`toxiproxy-server at ${apiUrl} not ready after ${timeoutMs} ms: ${output()}`);
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await exited;
}

/** Calls the API; throws with Toxiproxy's own error text on a non-2xx answer. */
async function api(apiUrl: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    // Toxiproxy refuses API calls whose User-Agent looks like a browser; fetch's does not, but say who we are.
    headers: { 'content-type': 'application/json', 'user-agent': 'workerless-tests' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`toxiproxy ${method} ${path}: HTTP ${response.status} ${text}`);
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

async function createProxy(apiUrl: string, options: { upstream: string; name?: string; listen?: string }): Promise<ToxiProxy> {
  const name = options.name ?? `proxy-${Math.random().toString(16).slice(2, 10)}`;
  const created = (await api(apiUrl, 'POST', '/proxies', {
    name,
    listen: options.listen ?? '127.0.0.1:0',
    upstream: options.upstream,
    enabled: true,
  })) as { listen?: unknown };
  // Toxiproxy reports the address it really bound, which is how a port of 0 becomes usable.
  if (typeof created.listen !== 'string' || created.listen.endsWith(':0')) {
    throw new Error(`toxiproxy did not report the port it listens on: ${JSON.stringify(created)}`);
  }
  const listen = created.listen;
  const base = `/proxies/${encodeURIComponent(name)}`;
  return {
    name,
    listen,
    url: `http://${listen}`,
    upstream: options.upstream,
    async addToxic(toxic, toxicOptions = {}) {
      const stream = toxicOptions.stream ?? 'downstream';
      const toxicName = toxicOptions.name ?? `${toxic.type}_${stream}`;
      await api(apiUrl, 'POST', `${base}/toxics`, {
        name: toxicName,
        type: toxic.type,
        stream,
        toxicity: toxicOptions.toxicity ?? 1,
        attributes: toxic.attributes,
      });
      return toxicName;
    },
    async removeToxic(toxicName) {
      await api(apiUrl, 'DELETE', `${base}/toxics/${encodeURIComponent(toxicName)}`);
    },
    async setEnabled(enabled) {
      await api(apiUrl, 'POST', base, { enabled });
    },
    async remove() {
      await api(apiUrl, 'DELETE', base);
    },
  };
}
