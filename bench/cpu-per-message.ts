// CPU time the consumer process spends per message: workerless against a hand-rolled peer
// (bench/peers/naive-consumer.ts), in the same run, on this machine. See bench/README.md.
//
//   npm run build && node bench/cpu-per-message.ts [--messages N] [--concurrency C] [--runs R] [--verbose] [--cpu-prof DIR]
//
// For each run: a fresh LocalStack queue pre-loaded with N messages, the consumer started as a child process
// against it and the project's test Lambda endpoint (handler test/fixtures/functions/record.mjs), measured
// from the end of its start-up until the queue is empty and N invocations succeeded. Consumers alternate
// (workerless, naive, workerless, naive, ...) so drift on the machine hits both alike.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { SQSClient } from '@aws-sdk/client-sqs';
import {
  awsTestEnv,
  countMessages,
  createQueue,
  deleteQueue,
  sendMessages,
  sqsClient,
  TEST_CREDENTIALS,
  TEST_REGION,
} from '../test/support/aws.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../test/support/lambda-endpoint/server.ts';
import { buildBenchJs, live, shebangNodeFlags, spawnConsumer, until, type ConsumerProcess } from './support/consumer-process.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist/src/main.js');
const PEER = join(ROOT, 'dist/bench/peers/naive-consumer.js');
const CALL_COUNTER = join(ROOT, 'dist/bench/support/sdk-call-counter.js');
const HANDLER = join(ROOT, 'test/fixtures/functions/record.mjs');
const LOCALSTACK_SH = join(ROOT, 'localstack/localstack.sh');
const FUNCTION_NAME = 'bench-record';

type Kind = 'workerless' | 'naive';

interface RunResult {
  kind: Kind;
  wallMs: number;
  cpuMs: number;
  /** The part of cpuMs spent in the kernel (stime). */
  sysMs: number;
  /** SDK HTTP requests by operation during the window. */
  calls: Record<string, number>;
  /** Invocations that had started before the window opened (their CPU is partly outside it). */
  invokedBeforeWindow: number;
  invocations: number;
}

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '10' },
    runs: { type: 'string', default: '3' },
    verbose: { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
  },
});
const N = Number(values.messages);
const C = Number(values.concurrency);
const RUNS = Number(values.runs);
for (const [name, v] of [
  ['--messages', N],
  ['--concurrency', C],
  ['--runs', RUNS],
] as const) {
  if (!Number.isInteger(v) || v < 1) {
    process.stderr.write(
      `${name} must be a positive integer\nusage: node bench/cpu-per-message.ts [--messages N] [--concurrency C] [--runs R] [--verbose] [--cpu-prof DIR]\n`,
    );
    process.exit(2);
  }
}
if (!existsSync(CLI)) {
  process.stderr.write(`${CLI} is missing: run "npm run build" first\n`);
  process.exit(2);
}
buildBenchJs();
const CLI_NODE_FLAGS = shebangNodeFlags(CLI);

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU time of a process (all its threads) in ms, user (utime) and system (stime), from /proc/<pid>/stat. */
function cpuTimes(pid: number): { user: number; sys: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may contain spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, i.e. 12 and 13 after "pid (comm)".
  return { user: (Number(fields[11]) * 1000) / CLK_TCK, sys: (Number(fields[12]) * 1000) / CLK_TCK };
}

const benchStart = performance.now();
/** --verbose: phase timings on stderr. */
function phase(text: string): void {
  if (values.verbose) process.stderr.write(`  [${((performance.now() - benchStart) / 1000).toFixed(2)} s] ${text}\n`);
}

process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});
/** Set when this run started LocalStack, which it then stops again, also when interrupted. */
let startedLocalStack = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    process.stderr.write(`bench: ${signal}, stopping\n`);
    for (const child of live) child.kill('SIGKILL');
    if (startedLocalStack) spawnSync('bash', [LOCALSTACK_SH, 'stop'], { stdio: ['ignore', 'inherit', 'inherit'] });
    process.exit(130);
  });
}

interface Consumer extends ConsumerProcess<{ calls: Record<string, number> }> {
  /** Snapshot of the SDK call counts (asks the child with SIGUSR2). */
  calls: () => Promise<Record<string, number>>;
}

function startConsumer(kind: Kind, queueUrl: string, lambdaUrl: string, callsFile: string): Consumer {
  const script =
    kind === 'workerless'
      ? [
          CLI,
          '--function',
          FUNCTION_NAME,
          '--queues',
          queueUrl,
          '--batch-size',
          '1',
          '--concurrency',
          String(C),
          '--metrics',
          'off',
          '--poll-for',
          '1',
          '--log-level',
          'info',
        ]
      : [PEER, '--queue-url', queueUrl, '--function', FUNCTION_NAME, '--concurrency', String(C)];
  // --cpu-prof DIR: V8 CPU profiles of the consumers (start-up included; profiling inflates the figures).
  const profile =
    values['cpu-prof'] === undefined
      ? []
      : ['--cpu-prof', '--cpu-prof-dir', values['cpu-prof'], '--cpu-prof-name', `${kind}-${process.hrtime.bigint()}.cpuprofile`];
  const consumer = spawnConsumer<{ calls: Record<string, number> }>({
    name: kind,
    // workerless runs with the V8 flags its installed command (the script's #! line) gives Node.
    args: [...profile, ...(kind === 'workerless' ? CLI_NODE_FLAGS : []), '--import', CALL_COUNTER, ...script],
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...awsTestEnv({ lambdaEndpoint: lambdaUrl }) },
    callsFile,
    readyMsg: kind === 'workerless' ? 'workerless started' : 'ready',
    snapshotTimeoutMs: 5_000,
  });
  return { ...consumer, calls: async () => (await consumer.snapshot()).calls };
}

