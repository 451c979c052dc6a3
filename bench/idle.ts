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
// measureIdle() is exported so that bench/fast.ts can print these rows in its combined table.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { awsTestEnv, createQueue, deleteQueue, localstackEndpoint, sqsClient } from '../test/support/aws.ts';
import { startFaultProxy } from '../test/support/fault-proxy.ts';
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
  readonly queues: number;
  readonly concurrency: number;
  readonly idleSec: number;
  readonly messages: number;
  readonly gapMs: number;
  /** Extra CLI arguments (e.g. --poll-for); none: the defaults. */
  readonly args?: readonly string[];
}

export interface IdleResult {
  /** ReceiveMessage calls per queue per minute while every queue was empty, in queue order. */
  readonly receivesPerQueueMinute: readonly number[];
  /** Send-to-invoke per queue, ms. */
  readonly pickup: readonly { readonly p50: number; readonly p99: number; readonly n: number }[];
  readonly pickupAll: { readonly p50: number; readonly p99: number; readonly n: number };
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

/** Runs one build through both phases (idle, then pickup) against fresh queues; stops it with SIGTERM. */
export async function measureIdle(o: IdleOptions): Promise<IdleResult> {
  const sqs: SQSClient = sqsClient(o.sqsEndpoint);
  const queues = await Promise.all(Array.from({ length: o.queues }, (_, i) => createQueue(`wl-bench-idle-${i}`, {}, sqs)));
  const proxy = await startFaultProxy({ upstream: o.sqsEndpoint });
  const args = ['--function', FUNCTION_NAME, '--queues', queues.map((q) => q.name).join(','), '--concurrency', String(o.concurrency)];
  const child = spawn(
    process.execPath,
    [...shebangNodeFlags(o.cli), o.cli, '--metrics', 'off', '--log-level', 'info', ...args, ...(o.args ?? [])],
    {
      env: {
        PATH: process.env['PATH'],
        HOME: process.env['HOME'],
        ...awsTestEnv({ lambdaEndpoint: o.lambda.url }),
        AWS_ENDPOINT_URL_SQS: proxy.url,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await until('the daemon to start', () => out.includes('"workerless started"') || child.exitCode !== null, 30_000);
    if (child.exitCode !== null) throw new Error(`${o.cli} exited ${child.exitCode}:\n${out}`);
    await sleep(SETTLE_MS);
    const from = Date.now();
    await sleep(o.idleSec * 1000);
    const to = Date.now();
    const receives = proxy.calls('ReceiveMessage').filter((c) => c.at >= from && c.at < to);
    const receivesPerQueueMinute = queues.map(
      (q) => (receives.filter((c) => c.queueUrl?.endsWith(`/${q.name}`)).length * 60_000) / (to - from),
    );

    const sentAt = new Map<string, { at: number; queue: number }>();
    for (let k = 0; k < o.messages; k++) {
      await sleep(o.gapMs);
      const queue = k % o.queues;
      const at = Date.now();
      const sent = await sqs.send(new SendMessageCommand({ QueueUrl: queues[queue]!.url, MessageBody: `pickup-${k}` }));
      sentAt.set(sent.MessageId!, { at, queue });
    }
    const invokedAt = new Map<string, number>();
    await until(
      'every message to be invoked',
      () => {
        for (const inv of o.lambda.invocations) {
          for (const r of (inv.payload as { Records?: { messageId: string }[] }).Records ?? []) {
            if (sentAt.has(r.messageId) && !invokedAt.has(r.messageId)) invokedAt.set(r.messageId, inv.startedAt);
          }
        }
        return invokedAt.size === sentAt.size;
      },
      60_000,
      100,
    );
    const byQueue = queues.map((): number[] => []);
    for (const [id, { at, queue }] of sentAt) byQueue[queue]!.push(invokedAt.get(id)! - at);
    return { receivesPerQueueMinute, pickup: byQueue.map(summary), pickupAll: summary(byQueue.flat()) };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('close', r)));
    await proxy.close();
    await Promise.all(queues.map((q) => deleteQueue(q.url, sqs).catch(() => {})));
    sqs.destroy();
  }
}

/** The table rows for one build: idle receives per queue per minute, and pickup after idle. */
export function idleRows(label: string, r: IdleResult): string[] {
  const perQueue = r.receivesPerQueueMinute.map((n) => n.toFixed(1)).join(' / ');
  const max = Math.max(...r.receivesPerQueueMinute);
  const pickup = r.pickup.map((p) => `${Math.round(p.p50)}/${Math.round(p.p99)}`).join(' ');
  return [
    `| ${label} | ${max.toFixed(1)} (${perQueue}) | ${Math.round(r.pickupAll.p50)} | ${Math.round(r.pickupAll.p99)} | ${pickup} | ${r.pickupAll.n} |`,
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
