// A real Temporal server for one test file: `temporal server start-dev` from the CLI that
// scripts/temporal.sh builds, on free loopback ports, in memory, stopped (and awaited) after the tests.
// startTemporalFixture() adds what the integration tests share: the example worker's workflow bundle and
// the test Lambda endpoint serving the example handler as 'temporal-worker'; startWorkerless() runs the CLI.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
import { connect as netConnect, type AddressInfo, type Server, type Socket } from 'node:net';
import * as tls from 'node:tls';
import { promisify } from 'node:util';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { freePort } from './http.ts';
import { startLambdaEndpoint, type FunctionSpec, type LambdaEndpoint } from './lambda-endpoint/server.ts';

export interface TemporalDevServer {
  /** host:port of the frontend gRPC service */
  readonly address: string;
  readonly namespace: string;
  /** The server's own stderr so far, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

export interface TemporalDevServerOptions {
  /** Extra `--dynamic-config-value KEY=JSON` pairs. */
  dynamicConfig?: Readonly<Record<string, unknown>>;
  /** How long to wait for the frontend to answer; default 60 s (start-up on 2 loaded cores can take 10+ s). */
  readyTimeoutMs?: number;
}

/** Where the Temporal CLI is: $WORKERLESS_TEMPORAL_CLI, else $WORKERLESS_CACHE_DIR/bin/temporal. */
export function temporalCliPath(): string {
  const explicit = process.env['WORKERLESS_TEMPORAL_CLI'];
  if (explicit !== undefined && explicit !== '') return explicit;
  const cache = process.env['WORKERLESS_CACHE_DIR'] ?? join(homedir(), '.cache', 'workerless');
  return join(cache, 'bin', 'temporal');
}

