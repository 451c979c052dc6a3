// Idle cost and pickup after idle (issue 24): what an idle daemon pays SQS, and how fast it still picks up.
//
//   npm run build && node bench/idle.ts [--sqs elasticmq|localstack|URL] [--idle-sec 60] [--messages 60]
//                                       [--gap-ms 1000] [--queues 5] [--concurrency 10] [--cli other/dist/src/main.js]
//
// The built CLI (and, with --cli, a peer build, run after it against fresh queues) runs with its default
// --poll-for (20 s long polls) against a real SQS implementation through a counting proxy
// (test/support/fault-proxy.ts, without faults), with the test Lambda endpoint running test/fixtures/functions/echo.mjs.
// 1. Idle: `--queues` empty queues for `--idle-sec` (from 2 s after start-up, so the first passes are left out):
//    ReceiveMessage calls started in that window, per queue, scaled to a minute. Lambda's SQS trigger makes 15 a
//    queue (5 pollers x 20 s long polls); issue 24's goal is at most 3.
// 2. Pickup after idle: `--messages` messages, one at a time and `--gap-ms` apart (the loops are idle again before
//    each), round-robin over the queues; send-to-invoke = the Lambda endpoint's arrival time of the Invoke minus
//    the time just before SendMessage, p50 and p99 per queue and overall (the trigger's published p99: 105 ms).
// measureIdle() is exported for bench/many-queues.ts, which runs it with hundreds to thousands of existing queues,
// a pickup queue chosen at random, /readyz timed and the daemon's peak RSS.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { awsTestEnv, createQueue, deleteQueue, localstackEndpoint, sqsClient } from '../test/support/aws.ts';
import { startFaultProxy, type CallRecord } from '../test/support/fault-proxy.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../test/support/lambda-endpoint/server.ts';
import { shebangNodeFlags, until } from './support/consumer-process.ts';

const here = (rel: string) => fileURLToPath(new URL(rel, import.meta.url));
const FUNCTION_NAME = 'idle-echo';
/** Start-up passes (a short receive per queue per loop) are not idle cost: the window starts this long after start-up. */
const SETTLE_MS = 2_000;

export interface IdleOptions {
  /** The built CLI to run (dist/src/main.js of some build). */
  readonly cli: string;
  /** The SQS implementation's endpoint. */
  readonly sqsEndpoint: string;
  /** A Lambda endpoint serving FUNCTION_NAME (see startIdleEndpoint). */
  readonly lambda: LambdaEndpoint;
  /** A count: fresh queues, created here and deleted after. A list: queues that exist already (kept). */
  readonly queues: number | readonly QueueRef[];
  readonly concurrency: number;
  readonly idleSec: number;
  readonly messages: number;
  readonly gapMs: number;
  /** Which queue each pickup message goes to: in turn (default) or one chosen at random. */
  readonly pick?: 'round-robin' | 'random';
  /** Serve --http-port and time start-up to the first /readyz 200. */
  readonly readyz?: boolean;
  /** A message not invoked this long after the last send counts as missed (default 60 s). */
  readonly pickupTimeoutMs?: number;
  /** Extra CLI arguments (e.g. --poll-for); none: the defaults. */
  readonly args?: readonly string[];
  /**
   * Where the SQS calls are counted: through a counting proxy (default), or by the endpoint itself
   * (bench/fast/fake-aws.ts's GET /_bench/calls), where a proxy would need two sockets per long poll: 10,000 polls
   * are more than the 20,000 file descriptors a process may open on the benchmark machine. `daemon`: the daemon's
   * own count (`workerless_aws_api_calls_total` on /metrics, read at both ends of the window; needs `readyz`), for a
   * real server past what a proxy can hold: by operation only, so no busiest queue (every queue gets the mean).
   */
  readonly countAt?: 'proxy' | 'endpoint' | 'daemon';
  /** How long after start-up the idle window opens (default SETTLE_MS): start-up passes are not idle cost. */
  readonly settleMs?: number;
  /** More of the daemon's environment (NODE_EXTRA_CA_CERTS for a test certificate). */
  readonly env?: Readonly<Record<string, string>>;
}

export interface QueueRef {
  readonly name: string;
  readonly url: string;
}

