// Many idle queues behind one small pool, beside Lambda's SQS trigger: for each number of queues, what the daemon
// pays SQS per idle queue, how fast it picks up a message sent to any one of them, its peak memory and its time to
// ready. The trigger needs one event source mapping per queue: 15 ReceiveMessage per idle queue per minute (5
// pollers, 20 s long polls) and a MaximumConcurrency of at least 2 per mapping, so N queues claim 2N concurrency.
//
//   npm run build && node bench/many-queues.ts [--sizes 100,1000,10000] [--sqs fake,elasticmq] [--concurrency 10]
//       [--idle-sec 60] [--probes 60] [--gap-ms 1000] [--prefix wl-bench-mq] [--create-batch 100] [--cli other/dist/src/main.js]
//       [--create-only]   (only create the queues of the largest size, on --sqs elasticmq, for later runs)
//       [--tls]           (the fake over HTTPS, as real SQS is: what TLS costs per connection)
//
// Each size runs measureIdle (bench/idle.ts) once: the built CLI with its default --poll-for, --http-port and the
// queues in a --config file, through the counting proxy, against
//   fake       bench/fast/fake-aws.ts in its own process (started here; queues created in it for the run)
//   elasticmq  the ElasticMQ at ELASTICMQ_ENDPOINT (default http://127.0.0.1:9324; scripts/sqs-servers.sh start
//              elasticmq; past 1,000 queues, one of its own with ELASTICMQ_HEAP=1g, required). Its queues are named <prefix>-00000, <prefix>-00001, ... and kept, so the next run (and
//              a smaller size) reuses them: CreateQueue of an existing queue with the same attributes is a no-op.
// Printed per size: ReceiveMessage per idle queue per minute (mean and busiest queue) over --idle-sec (from one
// --poll-for after start-up on; the fake counts the calls itself, ElasticMQ through the counting proxy up to 5,000
// queues and past that by the daemon's own /metrics count, by operation only), every SQS
// call of any kind per queue per minute (by operation), then --probes messages, one at a time and --gap-ms apart, each
// to a queue chosen at random, send -> Invoke p50 / p99 (and any not invoked within 60 s), the daemon's peak RSS
// (VmHWM) beside two floors (the same number of long polls held by bare net.Socket and by node:http:
// bench/peers/poll-floor.ts; over --tls three: bare tls.connect with a TLS context per socket, the same with one
// context shared by every socket as the daemon holds them, and node:https), its
// time from spawn to the first /readyz 200, and its open sockets at the end of the idle window.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { parseArgs } from 'node:util';
import { NODE_FLAGS } from '../src/daemon/node-flags.ts';
import { measureIdle, startIdleEndpoint, type IdleResult, type QueueRef } from './idle.ts';
import { ensureQueues } from './support/queue-pool.ts';

const here = (rel: string) => fileURLToPath(new URL(rel, import.meta.url));
/** The idle window opens one default --poll-for (20 s) after start-up, when every queue's first poll has been answered. */
const SETTLE_AFTER_START_MS = 20_000;
/** How long the floor holds its polls: every poll answered and sent again at least once. */
const FLOOR_SEC = 30;

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '100,1000,10000' },
    sqs: { type: 'string', default: 'fake,elasticmq' },
    concurrency: { type: 'string', default: '10' },
    'idle-sec': { type: 'string', default: '60' },
    probes: { type: 'string', default: '60' },
    'gap-ms': { type: 'string', default: '1000' },
    prefix: { type: 'string', default: 'wl-bench-mq' },
    'create-batch': { type: 'string', default: '100' },
    cli: { type: 'string' },
    'create-only': { type: 'boolean', default: false },
    tls: { type: 'boolean', default: false },
  },
});
// --tls: the fake over HTTPS (test/fixtures/tls's certificate for "localhost", trusted here, by the daemon and by the
// floors): what TLS costs per connection, as against real SQS.
const TLS_CERT = fileURLToPath(new URL('../test/fixtures/tls/localhost-cert.pem', import.meta.url));
if (values.tls) {
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), readFileSync(TLS_CERT, 'utf8')]);
  process.env['NODE_EXTRA_CA_CERTS'] = TLS_CERT;
}
const sizes = values.sizes.split(',').map(Number);
const targets = values.sqs.split(',');
const numbers = {
  concurrency: Number(values.concurrency),
  idleSec: Number(values['idle-sec']),
  probes: Number(values.probes),
  gapMs: Number(values['gap-ms']),
  createBatch: Number(values['create-batch']),
};
const bad =
  sizes.some((n) => !(Number.isInteger(n) && n >= 1 && n <= 100_000)) ||
  targets.some((t) => t !== 'fake' && t !== 'elasticmq') ||
  Object.values(numbers).some((n) => !(Number.isFinite(n) && n > 0)) ||
  !/^[\w-]{1,70}$/.test(values.prefix);
