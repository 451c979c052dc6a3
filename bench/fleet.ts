// Issue 40's goal table in one run: N replicas of the built CLI sharing idle queues through one DynamoDB table
// (--fleet-table, docs/fleet.md), and the same N replicas without a fleet beside them, each of which pays the idle
// cost on its own. The goal: 3 replicas on 1,000 idle queues make at most 3.2 ReceiveMessage per queue per minute
// together (without a fleet: 9), and the fleet's coordination costs each replica at most 30 DynamoDB calls a
// minute whatever the number of queues.
//
//   npm run build && node bench/fleet.ts [--replicas 1,3,10] [--queues 100,1000,10000] [--window 60] [--poll-for 20]
//       [--concurrency 10] [--modes fleet,alone] [--stagger-sec 0] [--max-polls 19000] [--no-proxy-check]
//       [--prefix wl-bench-mq] [--create-batch 100] [--logs DIR]   (each replica's output, one file each)
//
// Servers: ElasticMQ at ELASTICMQ_ENDPOINT (default http://127.0.0.1:9324; past 1,000 queues, one of its own with a
// larger heap, as bench/many-queues.ts asks), moto's DynamoDB at MOTO_ENDPOINT (default http://127.0.0.1:5055):
// `scripts/sqs-servers.sh start`. The queues are bench/many-queues.ts's (<prefix>-00000, ...: kept, and reused).
//
// Each row starts N replicas of this tree's dist/src/main.js (test/support/daemon.ts's startIdleDaemon, as the fleet's
// integration test does) at once (or --stagger-sec apart) with --concurrency, --poll-for, --http-port, the queues
// in a --config file and, for a fleet, --fleet-table (a table created for the run in moto) and a --fleet-name of the
// row's own, each replica's DynamoDB calls through a counting proxy of its own (test/support/fault-proxy.ts). The
// window opens when start-up is over: every replica answers /readyz and, in a fleet, reports fleet.mode "shared"
// with all N members in /status.json at once; then one --poll-for more, so the polls sent while joining (every
// replica polls every queue then) have ended. Over the window:
//   ReceiveMessage  the replicas' own counters (workerless_aws_api_calls_total, service sqs, on /metrics) read at
//                   both ends and summed: a counting proxy in front of ElasticMQ needs two sockets per long poll,
//                   and 10 replicas of 10,000 queues are more than one process may open here. Where the row's
//                   polls fit through one (--no-proxy-check: never), a counting proxy counts them as well, per queue.
//   DynamoDB        every request each replica's proxy forwarded to moto (the daemon has no counter for them).
//   RSS             each replica's peak (VmHWM: start-up and joining included) and its settled VmRSS at both ends.
// Without a fleet, rows of more polls than --max-polls (N x queues: one connection each, at ElasticMQ, whose open
// files are 20,000 here) are not run: they show N times the 1-replica row of the same queues, marked computed.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readOpenFileLimit } from '../src/daemon/open-file-limit.ts';
import { CLI, type CliRun } from '../test/support/cli.ts';
import { startIdleDaemon, stopDaemon } from '../test/support/daemon.ts';
import { createFleetTable, deleteTable, motoDynamoEndpoint, uniqueTableName } from '../test/support/dynamodb.ts';
import { receivesPerQueue, startFaultProxy, type FaultProxy } from '../test/support/fault-proxy.ts';
import { sample } from '../test/support/http.ts';
import { startLambdaEndpoint } from '../test/support/lambda-endpoint/server.ts';
import { daemonSqsCalls, type QueueRef } from './idle.ts';
import { until } from './support/consumer-process.ts';
import { ensureQueues } from './support/queue-pool.ts';

const here = (rel: string) => fileURLToPath(new URL(rel, import.meta.url));
const FUNCTION_NAME = 'fleet-echo';
/** The goals of issue 40. */
const GOAL_RECEIVES_PER_QUEUE_MINUTE = 3.2;
const GOAL_DYNAMO_PER_REPLICA_MINUTE = 30;
/** How long start-up may take: 10 replicas of 10,000 queues each on 2 cores. */
const START_TIMEOUT_MS = 300_000;
/** One scrape of a replica's page; 10 replicas on 2 cores answer slowly while they start. */
const SCRAPE_TIMEOUT_MS = 20_000;
/** The settled RSS is also sampled this often over the window (its largest value is printed). */
const RSS_EVERY_MS = 5_000;

