// Soak (issue 20; not in CI): the built CLI for a long run at a moderate rate, with --adaptive-concurrency on,
// per-queue limits and 1,000 loops, against an in-process fake of SQS and Lambda that keeps real visibility
// timeouts, throttles beyond a reserved concurrency and answers a small share of invocations with a 5xx (an
// unknown outcome: workerless holds those batches for a visibility timeout). It polls /healthz every second and
// samples the consumer's RSS; it prints every liveness failure (all of them are false: nothing here is stuck),
// the RSS samples and their slope, and the overlapping invocations of one message id the fake Lambda counted.
//
//   npm run build && node bench/soak.ts [--minutes 30] [--rate 200] [--concurrency 1000] [--budget 40]
//                                       [--invoke-ms 150|100-200] [--unknown-share 0.002] [--adaptive on|off]
//                                       [--settle-minutes N] [--way command|node|npm-start] [--cli dist/src/main.js]
//
// Two queues share the rate: soak-a with --queue-max-concurrency soak-a=20, soak-b without a limit. The RSS
// slope is a least-squares fit over the samples after the first fifth of the run (or --settle-minutes: start-up
// and warm-up), and again over the second half. --way is how the CLI is started, as a user would: `command` runs
// the file itself (its #! line), `node` runs `node <cli>`, `npm-start` runs `npm start --` in the project; run
// one soak per way side by side to compare them.
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    rate: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '1000' },
    budget: { type: 'string', default: '40' },
    'invoke-ms': { type: 'string', default: '150' },
    'unknown-share': { type: 'string', default: '0.002' },
    'visibility-sec': { type: 'string', default: '30' },
    adaptive: { type: 'string', default: 'on' },
    'settle-minutes': { type: 'string' },
    way: { type: 'string', default: 'command' },
    cli: { type: 'string' },
  },
});
const MINUTES = Number(values.minutes);
const RATE = Number(values.rate);
const CONCURRENCY = Number(values.concurrency);
const BUDGET = Number(values.budget);
// One figure (x 0.5-1.5 at random) or a range, `100-200`.
const [INVOKE_MIN_MS, INVOKE_MAX_MS] = values['invoke-ms'].includes('-')
  ? values['invoke-ms'].split('-').map(Number)
  : [Number(values['invoke-ms']) * 0.5, Number(values['invoke-ms']) * 1.5];
const UNKNOWN_SHARE = Number(values['unknown-share']);
const VISIBILITY_SEC = Number(values['visibility-sec']);
const SETTLE_MINUTES = values['settle-minutes'] === undefined ? MINUTES / 5 : Number(values['settle-minutes']);
const WAY = values.way;
const numbers = [MINUTES, RATE, CONCURRENCY, BUDGET, INVOKE_MIN_MS, INVOKE_MAX_MS, UNKNOWN_SHARE, VISIBILITY_SEC, SETTLE_MINUTES];
if (
  !numbers.every((n) => n !== undefined && Number.isFinite(n) && n >= 0) ||
  !['on', 'off'].includes(values.adaptive) ||
  !['command', 'node', 'npm-start'].includes(WAY)
) {
  process.stderr.write('usage: node bench/soak.ts [--minutes 30] [--rate 200] [--concurrency 1000] [--budget 40] ...\n');
  process.exit(2);
}
const CLI = values.cli ?? fileURLToPath(new URL('../dist/src/main.js', import.meta.url));
const QUEUES = ['soak-a', 'soak-b'] as const;
const MAX_CONCURRENCY_A = 20;
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

// ---- The fake: SQS (AWS JSON 1.0) with real visibility timeouts, Lambda Invoke with a reserved concurrency.

interface SoakMessage {
  readonly id: string;
  readonly body: string;
  readonly md5: string;
  readonly sentAt: number;
  receiveCount: number;
  receipt: string;
  /** performance.now() when it becomes visible again, while in flight. */
  visibleAt: number;
}