export async function startTemporalDevServer(options: TemporalDevServerOptions = {}): Promise<TemporalDevServer> {
  const cli = temporalCliPath();
  if (!existsSync(cli)) {
    throw new Error(`Temporal CLI not found at ${cli}: run "scripts/temporal.sh ensure" first (or set WORKERLESS_TEMPORAL_CLI)`);
  }
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const args = ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'error'];
  for (const [key, value] of Object.entries(options.dynamicConfig ?? {})) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }
  const child = spawn(cli, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-20_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const server: TemporalDevServer = {
    address,
    namespace: 'default',
    output: () => stderr,
    stop: () => stopChild(child, exited),
  };
  try {
    await waitUntilReady(address, child, options.readyTimeoutMs ?? 60_000, () => stderr);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

async function waitUntilReady(address: string, child: ChildProcess, timeoutMs: number, output: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`temporal server exited with ${child.exitCode}: ${output()}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        // The namespace is registered a moment after the frontend listens; wait for it too.
        await connection.workflowService.describeNamespace({ namespace: 'default' });
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await sleep(250);
    }
  }
  throw new Error(`temporal server at ${address} not ready after ${timeoutMs} ms: ${String(lastError)}\n${output()}`);
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The example Temporal worker for Lambda: its handler and its workflows. */
const EXAMPLE = join(ROOT, 'examples/temporal-lambda-worker');

export interface TemporalFixtureOptions {
  /** The task queues the example worker polls (its TEMPORAL_TASK_QUEUE). */
  taskQueues: readonly string[];
  /** The prefix of the temporary directory that holds the workflow bundle. */
  tmpPrefix: string;
  /** The 'temporal-worker' function's timeout; default 15 s. */
  workerTimeoutSec?: number;
  /** More `--dynamic-config-value` pairs for the dev server (matching.useNewMatcher for priority, ...). */
  dynamicConfig?: Readonly<Record<string, unknown>>;
  /** More functions for the Lambda endpoint, given the 'temporal-worker' spec to derive variants from. */
  extraFunctions?: (worker: Readonly<FunctionSpec> & { env: Record<string, string> }) => Record<string, FunctionSpec>;
}

export interface TemporalFixture {
  readonly server: TemporalDevServer;
  /** The test Lambda endpoint, serving the example handler as 'temporal-worker' (and the extra functions). */
  readonly endpoint: LambdaEndpoint;
  /** A client connection to the server. */
  readonly connection: Connection;
  /** A workflow client on that connection, in the server's namespace. */
  readonly client: Client;
  /** The example workflows, bundled, for the handler and for any in-test Worker. */
  readonly bundlePath: string;
  /** Stops all of it (and awaits it) and removes the temporary directory. */
  stop(): Promise<void>;
}

/**
 * A Temporal dev server (DescribeTaskQueue cached for 500 ms rather than 5 s, which keeps the tests quick),
 * the example workflows bundled to a file, the test Lambda endpoint running the example handler, and a client
 * connection. On a failure part-way, whatever had started is stopped before the error is thrown.
 */
export async function startTemporalFixture(options: TemporalFixtureOptions): Promise<TemporalFixture> {
  const workDir = await mkdtemp(join(tmpdir(), options.tmpPrefix));
  const bundlePath = join(workDir, 'workflow-bundle.js');
  let server: TemporalDevServer | undefined;
  let endpoint: LambdaEndpoint | undefined;
  let connection: Connection | undefined;
  const stop = async (): Promise<void> => {
    await connection?.close();
    await endpoint?.stop();
    await server?.stop();
    await rm(workDir, { recursive: true, force: true });
  };
  try {
    const [devServer, bundle] = await Promise.allSettled([
      startTemporalDevServer({ dynamicConfig: { 'matching.TaskQueueInfoByBuildIdTTL': '500ms', ...options.dynamicConfig } }),
      bundleWorkflowCode({ workflowsPath: join(EXAMPLE, 'workflows.ts'), logger: quietBundlerLogger }),
    ]);
    if (devServer.status === 'rejected') throw devServer.reason;
    const started = devServer.value;
    server = started;
    if (bundle.status === 'rejected') throw bundle.reason;
    await writeFile(bundlePath, bundle.value.code);
    const worker = {
      handler: join(EXAMPLE, 'handler.ts'),
      timeoutSec: options.workerTimeoutSec ?? 15,
      memoryMb: 512,
      env: {
        TEMPORAL_ADDRESS: started.address,
        TEMPORAL_NAMESPACE: started.namespace,
        TEMPORAL_TASK_QUEUE: options.taskQueues.join(','),
        TEMPORAL_WORKFLOW_BUNDLE: bundlePath,
        // Short deadlines for a quick test; the same rules as production: buffer > stop timeout + hooks.
        WORKER_SHUTDOWN_BUFFER_MS: '3000',
        WORKER_STOP_TIMEOUT_MS: '2000',
      },
    };
    endpoint = await startLambdaEndpoint({
      functions: { 'temporal-worker': worker, ...options.extraFunctions?.(worker) },
      handlerOutput: process.env['WORKERLESS_TEST_VERBOSE'] ? 'stderr' : 'ignore',
    });
    connection = await Connection.connect({ address: started.address });
    const client = new Client({ connection, namespace: started.namespace });
    return { server: started, endpoint, connection, client, bundlePath, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export interface OrderWorkflowsOptions {
  taskQueue: string;
  /** Task Queue Priority: the workflows' priority key (1 the highest; its tasks and activities inherit it). */
  priorityKey?: number;
  count: number;
  /** How long each order's activity works. */
  workMs: number;
  /** Workflow ids are `<idPrefix>-<i>-<now>`; default the task queue. */
  idPrefix?: string;
  /** The workflows' execution timeout; default 2 minutes. */
  executionTimeoutMs?: number;
}

/** Starts `count` of the example's orderWorkflow (orders `order-0`, `order-1`...) and returns their handles. */
export async function startOrderWorkflows(client: Client, options: OrderWorkflowsOptions): Promise<WorkflowHandle[]> {
  const { taskQueue, count, workMs, idPrefix = taskQueue, executionTimeoutMs = 120_000, priorityKey } = options;
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      client.workflow.start('orderWorkflow', {
        taskQueue,
        workflowId: `${idPrefix}-${i}-${Date.now()}`,
        args: [{ orderId: `order-${i}`, workMs }],
        workflowExecutionTimeout: executionTimeoutMs,
        ...(priorityKey !== undefined ? { priority: { priorityKey } } : {}),
      }),
    ),
  );
}

/**
 * The CLI's flags for spillover only (no SQS queues) on one task queue of the fixture: its 'temporal-worker'
 * through its Lambda endpoint, quick polls and cool-off, `tasksPerWorker` (default 5), no metrics. The Temporal address, maximum and worker
 * lifetime are left to the caller (as flags or WORKERLESS_TEMPORAL_* env).
 */
export function spilloverOnlyArgs(fixture: Pick<TemporalFixture, 'endpoint'>, taskQueue: string, tasksPerWorker = 5): string[] {
  return [
    '--temporal-task-queues',
    taskQueue,
    '--temporal-function',
    'temporal-worker',
    '--temporal-poll-interval',
    '500ms',
    '--temporal-cool-off',
    '1s',
    '--temporal-tasks-per-worker',
    String(tasksPerWorker),
    '--region',
    'us-east-1',
    '--endpoint-url',
    fixture.endpoint.url,
    '--metrics',
    'off',
  ];
}

/**
 * Starts the CLI from source with this process's environment plus `env`; returns its JSON log lines so far,
 * its output for failure messages, and a stop() that sends SIGTERM and awaits the exit.
 */
export function startWorkerless(args: readonly string[], env: Readonly<Record<string, string>>) {
  const child = spawn(process.execPath, [join(ROOT, 'src/main.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  return {
    logs: () =>
      stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    output: () => `${stderr}\n${stdout.slice(-4000)}`,
    async stop(): Promise<{ code: number | null; stopMs: number }> {
      const at = Date.now();
      child.kill('SIGTERM');
      const [code] = await exited;
      return { code, stopMs: Date.now() - at };
    },
  };
}

/** Webpack's own lines are noise in a test run; its errors are not. */
const quietBundlerLogger = {
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error(message: string, meta?: Record<string, unknown>) {
    console.error(message, meta);
  },
  log() {},
};

/** PEM files made with openssl for one test: a CA, a server certificate for 127.0.0.1/localhost, a client certificate. */
export interface TestPki {
  readonly dir: string;
  readonly caPath: string;
  readonly serverCertPath: string;
  readonly serverKeyPath: string;
  readonly clientCertPath: string;
  readonly clientKeyPath: string;
  /** A second CA that signed nothing here: trusting it must fail the handshake. */
  readonly otherCaPath: string;
}

/** Makes the CA and certificates with the openssl CLI (EC P-256, valid one day). */
export async function makeTestPki(dir: string): Promise<TestPki> {
  const run = promisify(execFile);
  const path = (name: string) => join(dir, name);
  const ssl = (...args: string[]) => run('openssl', args, { cwd: dir });
  const key = (name: string) => ssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path(name));
  const ca = async (name: string, cn: string) => {
    await key(`${name}.key`);
    await ssl(
      'req',
      '-x509',
      '-new',
      '-key',
      path(`${name}.key`),
      '-sha256',
      '-days',
      '1',
      '-subj',
      `/CN=${cn}`,
      '-out',
      path(`${name}.pem`),
    );
  };
  const leaf = async (name: string, cn: string, ext: string) => {
    await key(`${name}.key`);
    await ssl('req', '-new', '-key', path(`${name}.key`), '-subj', `/CN=${cn}`, '-out', path(`${name}.csr`));
    await writeFile(path(`${name}.ext`), ext);
    await ssl(
      'x509',
      '-req',
      '-in',
      path(`${name}.csr`),
      '-CA',
      path('ca.pem'),
      '-CAkey',
      path('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-sha256',
      '-extfile',
      path(`${name}.ext`),
      '-out',
      path(`${name}.pem`),
    );
  };
  await ca('ca', 'workerless test CA');
  await ca('other-ca', 'someone else');
  await leaf('server', 'localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  await leaf('client', 'workerless', 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    caPath: path('ca.pem'),
    serverCertPath: path('server.pem'),
    serverKeyPath: path('server.key'),
    clientCertPath: path('client.pem'),
    clientKeyPath: path('client.key'),
    otherCaPath: path('other-ca.pem'),
  };
}

export interface TestProxy {
  /** host:port to give the client. */
  readonly address: string;
  /** TLS handshakes completed / refused (mTLS without a trusted client certificate, an untrusted server...). */
  readonly handshakes: { ok: number; failed: number };
  /** For the API-key proxy: the authorization and temporal-namespace headers of every request, in order. */
  readonly requests: Array<{ path: string; authorization: string | undefined; namespace: string | undefined }>;
  stop(): Promise<void>;
}

/**
 * A TLS-terminating TCP proxy in front of the plain-text dev server (`temporal server start-dev` has no TLS
 * flags): it presents the test server certificate, offers ALPN h2 as gRPC needs, and with `clientCa` requires
 * a client certificate signed by that CA (mTLS). Bytes pass through unchanged.
 */
export async function startTlsProxy(options: {
  upstream: string;
  certPath: string;
  keyPath: string;
  clientCaPath?: string;
}): Promise<TestProxy> {
  const [upHost, upPort] = splitAddress(options.upstream);
  const handshakes = { ok: 0, failed: 0 };
  const sockets = new Set<Socket>();
  const server = tls.createServer(
    {
      cert: await readFile(options.certPath),
      key: await readFile(options.keyPath),
      ALPNProtocols: ['h2'],
      ...(options.clientCaPath !== undefined
        ? { ca: await readFile(options.clientCaPath), requestCert: true, rejectUnauthorized: true }
        : {}),
    },
    (socket) => {
      handshakes.ok++;
      const upstream = netConnect(upPort, upHost);
      sockets.add(socket).add(upstream);
      socket.pipe(upstream).pipe(socket);
      const close = () => {
        socket.destroy();
        upstream.destroy();
        sockets.delete(socket);
        sockets.delete(upstream);
      };
      socket.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    },
  );
  server.on('tlsClientError', () => handshakes.failed++);
  return listenProxy(server, handshakes, [], () => {
    for (const s of sockets) s.destroy();
  });
}

/**
 * A gRPC-aware (HTTP/2) TLS proxy that requires `authorization: Bearer <apiKey>` on every call, as Temporal
 * Cloud does for API keys. A call without it, or with another key, gets UNAUTHENTICATED (grpc-status 16) as a
 * trailers-only response; others are forwarded to the plain-text dev server with trailers passed back.
 */
export async function startApiKeyProxy(options: {
  upstream: string;
  certPath: string;
  keyPath: string;
  apiKey: string;
}): Promise<TestProxy> {
  const handshakes = { ok: 0, failed: 0 };
  const requests: TestProxy['requests'] = [];
  const upstream = http2.connect(`http://${options.upstream}`);
  upstream.on('error', () => undefined);
  const server = http2.createSecureServer({
    cert: await readFile(options.certPath),
    key: await readFile(options.keyPath),
    allowHTTP1: false,
  });
  server.on('secureConnection', () => handshakes.ok++);
  server.on('tlsClientError', () => handshakes.failed++);
  server.on('stream', (stream, headers) => {
    const header = (name: string) => {
      const value = headers[name];
      return Array.isArray(value) ? value.join(',') : value;
    };
    const authorization = header('authorization');
    requests.push({ path: header(':path') ?? '', authorization, namespace: header('temporal-namespace') });
    stream.on('error', () => undefined);
    if (authorization !== `Bearer ${options.apiKey}`) {
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'API key required' },
        { endStream: true },
      );
      return;
    }
    const forwarded: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined || name === ':authority' || name === ':scheme' || name === 'authorization') continue;
      forwarded[name] = value;
    }
    const call = upstream.request(forwarded);
    call.on('error', () => stream.destroy());
    stream.pipe(call);
    let trailers: Record<string, string | string[]> = {};
    call.on('trailers', (t) => {
      trailers = stripPseudo(t as Parameters<typeof stripPseudo>[0]);
    });
    call.on('response', (responseHeaders, flags) => {
      const endStream = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      stream.respond(
        { ...stripPseudo(responseHeaders), ':status': responseHeaders[':status'] ?? 200 },
        endStream ? { endStream: true } : { waitForTrailers: true },
      );
      if (!endStream) {
        stream.on('wantTrailers', () => stream.sendTrailers(trailers));
        call.pipe(stream);
      }
    });
  });
  return listenProxy(server, handshakes, requests, () => upstream.destroy());
}

function stripPseudo(headers: Record<string, unknown>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(':') || value === undefined) continue;
    out[name] = Array.isArray(value) ? value.map(String) : typeof value === 'string' ? value : JSON.stringify(value);
  }
  return out;
}

function splitAddress(address: string): [string, number] {
  const at = address.lastIndexOf(':');
  return [address.slice(0, at), Number(address.slice(at + 1))];
}

async function listenProxy(
  server: Server,
  handshakes: TestProxy['handshakes'],
  requests: TestProxy['requests'],
  closeAll: () => void,
): Promise<TestProxy> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    address: `127.0.0.1:${port}`,
    handshakes,
    requests,
    stop: async () => {
      closeAll();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      await closed;
    },
  };
}