const { values } = parseArgs({
  allowNegative: true,
  options: {
    replicas: { type: 'string', default: '1,3,10' },
    queues: { type: 'string', default: '100,1000,10000' },
    window: { type: 'string', default: '60' },
    'poll-for': { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '10' },
    modes: { type: 'string', default: 'fleet,alone' },
    'stagger-sec': { type: 'string', default: '0' },
    'max-polls': { type: 'string', default: '19000' },
    'proxy-check': { type: 'boolean', default: true },
    prefix: { type: 'string', default: 'wl-bench-mq' },
    'create-batch': { type: 'string', default: '100' },
    logs: { type: 'string' },
  },
});
const list = (s: string) => s.split(',').map(Number);
const replicaCounts = list(values.replicas);
const queueCounts = list(values.queues).sort((a, b) => a - b);
const modes = values.modes.split(',');
const numbers = {
  windowSec: Number(values.window),
  pollForSec: Number(values['poll-for']),
  concurrency: Number(values.concurrency),
  staggerSec: Number(values['stagger-sec']),
  maxPolls: Number(values['max-polls']),
  createBatch: Number(values['create-batch']),
};
const bad =
  [...replicaCounts, ...queueCounts].some((n) => !(Number.isInteger(n) && n >= 1 && n <= 100_000)) ||
  modes.some((m) => m !== 'fleet' && m !== 'alone') ||
  Object.values(numbers).some((n) => !(Number.isFinite(n) && n >= 0)) ||
  numbers.windowSec === 0 ||
  !(Number.isInteger(numbers.pollForSec) && numbers.pollForSec >= 1 && numbers.pollForSec <= 20) ||
  !/^[\w-]{1,70}$/.test(values.prefix);