if (bad) {
  process.stderr.write(
    'usage: node bench/many-queues.ts [--sizes 100,1000,10000] [--sqs fake,elasticmq] [--concurrency 10] [--idle-sec 60]\n' +
      '                               [--probes 60] [--gap-ms 1000] [--prefix wl-bench-mq] [--create-batch 100] [--cli path]\n',
  );
  process.exit(2);
}
// 10,000 idle queues ran a shared ElasticMQ (scripts/sqs-servers.sh gives it a 256 MiB heap) out of memory: past
// 1,000 queues the run wants an instance of its own, named by ELASTICMQ_ENDPOINT.
if (targets.includes('elasticmq') && Math.max(...sizes) > 1000 && process.env['ELASTICMQ_ENDPOINT'] === undefined) {
  process.stderr.write(
    'bench/many-queues.ts: more than 1,000 queues on ElasticMQ need an instance of their own with a larger heap (a 256 MiB one ran out):\n' +
      '  ELASTICMQ_PORT=9325 ELASTICMQ_HEAP=1g scripts/sqs-servers.sh start elasticmq\n' +
      '  ELASTICMQ_ENDPOINT=http://127.0.0.1:9325 node bench/many-queues.ts ...\n',
  );
  process.exit(2);
}
const CLI = values.cli ?? here('../dist/src/main.js');
const progress = (text: string) => process.stderr.write(`many-queues: ${text}\n`);

/** The fake endpoint in its own process (so its CPU is never the daemon's). */
async function startFake(): Promise<{ endpoint: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [here('./fast/fake-aws.ts'), ...(values.tls ? ['--tls'] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.setEncoding('utf8').once('data', (line: string) => resolve((JSON.parse(line) as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`the fake endpoint exited (${code})`)));
  });
  return { endpoint: values.tls ? `https://localhost:${port}` : `http://127.0.0.1:${port}`, child };
}

/** Queues a counting proxy can hold: two sockets per long poll, under the 20,000 a process may open here. */
const PROXY_MAX_QUEUES = 5_000;
const countAt = (target: string, size: number) => (target === 'fake' ? 'endpoint' : size > PROXY_MAX_QUEUES ? 'daemon' : 'proxy');

interface Row {
  readonly sqs: string;
  readonly queues: number;
  readonly r: IdleResult;
  /**
   * The floors' peak RSS: the same number of long polls held by bare net.Socket and by node:http
   * (bench/peers/poll-floor.ts); over --tls also bare tls.connect with one shared context (`shared`).
   */
  readonly floorMiB: { readonly net: number; readonly shared: number | undefined; readonly http: number };
}

