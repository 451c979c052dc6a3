// What both benchmarks do with a consumer under test: run it as a child process, know when it is ready, and read
// the counts its `--import` preload (sdk-call-counter.ts) writes on SIGUSR2.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * Compiles the peers and the call-counting preload to JavaScript under dist/bench (tsconfig.bench.json): a
 * consumer that loaded a .ts file would carry Node's type stripper, about 17 MiB of resident memory, in the
 * figures measured of it.
 */
export function buildBenchJs(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const tsc = spawnSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}tsconfig.bench.json`], {
    encoding: 'utf8',
  });
  if (tsc.status !== 0) throw new Error(`building the benchmark's peers failed:\n${tsc.stdout}${tsc.stderr}`);
}

/**
 * Builds the Go peer (bench/peers/go-loop, aws-sdk-go-v2) into dist/bench/go-loop with the machine's Go toolchain
 * (GOTOOLCHAIN=local: never a downloaded one; its modules come from the Go module proxy, pinned by go.sum).
 */
export function buildGoLoop(): string {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const out = `${root}dist/bench/go-loop`;
  const go = spawnSync('go', ['build', '-trimpath', '-o', out, '.'], {
    cwd: `${root}bench/peers/go-loop`,
    env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' },
    encoding: 'utf8',
  });
  if (go.error) throw new Error(`building the Go peer needs the go command (${go.error.message}); leave it out with --consumers`);
  if (go.status !== 0) throw new Error(`building the Go peer failed:\n${go.stdout}${go.stderr}`);
  return out;
}

/**
 * The Node options on a script's `#!` line (`#!/usr/bin/env -S node --flag ...`): what the installed command
 * runs it with, for a benchmark that starts it as `node <options> <script>`.
 */
export function shebangNodeFlags(script: string): string[] {
  const first = readFileSync(script, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!.*\bnode((?:\s+-\S+)*)\s*$/.exec(first);
  if (!m) throw new Error(`${script} does not start with a #! line that runs node: ${first}`);
  return m[1]!.split(/\s+/).filter(Boolean);
}

/** Consumers still running; the benchmarks kill them when they exit or are interrupted. */
export const live = new Set<ChildProcess>();

export interface ConsumerProcess<Snapshot> {
  child: ChildProcess;
  pid: number;
  /** Resolves at the consumer's ready line (its start-up is over); rejects if it exits first. */
  ready: Promise<void>;
  exited: Promise<number | null>;
  /** Its stdout and stderr so far (the first MB of them). */
  output: () => string;
  /** Asks the preload for a fresh snapshot (SIGUSR2) and waits until it is written. */
  snapshot: () => Promise<Snapshot>;
}

export interface ConsumerSpec {
  /** For errors. */
  readonly name: string;
  /** The program to run; Node itself (process.execPath) when not given. */
  readonly command?: string;
  /** Its arguments (Node's: options, then the script and its arguments). */
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** Where the preload writes its snapshots (BENCH_CALLS_FILE). */
  readonly callsFile: string;
  /** The `msg` of the JSON line that says the consumer is ready. */
  readonly readyMsg: string;
  /** How long a snapshot may take (a consumer starting 10,000 loops can keep its event loop busy a while). */
  readonly snapshotTimeoutMs: number;
}

export function spawnConsumer<Snapshot>(spec: ConsumerSpec): ConsumerProcess<Snapshot> {
  const child = spawn(spec.command ?? process.execPath, [...spec.args], {
    env: { ...spec.env, BENCH_CALLS_FILE: spec.callsFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let out = '';
  let pending = '';
  let markReady: () => void = () => {};
  let failReady: (err: Error) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    if (out.length < 1_000_000) out += chunk;
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.startsWith('{') && (JSON.parse(line) as { msg?: unknown }).msg === spec.readyMsg) markReady();
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    if (out.length < 1_000_000) out += chunk;
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      live.delete(child);
      failReady(new Error(`${spec.name} exited (code ${code}) before it was ready:\n${out}`));
      resolve(code);
    }),
  );
  let seq = 0;
  const snapshot = async (): Promise<Snapshot> => {
    seq += 1;
    child.kill('SIGUSR2');
    let snap: (Snapshot & { seq: number }) | undefined;
    await until(
      'the call counts',
      () => {
        try {
          snap = JSON.parse(readFileSync(spec.callsFile, 'utf8')) as Snapshot & { seq: number };
        } catch {
          return false; // not written yet, or caught half-written
        }
        return snap.seq === seq;
      },
      spec.snapshotTimeoutMs,
      5,
    );
    return snap!;
  };
  if (child.pid === undefined) throw new Error(`could not start ${spec.name}`);
  return { child, pid: child.pid, ready, exited, output: () => out, snapshot };
}