if (bad) {
  process.stderr.write(
    'usage: node bench/fleet.ts [--replicas 1,3,10] [--queues 100,1000,10000] [--window 60] [--poll-for 20 (1-20)] [--concurrency 10]\n' +
      '                           [--modes fleet,alone] [--stagger-sec 0] [--max-polls 19000] [--no-proxy-check]\n' +
      '                           [--prefix wl-bench-mq] [--create-batch 100] [--logs DIR]\n',
  );
  process.exit(2);
}
// 10,000 idle queues ran a shared ElasticMQ with scripts/sqs-servers.sh's 256 MiB heap out of memory
// (bench/README.md, many-queues.ts): past 1,000 queues, an instance of its own.
if (Math.max(...queueCounts) > 1000 && process.env['ELASTICMQ_ENDPOINT'] === undefined) {
  process.stderr.write(
    'bench/fleet.ts: more than 1,000 queues need an ElasticMQ of their own with a larger heap:\n' +
      '  ELASTICMQ_PORT=9325 ELASTICMQ_HEAP=2g scripts/sqs-servers.sh start elasticmq\n' +
      '  ELASTICMQ_ENDPOINT=http://127.0.0.1:9325 node bench/fleet.ts ...\n',
  );
  process.exit(2);
}
const SQS_ENDPOINT = process.env['ELASTICMQ_ENDPOINT'] ?? 'http://127.0.0.1:9324';
const DYNAMO_ENDPOINT = motoDynamoEndpoint();
/** One replica alone: one long poll per idle queue per --poll-for (docs/performance.md, "Idle cost"). */
const ONE_REPLICA = 60 / numbers.pollForSec;
const progress = (text: string) => process.stderr.write(`fleet: ${text}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Mode = 'fleet' | 'alone';

interface FleetView {
  readonly mode: string;
  readonly members: readonly string[];
  readonly owned: number;
  readonly queues: number;
}

interface Replica {
  readonly run: CliRun;
  readonly port: number;
  /** In front of moto, this replica's alone (fleet rows only). */
  readonly dynamo: FaultProxy | undefined;
}

/** What one replica did over the window. */
interface ReplicaResult {
  readonly receivesPerMinute: number;
  readonly dynamoPerMinute: number;
  readonly dynamoByOperation: Readonly<Record<string, number>>;
  /** Queues it owned at the end of the window (fleet rows). */
  readonly owned: number | undefined;
  /** Its fleet's mode and members at the end of the window (fleet rows). */
  readonly endMode: string | undefined;
  readonly endMembers: number | undefined;
  readonly peakRssMiB: number;
  readonly rssStartMiB: number;
  readonly rssEndMiB: number;
  /** The largest VmRSS sampled over the window. */
  readonly rssMaxMiB: number;
  /** Log lines at warn or above, over its whole run and in the window. */
  readonly warnings: number;
  readonly windowWarnings: number;
  /** The longest event-loop delay over the window (workerless_nodejs_eventloop_lag_max_seconds), ms. */
  readonly lagMaxMs: number;
  /** Its fleet's changes of mode inside the window ("shared->fallen-back at 12 s"): the window was not steady. */
  readonly windowModeChanges: readonly string[];
}

interface Row {
  readonly mode: Mode;
  readonly replicas: number;
  readonly queues: number;
  /** Not run: N times the 1-replica row of the same queues (too many polls for the server here). */
  readonly computedFrom?: Row;
  readonly replicaResults: readonly ReplicaResult[];
  /** ReceiveMessage per queue per minute, all replicas together (their own counters). */
  readonly receivesPerQueueMinute: number;
  /** The counting proxy's figures per queue per minute, where the row's polls fit through it. */
  readonly proxy: { readonly mean: number; readonly min: number; readonly max: number } | undefined;
  /** From the last spawn to start-up over (every replica ready, and shared in a fleet), ms. */
  readonly startupMs: number;
  /** Invocations over the window: more than 0 means some queue was not empty. */
  readonly windowInvokes: number;
  /** Warn-level lines seen, the first few distinct messages. */
  readonly warningSample: readonly string[];
}

/** Ports this run handed out already (below the ephemeral range, see httpPort). */
let lastPort: number | undefined;

/**
 * A free port below the kernel's ephemeral range (ip_local_port_range) for a replica's --http-port: the replicas'
 * outgoing connections, 10,000 long polls each, take their local ports from that range, and one took a port
 * chosen there (freePort) before the next replica, started later, could listen on it (EADDRINUSE).
 */
async function httpPort(): Promise<number> {
  const lowest = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  for (let port = (lastPort ?? lowest) - 1; port > 1024; port--) {
    const server = createNetServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (!free) continue;
    await new Promise((resolve) => server.close(resolve));
    lastPort = port;
    return port;
  }
  throw new Error(`no free port below ${lowest}`);
}

/** VmHWM or VmRSS of a live process, MiB. */
function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** A replica's page, given more time than a test's 2 s scrape and asked again while the replica is busy starting. */
async function page(port: number, path: string): Promise<{ status: number; body: string }> {
  let last: unknown;
  for (let tries = 0; tries < 3; tries++) {
    try {
      const answer = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS) });
      return { status: answer.status, body: await answer.text() };
    } catch (err) {
      last = err;
      await sleep(500);
    }
  }
  throw new Error(`the replica on port ${port} does not answer ${path}: ${String(last)}`);
}

async function fleetOf(port: number): Promise<FleetView> {
  const { status, body } = await page(port, '/status.json');
  try {
    return (JSON.parse(body) as { fleet: FleetView }).fleet;
  } catch {
    throw new Error(
      `the replica on port ${port} answered /status.json with ${status} and ${body.length} bytes that are not JSON: ${body.slice(0, 200)}`,
    );
  }
}

/** The replicas' warn-level (40+) log lines, counted (all, and those logged in [from, to)), with the first few distinct messages. */
function warningsOf(runs: readonly CliRun[], from = Infinity, to = Infinity): { counts: number[]; inWindow: number[]; sample: string[] } {
  const sample = new Set<string>();
  const inWindow: number[] = [];
  const counts = runs.map((run) => {
    const lines = run.logs().filter((l) => Number(l['level']) >= 40);
    for (const l of lines)
      if (sample.size < 5) sample.add(`${String(l['msg'])}${l['err'] ? `: ${JSON.stringify(l['err']).slice(0, 160)}` : ''}`);
    inWindow.push(lines.filter((l) => Number(l['time']) >= from && Number(l['time']) < to).length);
    return lines.length;
  });
  return { counts, inWindow, sample: [...sample] };
}

/** Throws with the output of the first replica that has exited. */
function checkAlive(replicas: readonly Replica[]): boolean {
  const gone = replicas.find((r) => r.run.child.exitCode !== null);
  if (gone)
    throw new Error(
      `a replica exited (code ${gone.run.child.exitCode}):\n${gone.run.stdout().slice(-4000)}\n${gone.run.stderr().slice(-2000)}`,
    );
  return true;
}

/** One row: N replicas of one mode on the first `queues.length` queues, from spawn to SIGTERM. */
async function measureRow(mode: Mode, n: number, queues: readonly QueueRef[], table: string): Promise<Row> {
  const names = queues.map((q) => q.name);
  const tmp = mkdtempSync(join(tmpdir(), 'bench-fleet-'));
  const config = join(tmp, 'workerless.json');
  // 10,000 names are more than one argument may hold (128 KiB on Linux).
  writeFileSync(config, JSON.stringify({ queues: names }));
  const fitsProxy = values['proxy-check'] && 2 * n * queues.length + 1_000 <= (readOpenFileLimit() ?? 1024);
  const sqsProxy = fitsProxy ? await startFaultProxy({ upstream: SQS_ENDPOINT, abortOnClientClose: true }) : undefined;
  const fleetName = `${table}-${n}x${queues.length}`;
  const replicas: Replica[] = [];
  const lambda = await startLambdaEndpoint({ functions: { [FUNCTION_NAME]: { handler: here('../test/fixtures/functions/echo.mjs') } } });
  try {
    for (let i = 0; i < n; i++) {
      if (i > 0 && numbers.staggerSec > 0) await sleep(numbers.staggerSec * 1000);
      const port = await httpPort();
      const dynamo = mode === 'fleet' ? await startFaultProxy({ upstream: DYNAMO_ENDPOINT }) : undefined;
      const args = [
        ...['--function', FUNCTION_NAME, '--config', config, '--concurrency', String(numbers.concurrency)],
        ...['--poll-for', String(numbers.pollForSec), '--http-port', String(port)],
        ...(mode === 'fleet' ? ['--fleet-table', table, '--fleet-name', fleetName] : []),
      ];
      const run = startIdleDaemon(lambda.url, sqsProxy?.url ?? SQS_ENDPOINT, args, dynamo ? { AWS_ENDPOINT_URL_DYNAMODB: dynamo.url } : {});
      live.add(run);
      replicas.push({ run, port, dynamo });
    }
    const spawnedAt = Date.now();
    // Nothing listens on --http-port until the daemon has checked its queues, the function and the table.
    const ready = (port: number) =>
      fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS) }).then(
        (a) => a.status === 200,
        () => false,
      );
    await until(
      'every replica to answer /readyz 200',
      async () => checkAlive(replicas) && (await Promise.all(replicas.map((r) => ready(r.port)))).every(Boolean),
      START_TIMEOUT_MS,
      250,
    );
    if (mode === 'fleet') {
      let told = Date.now();
      await until(
        `every replica to report fleet.mode "shared" with ${n} members`,
        async () => {
          checkAlive(replicas);
          // A replica too busy to answer within the scrape's time is not shared yet, as far as this wait knows.
          const views = await Promise.all(replicas.map((r) => fleetOf(r.port).catch(() => undefined)));
          if (Date.now() - told > 15_000) {
            told = Date.now();
            progress(`  waiting: ${views.map((v) => (v ? `${v.mode} (${v.members.length})` : 'no answer')).join(', ')}`);
          }
          return views.every((v) => v?.mode === 'shared' && v.members.length === n);
        },
        START_TIMEOUT_MS,
        500,
      );
    }
    const startupMs = Date.now() - spawnedAt;
    progress(
      `${mode}, ${n} x ${queues.length}: start-up over after ${(startupMs / 1000).toFixed(1)} s; one --poll-for more, then ${numbers.windowSec} s`,
    );
    // Polls sent while starting (and, in a fleet, while joining: every queue by every replica) last one --poll-for.
    await sleep(numbers.pollForSec * 1000 + 1_000);

    const pids = replicas.map((r) => r.run.child.pid!);
    const rssStart = pids.map((pid) => statusMiB(pid, 'VmRSS'));
    const rssMax = [...rssStart];
    const invokes0 = lambda.invocations.length;
    const from = Date.now();
    const receives0 = await Promise.all(replicas.map((r) => daemonSqsCalls(r.port)));
    const sampler = setInterval(() => {
      pids.forEach((pid, i) => (rssMax[i] = Math.max(rssMax[i]!, statusMiB(pid, 'VmRSS'))));
    }, RSS_EVERY_MS);
    await sleep(numbers.windowSec * 1000);
    clearInterval(sampler);
    const to = Date.now();
    // Node's event-loop delay since the scrape at the window's start (prom-client resets it at each scrape): read
    // before the counts' scrape resets it again.
    const lagMaxMs = await Promise.all(
      replicas.map(
        async (r) => 1000 * (sample((await page(r.port, '/metrics')).body, 'workerless_nodejs_eventloop_lag_max_seconds') ?? NaN),
      ),
    );
    const receives1 = await Promise.all(replicas.map((r) => daemonSqsCalls(r.port)));
    checkAlive(replicas);
    const views = mode === 'fleet' ? await Promise.all(replicas.map((r) => fleetOf(r.port).catch(() => undefined))) : undefined;
    const perMinute = (count: number) => (count * 60_000) / (to - from);
    const warnings = warningsOf(
      replicas.map((r) => r.run),
      from,
      to,
    );
    const replicaResults = replicas.map((r, i): ReplicaResult => {
      const at: Record<string, number[]> = {};
      for (const c of r.dynamo?.calls() ?? []) if (c.at >= from && c.at < to) (at[c.operation] ??= []).push(c.at);
      const byOperation = Object.fromEntries(Object.entries(at).map(([op, ats]) => [op, spacedPerMinute(ats, perMinute)]));
      const rssEnd = statusMiB(pids[i]!, 'VmRSS');
      return {
        receivesPerMinute: perMinute((receives1[i]!['ReceiveMessage'] ?? 0) - (receives0[i]!['ReceiveMessage'] ?? 0)),
        dynamoPerMinute: Object.values(byOperation).reduce((a, b) => a + b, 0),
        dynamoByOperation: byOperation,
        owned: views?.[i]?.owned,
        endMode: views?.[i]?.mode ?? (views ? 'no answer' : undefined),
        endMembers: views?.[i]?.members.length,
        peakRssMiB: statusMiB(pids[i]!, 'VmHWM'),
        rssStartMiB: rssStart[i]!,
        rssEndMiB: rssEnd,
        rssMaxMiB: Math.max(rssMax[i]!, rssEnd),
        warnings: warnings.counts[i]!,
        windowWarnings: warnings.inWindow[i]!,
        lagMaxMs: lagMaxMs[i]!,
        windowModeChanges: r.run
          .logs()
          .filter(
            (l) => typeof l['from'] === 'string' && typeof l['to'] === 'string' && Number(l['time']) >= from && Number(l['time']) < to,
          )
          .map((l) => `${String(l['from'])}->${String(l['to'])} at ${((Number(l['time']) - from) / 1000).toFixed(0)} s`),
      };
    });
    let proxy: Row['proxy'];
    if (sqsProxy) {
      const perQueue = receivesPerQueue(sqsProxy, names, from, to).map(perMinute);
      proxy = { mean: perQueue.reduce((a, b) => a + b, 0) / perQueue.length, min: Math.min(...perQueue), max: Math.max(...perQueue) };
    }
    return {
      mode,
      replicas: n,
      queues: queues.length,
      replicaResults,
      receivesPerQueueMinute: replicaResults.reduce((a, r) => a + r.receivesPerMinute, 0) / queues.length,
      proxy,
      startupMs,
      windowInvokes: lambda.invocations.length - invokes0,
      warningSample: warnings.sample,
    };
  } catch (err) {
    const { counts, sample: said } = warningsOf(replicas.map((r) => r.run));
    progress(
      `  ${mode}, ${n} x ${queues.length}: warnings logged per replica ${counts.join(' ')}${said.length > 0 ? `; ${said.join(' | ')}` : ''}`,
    );
    throw err;
  } finally {
    const stopping = Date.now();
    await Promise.all(
      replicas.map(async (r) => {
        await stopDaemon(r.run, 60_000);
        live.delete(r.run);
        await r.dynamo?.close();
      }),
    );
    progress(`${mode}, ${n} x ${queues.length}: stopped (SIGTERM) in ${((Date.now() - stopping) / 1000).toFixed(1)} s`);
    if (values.logs !== undefined) {
      mkdirSync(values.logs, { recursive: true });
      replicas.forEach((r, i) =>
        writeFileSync(join(values.logs!, `${mode}-${n}x${queues.length}-${i + 1}.log`), `${r.run.stdout()}${r.run.stderr()}`),
      );
    }
    await sqsProxy?.close();
    await lambda.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Calls a minute from their spacing, (count - 1) / (last - first): a heartbeat's calls are periodic, and a window
 * holds 15 or 16 rounds of 4 s depending on where its ends fall, which alone would read 30 or 32 a minute.
 * Fewer than 2 calls: `perMinute` of the count over the window.
 */
function spacedPerMinute(ats: readonly number[], perMinute: (count: number) => number): number {
  const span = ats.length < 2 ? 0 : ats[ats.length - 1]! - ats[0]!;
  return span > 0 ? ((ats.length - 1) * 60_000) / span : perMinute(ats.length);
}

/** N independent replicas pay N times one replica: the row not run, from the 1-replica row of the same queues. */
function computedRow(n: number, one: Row): Row {
  return {
    ...one,
    replicas: n,
    computedFrom: one,
    receivesPerQueueMinute: n * one.receivesPerQueueMinute,
    proxy: undefined,
  };
}

const fmt = (x: number | undefined, digits = 1) =>
  x === undefined || !Number.isFinite(x)
    ? '-'
    : x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const int = (x: number) => x.toLocaleString('en-US');
const max = (xs: readonly number[]) => Math.max(...xs);
const each = (xs: readonly number[]) => xs.map((x) => fmt(x, 0)).join(' ');

function byOperation(results: readonly ReplicaResult[]): string {
  const sums: Record<string, number> = {};
  for (const r of results) for (const [op, k] of Object.entries(r.dynamoByOperation)) sums[op] = (sums[op] ?? 0) + k / results.length;
  const ops = Object.entries(sums).sort((a, b) => b[1] - a[1]);
  return ops.length === 0 ? '-' : ops.map(([op, k]) => `${op} ${fmt(k)}`).join(', ');
}

function tableRow(row: Row, peer: Row | undefined): string {
  const rs = row.replicaResults;
  const ratio = row.mode === 'alone' ? '1 (the peer)' : peer ? `${fmt(row.receivesPerQueueMinute / peer.receivesPerQueueMinute, 2)}` : '-';
  const proxy = row.proxy ? `${fmt(row.proxy.mean)} (${fmt(row.proxy.min)}-${fmt(row.proxy.max)})` : '-';
  const dynamo =
    row.mode === 'fleet'
      ? `${fmt(rs.reduce((a, r) => a + r.dynamoPerMinute, 0) / rs.length)} (${fmt(max(rs.map((r) => r.dynamoPerMinute)))})`
      : '0';
  const computed = row.computedFrom ? ` (computed: ${row.replicas} x the 1-replica row; not run)` : '';
  const rss = row.computedFrom ? `as 1 replica: ${each(rs.map((r) => r.peakRssMiB))}` : each(rs.map((r) => r.peakRssMiB));
  const settled = row.computedFrom ? `as 1 replica: ${each(rs.map((r) => r.rssEndMiB))}` : each(rs.map((r) => r.rssEndMiB));
  const growth = row.computedFrom ? '-' : fmt(max(rs.map((r) => r.rssEndMiB - r.rssStartMiB)));
  return (
    `| ${row.mode === 'fleet' ? 'fleet' : 'no fleet'} | ${row.replicas} | ${int(row.queues)} | **${fmt(row.receivesPerQueueMinute, 2)}**${computed} | ${ratio} | ${proxy} | ` +
    `${dynamo} | ${row.mode === 'fleet' ? byOperation(rs) : '-'} | ${rss} | ${settled} | ${growth} | ${row.computedFrom ? '-' : fmt(row.startupMs / 1000)} |`
  );
}

function goals(row: Row, peer: Row | undefined): string[] {
  if (row.mode !== 'fleet') return [];
  const what = `${row.replicas} ${row.replicas === 1 ? 'replica' : 'replicas'}, ${int(row.queues)} queues`;
  const dynamoMax = max(row.replicaResults.map((r) => r.dynamoPerMinute));
  const lines: [string, boolean][] = [
    [
      `ReceiveMessage per queue per minute, the whole fleet: ${fmt(row.receivesPerQueueMinute, 2)} (<= ${GOAL_RECEIVES_PER_QUEUE_MINUTE}; without a fleet ${peer ? fmt(peer.receivesPerQueueMinute, 2) : '-'})`,
      row.receivesPerQueueMinute <= GOAL_RECEIVES_PER_QUEUE_MINUTE,
    ],
    [
      `DynamoDB calls per replica per minute: ${fmt(dynamoMax)} at most (<= ${GOAL_DYNAMO_PER_REPLICA_MINUTE})`,
      dynamoMax <= GOAL_DYNAMO_PER_REPLICA_MINUTE,
    ],
  ];
  if (row.proxy)
    lines.push([`every queue polled in the window (the counting proxy: fewest ${fmt(row.proxy.min)} a minute)`, row.proxy.min > 0]);
  const owned = row.replicaResults.reduce((a, r) => a + (r.owned ?? 0), 0);
  const shared = row.replicaResults.every((r) => r.endMode === 'shared' && r.endMembers === row.replicas);
  const changes = row.replicaResults.flatMap((r, i) => r.windowModeChanges.map((c) => `replica ${i + 1} ${c}`));
  lines.push([`no change of mode in the window${changes.length > 0 ? `: ${changes.join(', ')}` : ''}`, changes.length === 0]);
  lines.push([
    `still shared with ${row.replicas} members at the end of the window, owning ${int(owned)} of ${int(row.queues)} queues`,
    shared && owned === row.queues,
  ]);
  return lines.map(([text, ok]) => `  ${(ok ? 'met' : 'MISSED').padEnd(7)} ${what}: ${text}`);
}

function detailRows(row: Row): string[] {
  if (row.computedFrom) return [];
  return row.replicaResults.map(
    (r, i) =>
      `| ${row.mode === 'fleet' ? 'fleet' : 'no fleet'} | ${row.replicas} | ${int(row.queues)} | ${i + 1} | ${r.owned === undefined ? '-' : int(r.owned)} | ` +
      `${fmt(r.receivesPerMinute, 0)} | ${fmt(r.dynamoPerMinute)} | ${fmt(r.peakRssMiB, 0)} | ${fmt(r.rssStartMiB, 0)} -> ${fmt(r.rssEndMiB, 0)} (max ${fmt(r.rssMaxMiB, 0)}) | ${fmt(r.lagMaxMs, 0)} | ${r.warnings} (${r.windowWarnings}) | ${r.windowModeChanges.join(', ') || '-'} |`,
  );
}

const live = new Set<CliRun>();
process.on('exit', () => {
  for (const run of live) run.child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

const t0 = Date.now();
const { queues: pool, created } = await ensureQueues({
  endpoint: SQS_ENDPOINT,
  prefix: values.prefix,
  count: Math.max(...queueCounts),
  createBatch: numbers.createBatch,
});
progress(`${pool.length} queues ${values.prefix}-* at ${SQS_ENDPOINT} in ${fmt((Date.now() - t0) / 1000)} s (${created} created)`);
const table = uniqueTableName('wl-bench-fleet');
await createFleetTable(DYNAMO_ENDPOINT, table);
const rows: Row[] = [];
const startedAt = new Date();
try {
  for (const q of queueCounts) {
    for (const n of replicaCounts) {
      // Without a fleet first: each fleet row's ratio is printed as it is measured.
      for (const mode of (['alone', 'fleet'] as const).filter((m) => modes.includes(m))) {
        if (mode === 'alone' && n * q > numbers.maxPolls) {
          const one = rows.find((r) => r.mode === 'alone' && r.queues === q && r.replicas === 1 && !r.computedFrom);
          if (one) rows.push(computedRow(n, one));
          progress(`no fleet, ${n} x ${q}: ${int(n * q)} polls at once are more than --max-polls ${int(numbers.maxPolls)}: not run`);
          continue;
        }
        if (mode === 'fleet' && n * q > numbers.maxPolls)
          progress(
            `fleet, ${n} x ${q}: while joining every replica polls every queue, ${int(n * q)} polls (--max-polls ${int(numbers.maxPolls)})`,
          );
        progress(`${mode}, ${n} x ${q} queues...`);
        try {
          const row = await measureRow(mode, n, pool.slice(0, q), table);
          rows.push(row);
          const peer = rows.find((r) => r.mode === 'alone' && r.queues === q && r.replicas === n);
          progress(tableRow(row, mode === 'fleet' ? peer : undefined));
          if (row.windowInvokes > 0) progress(`  ${row.windowInvokes} invocations in the window: some queue was not empty`);
          if (row.warningSample.length > 0) progress(`  warnings: ${row.warningSample.join(' | ')}`);
        } catch (err) {
          progress(`${mode}, ${n} x ${q} FAILED: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    }
  }
} finally {
  await deleteTable(DYNAMO_ENDPOINT, table).catch(() => {});
}