/** Runs bench/peers/poll-floor.ts on `queues` against `endpoint` for one --poll-for and a half, under the daemon's V8 flags. */
async function pollFloor(transport: 'net' | 'net-shared' | 'http', endpoint: string, queues: readonly QueueRef[]): Promise<number> {
  const child = spawn(process.execPath, [...NODE_FLAGS, here('./peers/poll-floor.ts'), transport, endpoint, String(FLOOR_SEC)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.add(child);
  child.stdin.end(queues.map((q) => q.url).join('\n'));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  await new Promise((resolve) => child.once('close', resolve));
  children.delete(child);
  return (JSON.parse(out) as { peakRssMiB: number }).peakRssMiB;
}

const fmt = (n: number | undefined, digits = 1) =>
  n === undefined || !Number.isFinite(n)
    ? '-'
    : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

function row({ sqs, queues, r, floorMiB }: Row): string {
  const receives =
    countAt(sqs, queues) === 'daemon'
      ? `${fmt(mean(r.receivesPerQueueMinute))} (the daemon's own count: no busiest)`
      : `${fmt(mean(r.receivesPerQueueMinute))} (max ${fmt(Math.max(...r.receivesPerQueueMinute))})`;
  const all = Object.values(r.callsPerQueueMinute).reduce((a, b) => a + b, 0);
  const ops = Object.entries(r.callsPerQueueMinute)
    .sort((a, b) => b[1] - a[1])
    .map(([op, n]) => `${op} ${fmt(n, 2)}`)
    .join(', ');
  const pickup = `${fmt(r.pickupAll.p50, 0)} / ${fmt(r.pickupAll.p99, 0)} (${r.pickupAll.n}${r.missed > 0 ? ` invoked; ${r.missed} not, 60 s after the last send` : ''})`;
  return (
    `| ${sqs} | ${queues.toLocaleString('en-US')} | ${receives} | ${fmt(all)} (${ops}) | ${pickup} | ${fmt(r.peakRssMiB, 0)} | ` +
    `${[floorMiB.net, ...(values.tls ? [floorMiB.shared] : []), floorMiB.http].map((x) => fmt(x, 0)).join(' / ')} | ` +
    `${fmt((r.readyMs ?? NaN) / 1000)} | ${r.idleSockets} | 15 | ${(2 * queues).toLocaleString('en-US')} |`
  );
}

/** The goals for many idle queues on one small pool, for one row, as lines "met"/"MISSED". */
function goals({ sqs, queues, r }: Row): string[] {
  const all = Object.values(r.callsPerQueueMinute).reduce((a, b) => a + b, 0);
  const p99 = r.missed > 0 ? Infinity : r.pickupAll.p99;
  const p99Goal = queues >= 10_000 ? 250 : 100;
  const lines: [string, boolean][] = [
    [`ReceiveMessage per idle queue per minute ${fmt(mean(r.receivesPerQueueMinute))} (<= 3)`, mean(r.receivesPerQueueMinute) <= 3],
    [`SQS calls of any kind per idle queue per minute ${fmt(all)} (<= 4)`, all <= 4],
    [
      r.missed > 0
        ? `pickup: ${r.missed} of ${r.missed + r.pickupAll.n} probes not invoked within 60 s of the last send (p99 <= ${p99Goal} ms)`
        : `pickup p99 ${fmt(p99, 0)} ms (<= ${p99Goal})`,
      p99 <= p99Goal,
    ],
  ];
  if (queues >= 10_000) {
    // Over TLS (issue 41) 650 MiB: Node's own TLS state per open connection is most of it (the floors beside it).
    const rssGoal = values.tls ? 650 : 250;
    lines.push([`peak RSS ${fmt(r.peakRssMiB, 0)} MiB (<= ${rssGoal}${values.tls ? ', over TLS' : ''})`, r.peakRssMiB <= rssGoal]);
    lines.push([`ready in ${fmt((r.readyMs ?? NaN) / 1000)} s (<= 30)`, (r.readyMs ?? Infinity) <= 30_000]);
  }
  return lines.map(([what, ok]) => `  ${(ok ? 'met' : 'MISSED').padEnd(7)} ${sqs}, ${queues.toLocaleString('en-US')} queues: ${what}`);
}

const lambda = await startIdleEndpoint();
const rows: Row[] = [];
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
try {
  for (const target of targets) {
    let endpoint: string;
    let fake: ChildProcess | undefined;
    if (target === 'fake') {
      ({ endpoint, child: fake } = await startFake());
      children.add(fake);
    } else endpoint = process.env['ELASTICMQ_ENDPOINT'] ?? 'http://127.0.0.1:9324';
    try {
      const t0 = Date.now();
      const { queues: pool, created } = await ensureQueues({
        endpoint,
        prefix: values.prefix,
        count: Math.max(...sizes),
        createBatch: numbers.createBatch,
      });
      progress(`${target}: ${pool.length} queues ${values.prefix}-* ready in ${fmt((Date.now() - t0) / 1000)} s (${created} created)`);
      if (values['create-only']) continue;
      for (const size of sizes) {
        progress(`${target}: ${size} queues, --concurrency ${numbers.concurrency}, ${numbers.idleSec} s idle, ${numbers.probes} probes...`);
        const r = await measureIdle({
          cli: CLI,
          sqsEndpoint: endpoint,
          lambda,
          queues: pool.slice(0, size),
          concurrency: numbers.concurrency,
          idleSec: numbers.idleSec,
          messages: numbers.probes,
          gapMs: numbers.gapMs,
          pick: 'random',
          readyz: true,
          // The fake counts the calls itself: a proxy would hold two sockets per long poll (see IdleOptions.countAt);
          // past PROXY_MAX_QUEUES on a real server, the daemon's own count.
          countAt: countAt(target, size),
          // One --poll-for after start-up: the start-up pass and the first round of polls are not idle cost.
          settleMs: SETTLE_AFTER_START_MS,
          ...(values.tls ? { env: { NODE_EXTRA_CA_CERTS: TLS_CERT } } : {}),
        });
        lambda.reset();
        if (r.idleInvokes > 0)
          progress(`${target}, ${size} queues: ${r.idleInvokes} invocations during the idle window (queues not empty)`);
        const floorMiB = {
          net: await pollFloor('net', endpoint, pool.slice(0, size)),
          shared: values.tls ? await pollFloor('net-shared', endpoint, pool.slice(0, size)) : undefined,
          http: await pollFloor('http', endpoint, pool.slice(0, size)),
        };
        rows.push({ sqs: target, queues: size, r, floorMiB });
        progress(row(rows.at(-1)!));
      }
    } finally {
      if (fake) {
        fake.kill('SIGTERM');
        children.delete(fake);
      }
    }
  }
} finally {
  await lambda.stop();
}

if (values['create-only']) process.exit(0);
console.log(
  `${CLI}: --concurrency ${numbers.concurrency}, default --poll-for; idle ${numbers.idleSec} s; ` +
    `${numbers.probes} probes ${numbers.gapMs} ms apart, each to a random queue (send -> Invoke); ${new Date().toISOString()}`,
);
const floorsHead = values.tls
  ? 'floors: the same polls on bare tls.connect (a context per socket) / tls.connect (one shared context) / node:https, peak RSS MiB'
  : 'floors: the same polls on bare net.Socket / node:http, peak RSS MiB';
console.log(
  `| SQS | queues | ReceiveMessage per idle queue per minute: mean (busiest) | SQS calls of any kind per queue per minute (by operation) | pickup p50 / p99 ms (probes) | peak RSS MiB | ${floorsHead} | ready s (/readyz 200) | sockets at idle | Lambda trigger: receives per idle queue per minute | trigger: concurrency claimed (MaximumConcurrency >= 2 per queue) |`,
);
console.log('|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|');
for (const r of rows) console.log(row(r));
// What one more connection (one more idle queue, one long poll) costs each of them: the peak RSS between two sizes
// of the same run over the connections added, so what every process pays once (Node, the code, the heap's base)
// drops out.
const perConnection = rows.flatMap((hi, i) => {
  const lo = rows[i - 1];
  if (lo === undefined || lo.sqs !== hi.sqs) return [];
  const kib = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? undefined : ((b - a) * 1024) / (hi.queues - lo.queues);
  const daemon = kib(lo.r.peakRssMiB, hi.r.peakRssMiB)!;
  const floors = [
    kib(lo.floorMiB.net, hi.floorMiB.net),
    ...(values.tls ? [kib(lo.floorMiB.shared, hi.floorMiB.shared)] : []),
    kib(lo.floorMiB.http, hi.floorMiB.http),
  ];
  return [
    `| ${hi.sqs} | ${lo.queues.toLocaleString('en-US')} -> ${hi.queues.toLocaleString('en-US')} | ${fmt(daemon)} | ${floors.map((f) => fmt(f)).join(' | ')} | ` +
      `${floors.map((f) => (f === undefined ? '-' : `${daemon - f >= 0 ? '+' : ''}${fmt(daemon - f)}`)).join(' / ')} |`,
  ];
});
if (perConnection.length > 0) {
  const names = values.tls
    ? ['tls.connect, a context per socket', 'tls.connect, one shared context', 'node:https']
    : ['net.Socket', 'node:http'];
  console.log(`one more connection, KiB of peak RSS between two sizes of this run${values.tls ? ' (over TLS)' : ''}:`);
  console.log(`| SQS | queues | workerless | ${names.join(' | ')} | workerless minus each floor (${names.join(' / ')}) |`);
  console.log(`|---|---|--:|${names.map(() => '--:|').join('')}--:|`);
  for (const line of perConnection) console.log(line);
}
console.log('goals:');
for (const r of rows) for (const line of goals(r)) console.log(line);
