import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { NODE_FLAGS } from '../../src/daemon/node-flags.ts';
import { fileURLToPath } from 'node:url';

/** The built CLI, exactly what `npm start` / the bin link run. Tests run after `npm run build`. */
export const CLI = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url));

export interface CliRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Parsed pino lines from stdout. */
  logs: () => Record<string, unknown>[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitForLog: (pred: (line: Record<string, unknown>) => boolean, timeoutMs?: number) => Promise<Record<string, unknown>>;
}

function pick(from: NodeJS.ProcessEnv, name: string): Record<string, string> {
  const value = from[name];
  return value === undefined ? {} : { [name]: value };
}

/**
 * Spawns the real CLI with exactly the given environment (plus PATH/HOME), under the V8 flags of its #! line, as
 * the `workerless` command runs it (started without them it restarts itself under them: src/daemon/node-flags.ts,
 * proven by test/process/node-flags.test.ts; a signal during that restart would find no handler yet).
 * `launcher` runs it through a command that execs it (`['prlimit', '--nofile=300:300']`), so the child is still
 * the daemon itself.
 */
export function runCli(args: string[], env: Record<string, string | undefined> = {}, launcher: readonly string[] = []): CliRun {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first`);
  const [command, ...prefix] = [...launcher, process.execPath];
  const child = spawn(command, [...prefix, ...NODE_FLAGS, CLI, ...args], {
    // WORKERLESS_AWS_CLIENT passes through, so the whole suite can run once with --aws-client sdk.
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...pick(process.env, 'WORKERLESS_AWS_CLIENT'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  const logs = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const waitForLog = async (pred: (line: Record<string, unknown>) => boolean, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = logs().find(pred);
      if (hit) return hit;
      if (Date.now() > deadline || child.exitCode !== null) {
        throw new Error(`log line not seen within ${timeoutMs} ms; stdout:\n${out}\nstderr:\n${err}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return { child, stdout: () => out, stderr: () => err, logs, exited, waitForLog };
}