export interface IdleResult {
  /** ReceiveMessage calls per queue per minute while every queue was empty, in queue order. */
  readonly receivesPerQueueMinute: readonly number[];
  /** SQS calls of each kind in the idle window per queue per minute (the mean over the queues). */
  readonly callsPerQueueMinute: Readonly<Record<string, number>>;
  /** Invocations during the idle window: more than 0 means some queue was not empty. */
  readonly idleInvokes: number;
  /** Send-to-invoke per queue, ms. */
  readonly pickup: readonly { readonly p50: number; readonly p99: number; readonly n: number }[];
  readonly pickupAll: { readonly p50: number; readonly p99: number; readonly n: number };
  /** Pickup messages not invoked within pickupTimeoutMs of the last send. */
  readonly missed: number;
  /** From spawn to the first /readyz 200 (with `readyz`), ms. */
  readonly readyMs: number | undefined;
  /** From spawn to the "workerless started" line, ms. */
  readonly startedMs: number;
  /** The daemon's peak resident set (VmHWM) when it was stopped, MiB. */
  readonly peakRssMiB: number;
  /** The daemon's open sockets at the end of the idle window. */
  readonly idleSockets: number;
}

/** The Lambda endpoint the measurement invokes: the echo fixture, answering at once. */
export function startIdleEndpoint(): Promise<LambdaEndpoint> {
  return startLambdaEndpoint({ functions: { [FUNCTION_NAME]: { handler: here('../test/fixtures/functions/echo.mjs') } } });
}

/** Nearest-rank percentile of `values` (ms). */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

const summary = (values: readonly number[]) => ({ p50: percentile(values, 50), p99: percentile(values, 99), n: values.length });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Peak resident set size (VmHWM) of a live process, MiB. */
function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Open sockets of a live process (its file descriptors that are sockets). */
function socketCount(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n += 1;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

/** What the idle window counts of a call, from the counting proxy's records or the fake's own. */
type SqsCall = Pick<CallRecord, 'at' | 'operation' | 'queueUrl'> & { service: string };

/** The daemon's own count of its SQS calls so far, by operation (workerless_aws_api_calls_total on /metrics). */
export async function daemonSqsCalls(httpPort: number | undefined): Promise<Record<string, number>> {
  if (httpPort === undefined) throw new Error("countAt 'daemon' needs readyz (the daemon's --http-port)");
  const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  const byOperation: Record<string, number> = {};
  for (const m of text.matchAll(/^workerless_aws_api_calls_total\{([^}]*)\} (\S+)$/gm)) {
    if (!/service="sqs"/.test(m[1]!)) continue;
    const op = /operation="([^"]+)"/.exec(m[1]!)?.[1] ?? '?';
    byOperation[op] = (byOperation[op] ?? 0) + Number(m[2]);
  }
  return byOperation;
}

/** The SQS calls bench/fast/fake-aws.ts saw (GET /_bench/calls), as the counting proxy records them. */
async function endpointCalls(endpoint: string): Promise<SqsCall[]> {
  const answer = await fetch(new URL('/_bench/calls', endpoint));
  if (!answer.ok) throw new Error(`${endpoint}/_bench/calls answered ${answer.status}: only bench/fast/fake-aws.ts counts calls itself`);
  return (await answer.json()) as SqsCall[];
}