async function stopConsumer(consumer: Consumer): Promise<number | null> {
  if (consumer.child.exitCode !== null) return consumer.child.exitCode;
  consumer.child.kill('SIGTERM');
  const timer = setTimeout(() => consumer.child.kill('SIGKILL'), 15_000);
  const code = await consumer.exited;
  clearTimeout(timer);
  return code;
}

async function preload(sqs: SQSClient, url: string): Promise<void> {
  const bodies = Array.from({ length: N }, (_, i) => JSON.stringify({ bench: 'cpu-per-message', n: i }));
  const lanes = 4;
  const per = Math.ceil(N / lanes / 10) * 10;
  await Promise.all(Array.from({ length: lanes }, (_, i) => sendMessages(url, bodies.slice(i * per, (i + 1) * per), sqs)));
}

async function runOnce(
  kind: Kind,
  sqs: SQSClient,
  endpoint: LambdaEndpoint,
  progress: { successes: number },
  workDir: string,
  label: string,
): Promise<RunResult> {
  const queue = await createQueue(`bench-${kind}`, { VisibilityTimeout: '120' }, sqs);
  try {
    phase(`${label}: queue created`);
    await preload(sqs, queue.url);
    await until('the pre-loaded messages', async () => (await countMessages(queue.url, sqs)) === N, 30_000, 100);
    phase(`${label}: ${N} messages loaded`);
    endpoint.reset();
    progress.successes = 0;
    const callsFile = join(workDir, `${label}.calls.json`);
    const consumer = startConsumer(kind, queue.url, endpoint.url, callsFile);
    let stopped = false;
    try {
      let readyTimer: NodeJS.Timeout | undefined;
      await Promise.race([
        consumer.ready,
        new Promise((_, reject) => {
          readyTimer = setTimeout(() => reject(new Error(`${kind} not ready after 60 s:\n${consumer.output()}`)), 60_000);
        }),
      ]).finally(() => clearTimeout(readyTimer));
      // The window opens here: start-up (module loading, the first SDK calls) is behind us.
      const t0 = performance.now();
      const cpu0 = cpuTimes(consumer.pid);
      const invokedBeforeWindow = endpoint.invocations.length;
      const calls0 = await consumer.calls();
      phase(`${label}: consumer ready, window open`);

      await until(`${N} successful invocations`, () => progress.successes >= N, 300_000, 10);
      phase(`${label}: ${N} invocations succeeded`);
      await until('an empty queue', async () => (await countMessages(queue.url, sqs)) === 0, 60_000, 20);
      const cpu1 = cpuTimes(consumer.pid);
      const t1 = performance.now();
      const calls1 = await consumer.calls();

      phase(`${label}: queue empty, window closed`);
      const code = await stopConsumer(consumer);
      stopped = true;
      phase(`${label}: consumer stopped`);
      if (code !== 0) throw new Error(`${kind} exited with code ${code}:\n${consumer.output()}`);
      const calls: Record<string, number> = {};
      for (const [op, n] of Object.entries(calls1)) {
        const d = n - (calls0[op] ?? 0);
        if (d > 0) calls[op] = d;
      }
      return {
        kind,
        wallMs: t1 - t0,
        cpuMs: cpu1.user + cpu1.sys - (cpu0.user + cpu0.sys),
        sysMs: cpu1.sys - cpu0.sys,
        calls,
        invokedBeforeWindow,
        invocations: endpoint.invocations.length,
      };
    } finally {
      if (!stopped) await stopConsumer(consumer);
    }
  } finally {
    await deleteQueue(queue.url, sqs).catch(() => {});
  }
}

// ---------- figures ----------

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function spread(xs: readonly number[], digits: number): string {
  const f = (x: number) => x.toFixed(digits);
  return xs.length === 1 ? f(xs[0]!) : `${f(median(xs))} [${f(Math.min(...xs))}-${f(Math.max(...xs))}]`;
}

const total = (calls: Record<string, number>) => Object.values(calls).reduce((a, b) => a + b, 0);
const receives = (calls: Record<string, number>) => calls['ReceiveMessage'] ?? 0;
const invokes = (calls: Record<string, number>) => calls['Invoke'] ?? 0;
const deletes = (calls: Record<string, number>) => (calls['DeleteMessage'] ?? 0) + (calls['DeleteMessageBatch'] ?? 0);

