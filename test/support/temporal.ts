// A real Temporal server for one test file: `temporal server start-dev` from the CLI that
// scripts/temporal.sh builds, on free loopback ports, in memory, stopped (and awaited) after the tests.
// startTemporalFixture() adds what the integration tests share: the example worker's workflow bundle and
// the test Lambda endpoint serving the example handler as 'temporal-worker'; startWorkerless() runs the CLI.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
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

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
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
  /** More functions for the Lambda endpoint, given the 'temporal-worker' spec to derive variants from. */
  extraFunctions?: (worker: Readonly<FunctionSpec> & { env: Record<string, string> }) => Record<string, FunctionSpec>;
}

export interface TemporalFixture {
  readonly server: TemporalDevServer;
  /** The test Lambda endpoint, serving the example handler as 'temporal-worker' (and the extra functions). */
  readonly endpoint: LambdaEndpoint;
  /** A client connection to the server. */
  readonly connection: Connection;
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
      startTemporalDevServer({ dynamicConfig: { 'matching.TaskQueueInfoByBuildIdTTL': '500ms' } }),
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
    return { server: started, endpoint, connection, bundlePath, stop };
  } catch (err) {
    await stop();
    throw err;
  }
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
    logs: () => stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>),
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