/** A port nothing listens on now. */
export async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** Runs one build through both phases (idle, then pickup); stops it with SIGTERM. */
export async function measureIdle(o: IdleOptions): Promise<IdleResult> {
  const sqs: SQSClient = sqsClient(o.sqsEndpoint);
  const fresh = typeof o.queues === 'number';
  const queues: readonly QueueRef[] =
    typeof o.queues === 'number'
      ? await Promise.all(Array.from({ length: o.queues }, (_, i) => createQueue(`wl-bench-idle-${i}`, {}, sqs)))
      : o.queues;
  const proxy = o.countAt === 'endpoint' || o.countAt === 'daemon' ? undefined : await startFaultProxy({ upstream: o.sqsEndpoint });
  // Past a few hundred names the list goes in a --config file: one argument may hold at most 128 KiB on Linux.
  const names = queues.map((q) => q.name);
  const tmp = mkdtempSync(join(tmpdir(), 'bench-idle-'));
  const config = join(tmp, 'workerless.json');
  writeFileSync(config, JSON.stringify({ queues: names }));
  const queueArgs = names.join(',').length > 4096 ? ['--config', config] : ['--queues', names.join(',')];
  const httpPort = o.readyz ? await freePort() : undefined;
  const args = [
    '--function',
    FUNCTION_NAME,
    ...queueArgs,
    '--concurrency',
    String(o.concurrency),
    ...(httpPort === undefined ? [] : ['--http-port', String(httpPort)]),
  ];
  const spawnedAt = Date.now();
  const child = spawn(
    process.execPath,
    [...shebangNodeFlags(o.cli), o.cli, '--metrics', 'off', '--log-level', 'info', ...args, ...(o.args ?? [])],
    {
      env: {
        PATH: process.env['PATH'],
        HOME: process.env['HOME'],
        ...awsTestEnv({ lambdaEndpoint: o.lambda.url }),
        AWS_ENDPOINT_URL_SQS: proxy?.url ?? o.sqsEndpoint,
        ...o.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let startedMs = NaN;
  let tail = '';
  const onOutput = (d: Buffer) => {
    const text = d.toString();
    // Keep the start of the output (for errors) without holding every log line of a long run.
    if (out.length < 100_000) out += text;
    if (Number.isNaN(startedMs) && (tail + text).includes('"workerless started"')) startedMs = Date.now() - spawnedAt;
    tail = text.slice(-64);
  };
  child.stdout.on('data', onOutput);
  child.stderr.on('data', onOutput);
  try {
    let readyMs: number | undefined;
    if (httpPort !== undefined) {
      await until(
        '/readyz to answer 200',
        async () => {
          if (child.exitCode !== null) return true;
          const ok = await fetch(`http://127.0.0.1:${httpPort}/readyz`).then(
            (r) => r.status === 200,
            () => false,
          );
          if (ok) readyMs = Date.now() - spawnedAt;
          return ok;
        },
        120_000,
        50,
      );
    }
    await until('the daemon to start', () => !Number.isNaN(startedMs) || child.exitCode !== null, 120_000);
    if (child.exitCode !== null) throw new Error(`${o.cli} exited ${child.exitCode}:\n${out}`);
    await sleep(o.settleMs ?? SETTLE_MS);
    const invokes0 = o.lambda.invocations.length;
    const daemonCalls0 = o.countAt === 'daemon' ? await daemonSqsCalls(httpPort) : undefined;
    const from = Date.now();
    await sleep(o.idleSec * 1000);
    const to = Date.now();
    const daemonCalls1 = o.countAt === 'daemon' ? await daemonSqsCalls(httpPort) : undefined;
    const idleInvokes = o.lambda.invocations.length - invokes0;
    const idleSockets = socketCount(child.pid!);
    const perMinute = (n: number) => (n * 60_000) / (to - from);
    const receivesByQueue = new Map<string, number>();
    const byOperation: Record<string, number> = {};
    const calls = proxy ? proxy.calls() : o.countAt === 'daemon' ? [] : await endpointCalls(o.sqsEndpoint);
    for (const [op, n] of Object.entries(daemonCalls1 ?? {})) byOperation[op] = n - (daemonCalls0?.[op] ?? 0);
    for (const c of calls) {
      if (c.service !== 'sqs' || c.at < from || c.at >= to) continue;
      byOperation[c.operation] = (byOperation[c.operation] ?? 0) + 1;
      if (c.operation === 'ReceiveMessage' && c.queueUrl !== undefined) {
        const name = c.queueUrl.slice(c.queueUrl.lastIndexOf('/') + 1);
        receivesByQueue.set(name, (receivesByQueue.get(name) ?? 0) + 1);
      }
    }
    const receivesPerQueueMinute = queues.map((q) =>
      daemonCalls1 ? perMinute(byOperation['ReceiveMessage'] ?? 0) / queues.length : perMinute(receivesByQueue.get(q.name) ?? 0),
    );
    const callsPerQueueMinute = Object.fromEntries(Object.entries(byOperation).map(([op, n]) => [op, perMinute(n) / queues.length]));

    const sentAt = new Map<string, { at: number; queue: number }>();
    for (let k = 0; k < o.messages; k++) {
      await sleep(o.gapMs);
      const queue = o.pick === 'random' ? Math.floor(Math.random() * queues.length) : k % queues.length;
      const at = Date.now();
      const sent = await sqs.send(new SendMessageCommand({ QueueUrl: queues[queue]!.url, MessageBody: `pickup-${k}` }));
      sentAt.set(sent.MessageId!, { at, queue });
    }
    const invokedAt = new Map<string, number>();
    let seen = 0;
    const pickupTimeoutMs = o.pickupTimeoutMs ?? 60_000;
    const deadline = Date.now() + pickupTimeoutMs;
    while (Date.now() < deadline) {
      for (; seen < o.lambda.invocations.length; seen++) {
        const inv = o.lambda.invocations[seen]!;
        for (const r of (inv.payload as { Records?: { messageId: string }[] }).Records ?? []) {
          if (sentAt.has(r.messageId) && !invokedAt.has(r.messageId)) invokedAt.set(r.messageId, inv.startedAt);
        }
      }
      if (invokedAt.size === sentAt.size) break;
      await sleep(100);
    }
    const byQueue = queues.map((): number[] => []);
    for (const [id, { at, queue }] of sentAt) {
      const invoked = invokedAt.get(id);
      if (invoked !== undefined) byQueue[queue]!.push(invoked - at);
    }
    return {
      receivesPerQueueMinute,
      callsPerQueueMinute,
      idleInvokes,
      pickup: byQueue.map(summary),
      pickupAll: summary(byQueue.flat()),
      missed: sentAt.size - invokedAt.size,
      readyMs,
      startedMs,
      peakRssMiB: peakRssMiB(child.pid!),
      idleSockets,
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('close', r)));
    await proxy?.close();
    rmSync(tmp, { recursive: true, force: true });
    if (fresh) await Promise.all(queues.map((q) => deleteQueue(q.url, sqs).catch(() => {})));
    sqs.destroy();
  }
}

/** The table rows for one build: idle receives per queue per minute, and pickup after idle. */
export function idleRows(label: string, r: IdleResult): string[] {
  const perQueue = r.receivesPerQueueMinute.map((n) => n.toFixed(1)).join(' / ');
  const max = Math.max(...r.receivesPerQueueMinute);
  const pickup = r.pickup.map((p) => `${Math.round(p.p50)}/${Math.round(p.p99)}`).join(' ');
  return [
    `| ${label} | ${max.toFixed(1)} (${perQueue}) | ${Math.round(r.pickupAll.p50)} | ${Math.round(r.pickupAll.p99)} | ${pickup} | ${r.pickupAll.n}${r.missed > 0 ? ` (${r.missed} not invoked)` : ''} |`,
  ];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sqs: { type: 'string', default: 'elasticmq' },
      'idle-sec': { type: 'string', default: '60' },
      messages: { type: 'string', default: '60' },
      'gap-ms': { type: 'string', default: '1000' },
      queues: { type: 'string', default: '5' },
      concurrency: { type: 'string', default: '10' },
      cli: { type: 'string' },
    },
  });
  const sqsEndpoint =
    values.sqs === 'elasticmq'
      ? (process.env['ELASTICMQ_ENDPOINT'] ?? 'http://127.0.0.1:9324')
      : values.sqs === 'localstack'
        ? localstackEndpoint()
        : values.sqs;
  const numbers = {
    idleSec: Number(values['idle-sec']),
    messages: Number(values.messages),
    gapMs: Number(values['gap-ms']),
    queues: Number(values.queues),
    concurrency: Number(values.concurrency),
  };
  for (const [name, n] of Object.entries(numbers)) {
    if (!(Number.isFinite(n) && n >= 0)) {
      process.stderr.write(`bench/idle.ts: --${name} must be a number, got ${JSON.stringify(n)}\n`);
      process.exit(2);
    }
  }
  const builds: [string, string][] = [['workerless (this build)', here('../dist/src/main.js')]];
  if (values.cli !== undefined) builds.push([`peer (${values.cli})`, values.cli]);
  const lambda = await startIdleEndpoint();
  try {
    console.log(
      `idle: ${numbers.queues} empty queues, --concurrency ${numbers.concurrency}, default --poll-for, ${numbers.idleSec} s against ${sqsEndpoint}; ` +
        `pickup: ${numbers.messages} messages ${numbers.gapMs} ms apart`,
    );
    const rows: string[] = [];
    for (const [label, cli] of builds) {
      const r = await measureIdle({ cli, sqsEndpoint, lambda, ...numbers });
      rows.push(...idleRows(label, r));
      lambda.reset();
    }
    console.log(
      '| build | ReceiveMessage per idle queue per minute: max (each queue) | pickup p50 ms | p99 ms | p50/p99 per queue | messages |',
    );
    console.log('|---|--:|--:|--:|---|--:|');
    for (const row of rows) console.log(row);
  } finally {
    await lambda.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