class SoakQueue {
  visible: SoakMessage[] = [];
  readonly inFlight = new Map<string, SoakMessage>();
  readonly waiters = new Set<{ max: number; res: ServerResponse; timer: NodeJS.Timeout }>();
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }

  send(n: number): void {
    for (let i = 0; i < n; i++) {
      const body = `{"n":${stats.produced++}}`;
      this.visible.push({
        id: randomUUID(),
        body,
        md5: createHash('md5').update(body).digest('hex'),
        sentAt: Date.now(),
        receiveCount: 0,
        receipt: '',
        visibleAt: 0,
      });
    }
    this.#serveWaiters();
  }

  take(max: number, visibilitySec: number): SoakMessage[] {
    const out = this.visible.splice(0, max);
    for (const m of out) {
      m.receiveCount++;
      m.receipt = randomUUID();
      m.visibleAt = performance.now() + visibilitySec * 1000;
      this.inFlight.set(m.receipt, m);
    }
    return out;
  }

  /** Messages whose visibility timeout ran out are visible again (a lapsed lease, or a kept message). */
  expire(now: number): void {
    let back = 0;
    for (const [receipt, m] of this.inFlight) {
      if (m.visibleAt > now) continue;
      this.inFlight.delete(receipt);
      this.visible.push(m);
      back++;
    }
    stats.redelivered += back;
    if (back > 0) this.#serveWaiters();
  }

  #serveWaiters(): void {
    for (const w of this.waiters) {
      if (this.visible.length === 0) return;
      this.waiters.delete(w);
      clearTimeout(w.timer);
      sendMessages(w.res, this.take(w.max, VISIBILITY_SEC));
    }
  }
}

const stats = { produced: 0, deleted: 0, invoked: 0, throttled: 0, unknown: 0, redelivered: 0, overlaps: 0, maxInFlight: 0 };
/** Invocations that ran, by message number (the body's n): more than one is a message run twice. */
let runs = new Uint8Array(1 << 16);
function countRun(n: number): void {
  if (n >= runs.length) {
    const grown = new Uint8Array(Math.max(runs.length * 2, n + 1));
    grown.set(runs);
    runs = grown;
  }
  if (runs[n]! < 255) runs[n]!++;
}
const queues = new Map(QUEUES.map((name) => [name, new SoakQueue(name)]));
/** Invocations in flight by message id, to count overlaps (the same id in two invocations at once). */
const invoking = new Map<string, number>();
let inFlightInvokes = 0;
let port = 0;

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendMessages(res: ServerResponse, messages: SoakMessage[]): void {
  json(res, 200, {
    Messages: messages.map((m) => ({
      MessageId: m.id,
      ReceiptHandle: m.receipt,
      MD5OfBody: m.md5,
      Body: m.body,
      Attributes: { SentTimestamp: String(m.sentAt), ApproximateReceiveCount: String(m.receiveCount), SenderId: 'AIDASOAK' },
    })),
  });
}

type Input = Record<string, unknown>;
type Entry = { Id?: string; ReceiptHandle?: string; VisibilityTimeout?: number };