function table(results: readonly RunResult[]): string {
  const header = ['consumer', 'runs', 'wall s', 'msg/s', 'CPU ms/msg', 'SDK calls/msg', 'recv/inv/del per msg', 'CPU ms/call'];
  const rows: string[][] = [header];
  for (const kind of ['workerless', 'naive'] as const) {
    const rs = results.filter((r) => r.kind === kind);
    if (rs.length === 0) continue;
    rows.push([
      kind,
      String(rs.length),
      spread(
        rs.map((r) => r.wallMs / 1000),
        2,
      ),
      spread(
        rs.map((r) => N / (r.wallMs / 1000)),
        0,
      ),
      spread(
        rs.map((r) => r.cpuMs / N),
        3,
      ),
      spread(
        rs.map((r) => total(r.calls) / N),
        2,
      ),
      [receives, invokes, deletes].map((f) => median(rs.map((r) => f(r.calls) / N)).toFixed(2)).join(' / '),
      spread(
        rs.map((r) => r.cpuMs / Math.max(1, total(r.calls))),
        3,
      ),
    ]);
  }
  const widths = header.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(rows[0]!), rule, ...rows.slice(1).map(line)].join('\n');
}

// ---------- main ----------

/** Starts LocalStack when `localstack.sh status` says it is not running. */
function ensureLocalStack(): void {
  if (spawnSync('bash', [LOCALSTACK_SH, 'status'], { stdio: 'ignore' }).status === 0) return;
  process.stdout.write('LocalStack is not running: starting it (localstack/localstack.sh start)\n');
  startedLocalStack = true;
  const r = spawnSync('bash', [LOCALSTACK_SH, 'start'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error('localstack/localstack.sh start failed');
}

async function main(): Promise<void> {
  ensureLocalStack();
  const workDir = mkdtempSync(join(tmpdir(), 'workerless-bench-'));
  const progress = { successes: 0 };
  const endpoint = await startLambdaEndpoint({
    host: '127.0.0.1',
    functions: { [FUNCTION_NAME]: { handler: HANDLER, timeoutSec: 30 } },
    handlerOutput: 'ignore',
    onInvocation: (record) => {
      if (record.status === 'success') progress.successes += 1;
    },
  });
  const sqs = sqsClient();
  try {
    // Start C execution environments now, so no run pays the endpoint's cold starts.
    const lambda = new LambdaClient({ endpoint: endpoint.url, region: TEST_REGION, credentials: TEST_CREDENTIALS });
    await Promise.all(
      Array.from({ length: C }, () => lambda.send(new InvokeCommand({ FunctionName: FUNCTION_NAME, Payload: Buffer.from('{}') }))),
    );
    lambda.destroy();

    const cpuModel = cpus()[0]?.model.trim() ?? 'unknown CPU';
    process.stdout.write(
      `cpu-per-message: ${N} messages, concurrency ${C}, batch size 1, ${RUNS} runs per consumer; ` +
        `${cpus().length} cores (${cpuModel}), Node ${process.version}, load average ${loadavg()
          .map((x) => x.toFixed(2))
          .join(' ')}\n`,
    );
    const results: RunResult[] = [];
    for (let i = 0; i < RUNS; i++) {
      for (const kind of ['workerless', 'naive'] as const) {
        const r = await runOnce(kind, sqs, endpoint, progress, workDir, `${kind}-${i + 1}`);
        results.push(r);
        const callText = Object.entries(r.calls)
          .map(([op, n]) => `${op} ${n}`)
          .join(', ');
        process.stdout.write(
          `  run ${i + 1} ${kind.padEnd(10)} ${(r.wallMs / 1000).toFixed(2)} s, ${(N / (r.wallMs / 1000)).toFixed(0)} msg/s, ` +
            `CPU ${r.cpuMs.toFixed(0)} ms (${((100 * r.sysMs) / r.cpuMs).toFixed(0)}% sys) = ${(r.cpuMs / N).toFixed(3)} ms/msg; calls: ${callText}; ` +
            `invocations ${r.invocations} (${r.invokedBeforeWindow} before the window)\n`,
        );
      }
    }
    process.stdout.write(`\n${table(results)}\n\n`);
    const cpuPer = (kind: Kind) => median(results.filter((r) => r.kind === kind).map((r) => r.cpuMs / N));
    process.stdout.write(
      `workerless / naive CPU per message (medians): ${(cpuPer('workerless') / cpuPer('naive')).toFixed(2)}\n` +
        `Figures are medians [min-max] over the runs; CPU is utime+stime of the consumer process from the end of its ` +
        `start-up until the queue is empty (clock tick ${(1000 / CLK_TCK).toFixed(0)} ms).\n`,
    );
  } finally {
    sqs.destroy();
    await endpoint.stop();
    rmSync(workDir, { recursive: true, force: true });
    if (startedLocalStack) {
      process.stdout.write('stopping the LocalStack this benchmark started\n');
      spawnSync('bash', [LOCALSTACK_SH, 'stop'], { stdio: ['ignore', 'inherit', 'inherit'] });
    }
  }
}

await main();
