// A real Temporal server for one test file: `temporal server start-dev` from the CLI that
// scripts/temporal.sh builds, on free loopback ports, in memory, stopped (and awaited) after the tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';

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