function sqs(op: string, input: Input, res: ServerResponse): void {
  const missing = () => json(res, 400, { __type: 'com.amazonaws.sqs#QueueDoesNotExist', message: 'no such queue' });
  if (op === 'GetQueueUrl') {
    const name = String(input['QueueName']);
    return queues.has(name as (typeof QUEUES)[number]) ? json(res, 200, { QueueUrl: urlOf(name) }) : missing();
  }
  const url = typeof input['QueueUrl'] === 'string' ? input['QueueUrl'] : '';
  const q = queues.get(url.slice(url.lastIndexOf('/') + 1) as (typeof QUEUES)[number]);
  if (!q) return missing();
  if (op === 'GetQueueAttributes') {
    return json(res, 200, {
      Attributes: { QueueArn: `arn:aws:sqs:${REGION}:${ACCOUNT}:${q.name}`, VisibilityTimeout: String(VISIBILITY_SEC) },
    });
  }
  if (op === 'ReceiveMessage') {
    const max = Math.min(10, Math.max(1, Number(input['MaxNumberOfMessages'] ?? 1)));
    const visibilitySec = input['VisibilityTimeout'] === undefined ? VISIBILITY_SEC : Number(input['VisibilityTimeout']);
    const got = q.take(max, visibilitySec);
    const waitSec = Number(input['WaitTimeSeconds'] ?? 0);
    if (got.length > 0 || waitSec <= 0) return sendMessages(res, got);
    const waiter = {
      max,
      res,
      timer: setTimeout(() => {
        q.waiters.delete(waiter);
        sendMessages(res, []);
      }, waitSec * 1000),
    };
    q.waiters.add(waiter);
    res.on('close', () => q.waiters.delete(waiter) && clearTimeout(waiter.timer));
    return;
  }
  if (op === 'DeleteMessageBatch' || op === 'ChangeMessageVisibilityBatch') {
    const entries = (input['Entries'] as Entry[] | undefined) ?? [];
    const ok: unknown[] = [];
    const failed: unknown[] = [];
    for (const e of entries) {
      const m = q.inFlight.get(e.ReceiptHandle ?? '');
      if (!m) {
        failed.push({ Id: e.Id, Code: 'ReceiptHandleIsInvalid', Message: 'expired or unknown receipt handle', SenderFault: true });
        continue;
      }
      ok.push({ Id: e.Id });
      if (op === 'DeleteMessageBatch') {
        q.inFlight.delete(m.receipt);
        stats.deleted++;
      } else {
        m.visibleAt = performance.now() + Number(e.VisibilityTimeout ?? 0) * 1000;
        if (e.VisibilityTimeout === 0) q.expire(performance.now());
      }
    }
    return json(res, 200, { Successful: ok, Failed: failed });
  }
  json(res, 400, { __type: 'com.amazonaws.sqs#UnsupportedOperation', message: `${op} is not faked` });
}

function lambdaError(res: ServerResponse, status: number, type: string, body: Record<string, string>): void {
  json(res, status, body, { 'x-amzn-errortype': type, 'x-amzn-requestid': randomUUID() });
}

function invoke(res: ServerResponse, text: string): void {
  const event = JSON.parse(text || '{}') as { Records?: { messageId: string; body: string }[] };
  const ids = (event.Records ?? []).map((r) => r.messageId);
  if (ids.length === 0) {
    res.writeHead(204, { 'x-amzn-requestid': randomUUID() });
    return void res.end();
  }
  if (inFlightInvokes >= BUDGET) {
    stats.throttled++;
    return lambdaError(res, 429, 'TooManyRequestsException', {
      Type: 'User',
      message: 'Rate Exceeded.',
      Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
    });
  }
  stats.invoked++;
  for (const r of event.Records ?? []) countRun((JSON.parse(r.body) as { n: number }).n);
  inFlightInvokes++;
  stats.maxInFlight = Math.max(stats.maxInFlight, inFlightInvokes);
  for (const id of ids) {
    const n = (invoking.get(id) ?? 0) + 1;
    if (n > 1) stats.overlaps++;
    invoking.set(id, n);
  }
  const unknown = Math.random() < UNKNOWN_SHARE;
  setTimeout(
    () => {
      inFlightInvokes--;
      for (const id of ids) {
        const n = invoking.get(id)! - 1;
        if (n === 0) invoking.delete(id);
        else invoking.set(id, n);
      }
      if (unknown) {
        // The function ran; the answer is lost: workerless cannot know, and holds the batch.
        stats.unknown++;
        return lambdaError(res, 500, 'ServiceException', { Type: 'Service', message: 'internal error' });
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-amz-executed-version': '$LATEST', 'x-amzn-requestid': randomUUID() });
      res.end('null');
    },
    INVOKE_MIN_MS! + (INVOKE_MAX_MS! - INVOKE_MIN_MS!) * Math.random(),
  );
}

function urlOf(name: string): string {
  return `http://127.0.0.1:${port}/${ACCOUNT}/${name}`;
}

const server = createServer({ keepAliveTimeout: 120_000, requestTimeout: 0 }, (req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    const target = req.headers['x-amz-target'];
    if (typeof target === 'string' && target.startsWith('AmazonSQS.')) {
      return sqs(target.slice('AmazonSQS.'.length), text ? (JSON.parse(text) as Input) : {}, res);
    }
    if (req.method === 'POST' && req.url?.includes('/invocations')) {
      return req.headers['x-amz-invocation-type'] === 'DryRun' ? (res.writeHead(204), res.end()) : invoke(res, text);
    }
    json(res, 404, { message: `no fake for ${req.method} ${req.url}` });
  });
});