const peerOf = (row: Row) => rows.find((r) => r.mode === 'alone' && r.queues === row.queues && r.replicas === row.replicas);
console.log(
  `${CLI}: --concurrency ${numbers.concurrency} --poll-for ${numbers.pollForSec} (one replica alone: ${fmt(ONE_REPLICA)} ReceiveMessage per idle queue per minute), ` +
    `the default --fleet-heartbeat; replicas started ${numbers.staggerSec > 0 ? `${numbers.staggerSec} s apart` : 'at once'}; ` +
    `window ${numbers.windowSec} s from one --poll-for after start-up; SQS ${SQS_ENDPOINT}, DynamoDB ${DYNAMO_ENDPOINT}; ` +
    `${startedAt.toISOString()}, Node ${process.version}, load average at the end ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
);
console.log(
  'Counted: ReceiveMessage by the replicas\' own workerless_aws_api_calls_total{service="sqs",operation="ReceiveMessage"} (/metrics), ' +
    'summed; the counting proxy column by test/support/fault-proxy.ts in front of ElasticMQ where the polls fit through it; ' +
    "DynamoDB calls by a counting proxy per replica in front of moto (the daemon does not count them), a minute from their spacing in the window. RSS: peak = VmHWM, settled = VmRSS at the window's end.",
);
console.log(
  '| fleet | replicas | queues | ReceiveMessage per queue per minute, all replicas | x without a fleet | counting proxy: per queue mean (fewest-most) | ' +
    'DynamoDB calls per replica per minute: mean (most) | by operation | peak RSS MiB, each replica | settled RSS MiB, each replica | RSS growth over the window MiB (most) | start-up over s |',
);
console.log('|---|--:|--:|--:|--:|--:|--:|---|---|---|--:|--:|');
for (const row of rows) console.log(tableRow(row, row.mode === 'fleet' ? peerOf(row) : undefined));
console.log('goals:');
for (const row of rows) for (const line of goals(row, peerOf(row))) console.log(line);
console.log('each replica:');
console.log(
  '| fleet | replicas | queues | replica | owned queues | ReceiveMessage per minute | DynamoDB calls per minute | peak RSS MiB | RSS MiB, window start -> end (most) | longest event-loop delay in the window ms | warnings logged (in the window) | fleet mode changes in the window |',
);
console.log('|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|---|');
for (const row of rows) for (const line of detailRows(row)) console.log(line);