// ---- The run.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (kib: number) => kib / 1024;

function rssKiB(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The process under `root` (itself or a descendant) that runs the CLI: with `npm start`, npm's shell's child. */
function daemonPid(root: number): number | undefined {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The fields after the command's closing parenthesis: state, then the parent's id.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    if (nodeArgs(pid)?.some((a) => a.endsWith('main.js'))) return pid;
    for (const [child, parent] of parents) if (parent === pid) queue.push(child);
  }
  return undefined;
}

/** A process's command line: for the CLI, the Node options it runs with, then the script and its arguments. */
function nodeArgs(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}

function peakRssKiB(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Least-squares slope of y over x. */
function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const num = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

async function main(): Promise<void> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const httpPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));

  const args = [
    '--function',
    'soak-fn',
    '--queues',
    QUEUES.map(urlOf).join(','),
    '--concurrency',
    String(CONCURRENCY),
    '--adaptive-concurrency',
    values.adaptive,
    '--queue-max-concurrency',
    `soak-a=${MAX_CONCURRENCY_A}`,
    '--batch-size',
    '1',
    '--poll-for',
    '1',
    '--metrics',
    'off',
    '--http-port',
    String(httpPort),
    '--log-level',
    'warn',
  ];
  // As a user starts it: the installed command (npm makes the bin executable), node, or npm start.
  if (WAY === 'command') chmodSync(CLI, 0o755);
  const [command, commandArgs] =
    WAY === 'command' ? [CLI, args] : WAY === 'node' ? [process.execPath, [CLI, ...args]] : ['npm', ['start', '--silent', '--', ...args]];
  const child = spawn(command, commandArgs, {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    env: {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      AWS_ACCESS_KEY_ID: 'soak',
      AWS_SECRET_ACCESS_KEY: 'soak',
      AWS_REGION: REGION,
      AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_CONFIG_FILE: '/dev/null',
      AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let logLines = 0;
  const warnings = new Map<string, number>();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) {
      if (!line.startsWith('{')) continue;
      logLines++;
      try {
        const msg = String((JSON.parse(line) as { msg?: unknown }).msg);
        warnings.set(msg, (warnings.get(msg) ?? 0) + 1);
      } catch {
        // a line split across chunks
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const startedAt = performance.now();
  let pid: number | undefined;
  while (pid === undefined && child.exitCode === null && performance.now() - startedAt < 30_000) {
    await sleep(100);
    pid = daemonPid(child.pid!);
  }
  if (pid === undefined) throw new Error(`no workerless process under ${WAY} (pid ${child.pid})`);
  // What it runs with, read once it has started (after any restart of its own).
  await sleep(2_000);
  const cmdline = nodeArgs(pid) ?? [];
  const nodeFlags = cmdline.slice(
    1,
    cmdline.findIndex((a) => a.endsWith('main.js')),
  );
  const endAt = startedAt + MINUTES * 60_000;
  const elapsedSec = () => (performance.now() - startedAt) / 1000;

  // The producer: RATE messages a second, split between the queues, in 10 slices a second.
  let owed = 0;
  const producer = setInterval(() => {
    owed += RATE / 10;
    const n = Math.floor(owed);
    owed -= n;
    queues.get('soak-a')!.send(Math.floor(n / 2));
    queues.get('soak-b')!.send(n - Math.floor(n / 2));
    for (const q of queues.values()) q.expire(performance.now());
  }, 100);

  const failures: { atSec: number; path: string; status: number | string; body: string }[] = [];
  let probes = 0;
  const samples: { x: number; y: number }[] = [];
  process.stdout.write(
    `soak: ${MINUTES} min, ${RATE} msg/s over ${QUEUES.join(', ')} (${QUEUES[0]} max-concurrency ${MAX_CONCURRENCY_A}), ` +
      `--concurrency ${CONCURRENCY} --adaptive-concurrency ${values.adaptive}, function budget ${BUDGET}, ` +
      `invocations ${INVOKE_MIN_MS}-${INVOKE_MAX_MS} ms, ${UNKNOWN_SHARE * 100}% answered 5xx, visibility ${VISIBILITY_SEC} s; ` +
      `started as ${WAY} (pid ${pid}), Node options: ${nodeFlags.join(' ') || '(none)'}\n`,
  );
  let nextSample = 0;
  while (performance.now() < endAt) {
    await sleep(1_000);
    if (child.exitCode !== null) break;
    probes++;
    for (const path of ['/healthz', '/readyz']) {
      try {
        const res = await fetch(`http://127.0.0.1:${httpPort}${path}`, { signal: AbortSignal.timeout(5_000) });
        const body = await res.text();
        // Before the server listens, the probe cannot connect: start-up, not a failure.
        if (res.status !== 200 && elapsedSec() > 30) {
          failures.push({ atSec: Math.round(elapsedSec()), path, status: res.status, body: body.slice(0, 300) });
        }
      } catch (err) {
        if (elapsedSec() > 30) failures.push({ atSec: Math.round(elapsedSec()), path, status: 'error', body: String(err) });
      }
    }
    if (elapsedSec() >= nextSample) {
      nextSample += MINUTES >= 10 ? 60 : 30;
      const kib = rssKiB(pid);
      if (kib !== undefined) {
        samples.push({ x: elapsedSec(), y: mib(kib) });
        const backlog = [...queues.values()].reduce((a, q) => a + q.visible.length, 0);
        const inFlight = [...queues.values()].reduce((a, q) => a + q.inFlight.size, 0);
        process.stdout.write(
          `t=${Math.round(elapsedSec())}s rss=${mib(kib).toFixed(1)} MiB deleted=${stats.deleted} invoked=${stats.invoked} ` +
            `throttled=${stats.throttled} 5xx=${stats.unknown} backlog=${backlog} inflight=${inFlight} ` +
            `liveness-failures=${failures.length}\n`,
        );
      }
    }
  }
  clearInterval(producer);
  const peakRss = peakRssKiB(pid);
  process.kill(pid, 'SIGTERM');
  const code = await exited;
  server.closeAllConnections();
  server.close();

  const settled = samples.filter((s) => s.x >= SETTLE_MINUTES * 60);
  const perTenMin = slope(settled) * 600;
  // V8 grows its heap in steps for a while; the second half tells a plateau from a leak.
  const lastHalfPerTenMin = slope(samples.filter((s) => s.x >= (MINUTES * 60) / 2)) * 600;
  const rss = samples.map((s) => s.y);
  const left = [...queues.values()].reduce((a, q) => a + q.visible.length + q.inFlight.size, 0);
  let ranTwice = 0;
  for (let n = 0; n < stats.produced; n++) if (runs[n]! > 1) ranTwice++;
  const summary = {
    way: WAY,
    nodeFlags,
    minutes: MINUTES,
    probes,
    healthFailures: failures.length,
    failures: failures.slice(0, 20),
    produced: stats.produced,
    deleted: stats.deleted,
    invoked: stats.invoked,
    throttled: stats.throttled,
    answered5xx: stats.unknown,
    redelivered: stats.redelivered,
    overlappingInvocations: stats.overlaps,
    /** Produced, neither deleted nor still in a queue (visible or in flight) at the end. */
    lost: stats.produced - stats.deleted - left,
    leftInQueues: left,
    messagesRunTwice: ranTwice,
    maxInFlightInvokes: stats.maxInFlight,
    rssMiB: {
      first: rss[0]?.toFixed(1),
      last: rss.at(-1)?.toFixed(1),
      max: Math.max(...rss).toFixed(1),
      peak: peakRss === undefined ? undefined : mib(peakRss).toFixed(1),
    },
    settleMinutes: SETTLE_MINUTES,
    rssSlopeMiBPer10Min: Number(perTenMin.toFixed(2)),
    rssSlopeLastHalfMiBPer10Min: Number(lastHalfPerTenMin.toFixed(2)),
    exitCode: code,
    logLines,
    logMessages: Object.fromEntries([...warnings].sort((a, b) => b[1] - a[1]).slice(0, 10)),
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}

await main();
