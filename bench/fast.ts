// CPU per message, throughput and memory of SQS -> Lambda consumers against a fast fake AWS endpoint
// (bench/fast/fake-aws.ts, in its own process), so that the figures are the consumer's own cost and not
// LocalStack's. Consumers, side by side in one run:
//   naive          bench/peers/naive-consumer.ts: the hand-rolled AWS SDK loop (receive, invoke, delete)
//   sqs-consumer   bench/peers/sqs-consumer-peer.ts: npm sqs-consumer with an Invoke per message
//   go-loop        bench/peers/go-loop: the original Workerless's shape in Go on aws-sdk-go-v2 (goroutine workers,
//                  receive 1, invoke, delete; 2 kept sockets per worker), built here with the machine's Go
//   floor-3        bench/peers/floor-consumer.ts --shape 3: no SDK, SigV4 + node:http, 3 calls per message
//   floor-1.2      the same with one shared receive and one delete per 10 messages
//   workerless     the built CLI (dist/src/main.js) with its default AWS client
//   workerless-sdk the built CLI with --aws-client sdk (the AWS SDK clients on the hot path)
//
//   npm run build && node bench/fast.ts [--runs 3] [--scale 1] [--shapes c10,c100,c10b10,c1000] [--c10000]
//                                       [--consumers naive,workerless,...] [--verbose]
//                                       [--cli other-build/src/main.js] [--cpu-prof DIR] [--tls]
//
// --tls: every consumer speaks HTTPS to the fake (bench/fast/fake-aws.ts --tls, test/fixtures/tls's certificate for
// "localhost"), as real SQS and Lambda speak only HTTPS, each with keep-alive and TLS session reuse as it does it by
// default: workerless one shared TLS context and the last session per origin (src/aws/http1-pool.ts), the Node
// peers node:https's keep-alive Agent (a session cache of 100), the Go loop net/http's Transport with idle
// connections kept (aws-sdk-go-v2 sets no ClientSessionCache: a new connection makes a full handshake). The Node
// consumers trust the certificate through NODE_EXTRA_CA_CERTS, the Go loop through SSL_CERT_FILE (crypto/x509's
// own variable: AWS_CA_BUNDLE would need the SDK's own HTTP client, and the loop wraps it to count the calls).
//
// Every figure is the median of --runs runs (consumers alternate within each round), measured from the end
// of the consumer's start-up (its ready line) until the fake has seen every message deleted (or the shape's
// time cap): CPU is utime+stime of the consumer process from /proc/<pid>/stat, RSS its peak (VmHWM).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import tls from 'node:tls';
import { parseArgs } from 'node:util';
import { buildBenchJs, buildGoLoop, live, shebangNodeFlags, spawnConsumer, type ConsumerProcess } from './support/consumer-process.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    scale: { type: 'string', default: '1' },
    shapes: { type: 'string' },
    consumers: { type: 'string' },
    c10000: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    cli: { type: 'string' },
    'cpu-prof': { type: 'string' },
    tls: { type: 'boolean', default: false },
  },
});
const RUNS = Number(values.runs);
const SCALE = Number(values.scale);
if (!Number.isInteger(RUNS) || RUNS < 1 || !(SCALE > 0)) {
  process.stderr.write(
    'usage: node bench/fast.ts [--runs 3] [--scale 1] [--shapes c10,c100,c10b10,c1000,c10000] [--c10000] [--consumers a,b] [--verbose]\n' +
      '                          [--cli other-build/src/main.js] [--cpu-prof DIR] [--tls]\n',
  );
  process.exit(2);
}

const here = (rel: string) => fileURLToPath(new URL(rel, import.meta.url));
// --cli: another build of workerless (an A/B against a copy of dist/ from another commit).
const CLI = values.cli ?? here('../dist/src/main.js');
// --cpu-prof DIR: workerless writes a V8 CPU profile there on exit (a capped run is then stopped with SIGTERM, not killed).
const CPU_PROF_DIR = values['cpu-prof'];
const FAKE = here('./fast/fake-aws.ts');
const TLS = values.tls;
/** The fake's certificate over --tls (self-signed for "localhost"): trusted here for the control calls, and by each consumer. */
const TLS_CERT = here('../test/fixtures/tls/localhost-cert.pem');
if (TLS) tls.setDefaultCACertificates([...tls.getCACertificates('default'), readFileSync(TLS_CERT, 'utf8')]);
// The peers and the preload run as JavaScript built here (dist/bench): a .ts file loaded by Node brings its
// type stripper (about 17 MiB of resident memory) into the process that is measured.
buildBenchJs();
const COUNTER = here('../dist/bench/support/sdk-call-counter.js');
const CLI_NODE_FLAGS = shebangNodeFlags(CLI);
const FUNCTION_NAME = 'bench-fn';
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

type Kind = 'naive' | 'sqs-consumer' | 'go-loop' | 'floor-3' | 'floor-1.2' | 'workerless' | 'workerless-sdk';
const ALL_KINDS: readonly Kind[] = ['naive', 'sqs-consumer', 'go-loop', 'floor-3', 'floor-1.2', 'workerless-sdk', 'workerless'];

interface Shape {
  readonly id: string;
  readonly label: string;
  readonly concurrency: number;
  readonly batch: number;
  readonly invokeMs: number;
  readonly messages: number;
  /** The window closes after this long even if messages are left (slow consumers at high concurrency). */
  readonly capSec: number;
  readonly kinds: readonly Kind[];
  readonly runs: number;
}

const SHAPES: readonly Shape[] = [
  { id: 'c10', label: 'c=10, batch 1', concurrency: 10, batch: 1, invokeMs: 0, messages: 3000, capSec: 20, kinds: ALL_KINDS, runs: RUNS },
  {
    id: 'c100',
    label: 'c=100, batch 1',
    concurrency: 100,
    batch: 1,
    invokeMs: 0,
    messages: 5000,
    capSec: 20,
    kinds: ALL_KINDS,
    runs: RUNS,
  },
  {
    id: 'c10b10',
    label: 'c=10, batch 10',
    concurrency: 10,
    batch: 10,
    invokeMs: 0,
    messages: 15000,
    capSec: 20,
    kinds: ['naive', 'sqs-consumer', 'go-loop', 'workerless-sdk', 'workerless'],
    runs: RUNS,
  },
  {
    id: 'c1000',
    label: 'c=1000, 2 s invocations',
    concurrency: 1000,
    batch: 1,
    invokeMs: 2000,
    messages: 4000,
    capSec: 12,
    kinds: ['naive', 'floor-3', 'floor-1.2', 'workerless-sdk', 'workerless'],
    runs: RUNS,
  },
  {
    id: 'c10000',
    label: 'c=10000, 10 s invocations',
    concurrency: 10000,
    batch: 1,
    invokeMs: 10000,
    messages: 40000,
    capSec: 45,
    kinds: ['floor-3', 'floor-1.2', 'workerless-sdk', 'workerless'],
    runs: 1,
  },
];

const wantedShapes = new Set((values.shapes ?? `c10,c100,c10b10,c1000${values.c10000 ? ',c10000' : ''}`).split(','));
const wantedKinds = values.consumers ? new Set(values.consumers.split(',')) : undefined;
// The Go peer is built from bench/peers/go-loop with the machine's Go toolchain (modules from the Go proxy).
const GO_LOOP = wantedKinds === undefined || wantedKinds.has('go-loop') ? buildGoLoop() : undefined;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const verbose = (text: string) => {
  if (values.verbose) process.stderr.write(`  ${text}\n`);
};

/** CPU ms (utime + stime, all threads) from /proc/<pid>/stat. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

/** Peak resident set size (VmHWM) in MiB. */
function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const child of live) child.kill('SIGKILL');
    process.exit(130);
  });
}

// The fake endpoint, in its own process.
interface FakeStats {
  deleted: number;
  invoked: number;
  receiveCalls: number;
  maxInFlightInvokes: number;
}
const fake = spawn(process.execPath, [FAKE, ...(TLS ? ['--tls'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
live.add(fake);
const fakePort = await new Promise<number>((resolve, reject) => {
  fake.stdout.setEncoding('utf8').once('data', (line: string) => resolve((JSON.parse(line) as { port: number }).port));
  fake.once('exit', (code) => reject(new Error(`the fake endpoint exited (${code})`)));
});
const endpoint = TLS ? `https://localhost:${fakePort}` : `http://127.0.0.1:${fakePort}`;
async function control<T>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${endpoint}${path}`, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) });
  return (await res.json()) as T;
}

/**
 * The environment every consumer gets: the fake as its one endpoint, fixed credentials, no profile files; over
 * --tls, the fake's certificate trusted as each kind of program is told to (the header).
 */
function awsEnv(kind: Kind): NodeJS.ProcessEnv {
  return {
    ...(TLS ? (kind === 'go-loop' ? { SSL_CERT_FILE: TLS_CERT } : { NODE_EXTRA_CA_CERTS: TLS_CERT }) : {}),
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL: endpoint,
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
  };
}

/** A consumer under test; its snapshots carry the call counts and the V8 heap. */
type Consumer = ConsumerProcess<{ calls: Record<string, number>; heap: { peakUsedMiB: number; usedMiB: number } }>;

function startConsumer(kind: Kind, shape: Shape, queueUrl: string, callsFile: string): Consumer {
  const c = String(shape.concurrency);
  const b = String(shape.batch);
  const peerArgs = ['--queue-url', queueUrl, '--function', FUNCTION_NAME, '--concurrency', c];
  const peer = (file: string, extra: string[] = []) => [here(`../dist/bench/peers/${file}`), ...peerArgs, ...extra];
  if (kind === 'go-loop') {
    // A native program: no Node flags, no preload (it writes the same snapshots itself).
    return spawnConsumer({
      name: kind,
      command: GO_LOOP,
      args: [...peerArgs, '--batch-size', b],
      env: awsEnv(kind),
      callsFile,
      readyMsg: 'ready',
      snapshotTimeoutMs: 60_000,
    });
  }
  const args =
    kind === 'naive'
      ? peer('naive-consumer.js', ['--batch-size', b])
      : kind === 'sqs-consumer'
        ? peer('sqs-consumer-peer.js', ['--batch-size', b])
        : kind === 'floor-3' || kind === 'floor-1.2'
          ? peer('floor-consumer.js', ['--shape', kind.slice('floor-'.length)])
          : [
              CLI,
              '--function',
              FUNCTION_NAME,
              '--queues',
              queueUrl,
              '--batch-size',
              b,
              '--concurrency',
              c,
              '--metrics',
              'off',
              '--poll-for',
              '1',
              '--log-level',
              'info',
              ...(kind === 'workerless-sdk' ? ['--aws-client', 'sdk'] : []),
            ];
  return spawnConsumer({
    name: kind,
    // workerless runs with the V8 flags its installed command (the script's #! line) gives Node.
    args: [
      ...(kind.startsWith('workerless')
        ? [...CLI_NODE_FLAGS, ...(CPU_PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF_DIR] : [])]
        : []),
      '--import',
      COUNTER,
      ...args,
    ],
    env: awsEnv(kind),
    callsFile,
    readyMsg: kind.startsWith('workerless') ? 'workerless started' : 'ready',
    // A consumer starting 10,000 loops can keep its event loop busy for a while.
    snapshotTimeoutMs: 60_000,
  });
}

interface RunResult {
  kind: Kind;
  shape: string;
  messages: number;
  wallSec: number;
  msgPerSec: number;
  /** Long invocations: concurrency x cycles / the time between the middles of the first and the last wave (runOnce). */
  cycleMsgPerSec: number | undefined;
  cpuUsPerMsg: number;
  rssMiB: number;
  peakHeapMiB: number;
  callsPerMsg: number;
  calls: Record<string, number>;
  fakeCpuPct: number;
  exitCode: number | null;
}

const tmp = mkdtempSync(join(tmpdir(), 'bench-fast-'));
let queueSeq = 0;

async function runOnce(kind: Kind, shape: Shape): Promise<RunResult> {
  queueSeq += 1;
  const messages = Math.round(shape.messages * SCALE);
  const { url } = await control<{ url: string }>('/_bench/reset', { queue: `bench-${queueSeq}`, messages, invokeMs: shape.invokeMs });
  const consumer = startConsumer(kind, shape, url, join(tmp, `calls-${queueSeq}.json`));
  await Promise.race([
    consumer.ready,
    sleep(60_000).then(() => Promise.reject(new Error(`${kind} not ready in 60 s:\n${consumer.output()}`))),
  ]);
  const before = await consumer.snapshot();
  const deleted0 = (await control<FakeStats>('/_bench/stats')).deleted;
  const cpu0 = cpuMs(consumer.pid);
  const fakeCpu0 = cpuMs(fake.pid!);
  const t0 = performance.now();
  let stats: FakeStats = await control<FakeStats>('/_bench/stats');
  // With long invocations nothing completes during the first invocationMs: msg/s is counted from a second
  // mark after that ramp (the steady rate the ceiling refers to); CPU per message still covers the whole window.
  let mark: { t: number; deleted: number } | undefined;
  // The same rate by whole cycles: the invocations of the first wave end together, and so, a little more spread
  // each time, do those of every later wave. Each loop settles one message per cycle, so the count of deleted
  // messages passes the middle of wave k, (k - 0.5) x concurrency, once per cycle: the time between the first
  // and the last such mark is whole cycles of the median loop. Unlike the window above, it does not depend on
  // where the window's ends fall among the waves (which put that figure above the ceiling in some runs).
  const cycles: number[] = [];
  let lastTrace = t0;
  while (stats.deleted < messages && performance.now() - t0 < shape.capSec * 1000) {
    if (consumer.child.exitCode !== null) throw new Error(`${kind} exited during the run:\n${consumer.output()}`);
    await sleep(25);
    stats = await control<FakeStats>('/_bench/stats');
    if (values.verbose && performance.now() - lastTrace >= 1000) {
      lastTrace = performance.now();
      verbose(`${kind} at ${((lastTrace - t0) / 1000).toFixed(1)} s: ${stats.deleted - deleted0} deleted, ${JSON.stringify(stats)}`);
    }
    if (shape.invokeMs > 0 && mark === undefined && performance.now() - t0 >= shape.invokeMs + 1000)
      mark = { t: performance.now(), deleted: stats.deleted };
    if (shape.invokeMs > 0 && stats.deleted - deleted0 >= (cycles.length + 0.5) * shape.concurrency) cycles.push(performance.now());
  }
  const tEnd = performance.now();
  const wallSec = (tEnd - t0) / 1000;
  const steady = mark && tEnd - mark.t >= 2000 ? (stats.deleted - mark.deleted) / ((tEnd - mark.t) / 1000) : undefined;
  const cpu = cpuMs(consumer.pid) - cpu0;
  const fakeCpu = cpuMs(fake.pid!) - fakeCpu0;
  const rssMiB = peakRssMiB(consumer.pid);
  const after = await consumer.snapshot();
  const done = stats.deleted - deleted0;
  const calls: Record<string, number> = {};
  for (const [op, n] of Object.entries(after.calls)) {
    const d = n - (before.calls[op] ?? 0);
    if (d > 0) calls[op] = d;
  }
  const totalCalls = Object.values(calls).reduce((a, b) => a + b, 0);
  // A run that emptied the queue stops cleanly (exit 0 expected); a capped one still has long invocations in flight.
  let exitCode: number | null;
  if (stats.deleted >= messages) {
    consumer.child.kill('SIGTERM');
    const timer = setTimeout(() => consumer.child.kill('SIGKILL'), CPU_PROF_DIR ? 120_000 : 15_000);
    exitCode = await consumer.exited;
    clearTimeout(timer);
  } else {
    consumer.child.kill(CPU_PROF_DIR && kind.startsWith('workerless') ? 'SIGTERM' : 'SIGKILL');
    await consumer.exited;
    exitCode = null;
  }
  return {
    kind,
    shape: shape.id,
    messages: done,
    wallSec,
    msgPerSec: steady ?? done / wallSec,
    cycleMsgPerSec: cycles.length >= 2 ? ((cycles.length - 1) * shape.concurrency) / ((cycles.at(-1)! - cycles[0]!) / 1000) : undefined,
    cpuUsPerMsg: (cpu * 1000) / Math.max(1, done),
    rssMiB,
    peakHeapMiB: after.heap.peakUsedMiB,
    callsPerMsg: totalCalls / Math.max(1, done),
    calls,
    fakeCpuPct: fakeCpu / 10 / wallSec,
    exitCode,
  };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const fmt = (x: number | undefined, digits = 0) =>
  x === undefined || Number.isNaN(x) ? '-' : x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

const results: RunResult[] = [];
const cpuModel = cpus()[0]?.model.trim() ?? 'unknown CPU';
const sdkVersion = (JSON.parse(readFileSync(here('../node_modules/@aws-sdk/client-sqs/package.json'), 'utf8')) as { version: string })
  .version;
process.stdout.write(
  `bench/fast: ${cpus().length} cores (${cpuModel}), Node ${process.version}, @aws-sdk/client-sqs ${sdkVersion}, load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}; fake endpoint ${endpoint}${TLS ? ' over HTTPS (test/fixtures/tls)' : ''} (own process); ` +
    `${RUNS} runs per consumer and shape (c=10000: 1), messages x${SCALE}\n`,
);
for (const shape of SHAPES.filter((s) => wantedShapes.has(s.id))) {
  const kinds = shape.kinds.filter((k) => !wantedKinds || wantedKinds.has(k));
  for (let run = 1; run <= shape.runs; run++) {
    for (const kind of kinds) {
      let r: RunResult;
      try {
        r = await runOnce(kind, shape);
      } catch (err) {
        // One failed run (a consumer that crashed or hung) is reported and left out; the table still prints.
        process.stdout.write(
          `  ${shape.id.padEnd(7)} run ${run} ${kind.padEnd(14)} FAILED: ${String(err).split('\n').slice(0, 3).join(' ')}\n`,
        );
        for (const child of [...live].filter((c) => c !== fake)) child.kill('SIGKILL');
        continue;
      }
      results.push(r);
      process.stdout.write(
        `  ${shape.id.padEnd(7)} run ${run} ${kind.padEnd(14)} ${fmt(r.messages)} msgs in ${fmt(r.wallSec, 2)} s = ${fmt(r.msgPerSec)} msg/s` +
          `${r.cycleMsgPerSec === undefined ? '' : ` (by cycle ${fmt(r.cycleMsgPerSec)})`}, ` +
          `CPU ${fmt(r.cpuUsPerMsg)} us/msg, peak RSS ${fmt(r.rssMiB)} MiB, peak heap ${fmt(r.peakHeapMiB)} MiB, ` +
          `${fmt(r.callsPerMsg, 2)} calls/msg (${Object.entries(r.calls)
            .map(([op, n]) => `${op} ${n}`)
            .join(', ')}), fake CPU ${fmt(r.fakeCpuPct)}%` +
          `${r.exitCode === null ? ', capped' : r.exitCode === 0 ? '' : `, EXIT ${r.exitCode}`}\n`,
      );
      verbose(`fake stats after the run: ${JSON.stringify(await control('/_bench/stats'))}`);
    }
  }
}
fake.kill('SIGTERM');

// Medians per consumer and shape.
const med = (kind: Kind, shape: string, pick: (r: RunResult) => number): number | undefined => {
  const rs = results.filter((r) => r.kind === kind && r.shape === shape);
  return rs.length ? median(rs.map(pick)) : undefined;
};
const kindsSeen = ALL_KINDS.filter((k) => results.some((r) => r.kind === k));
const LABEL: Record<Kind, string> = {
  naive: 'naive AWS SDK loop (receive, invoke, delete)',
  'sqs-consumer': 'sqs-consumer + Invoke',
  'go-loop': 'Go loop on aws-sdk-go-v2 (the original Workerless shape)',
  'floor-3': 'no SDK, 3 calls/message',
  'floor-1.2': 'no SDK, shared receive + delete per 10 (1.2 calls/message)',
  'workerless-sdk': 'workerless --aws-client sdk',
  workerless: 'workerless (default AWS client)',
};
const rssRange = (kind: Kind) => {
  const rs = results.filter((r) => r.kind === kind && ['c10', 'c100', 'c10b10'].includes(r.shape)).map((r) => r.rssMiB);
  return rs.length ? `${fmt(Math.min(...rs))}-${fmt(Math.max(...rs))}` : '-';
};
const small = results.some((r) => ['c10', 'c100', 'c10b10'].includes(r.shape));
const lines = [
  '| consumer | c=10, batch 1: CPU us/msg | msg/s | c=100, batch 1: CPU us/msg | msg/s | c=10, batch 10: CPU us/msg | msg/s | RSS MiB at c=100 | RSS MiB, range | peak heap MiB at c=100 |',
  '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ...kindsSeen.map(
    (k) =>
      `| ${LABEL[k]} | ${fmt(med(k, 'c10', (r) => r.cpuUsPerMsg))} | ${fmt(med(k, 'c10', (r) => r.msgPerSec))} | ${fmt(med(k, 'c100', (r) => r.cpuUsPerMsg))} | ` +
      `${fmt(med(k, 'c100', (r) => r.msgPerSec))} | ${fmt(med(k, 'c10b10', (r) => r.cpuUsPerMsg))} | ${fmt(med(k, 'c10b10', (r) => r.msgPerSec))} | ` +
      `${fmt(med(k, 'c100', (r) => r.rssMiB))} | ${rssRange(k)} | ${fmt(med(k, 'c100', (r) => r.peakHeapMiB))} |`,
  ),
].filter(() => small);
const big = SHAPES.filter((s) => (s.id === 'c1000' || s.id === 'c10000') && results.some((r) => r.shape === s.id));
if (big.length) {
  lines.push(
    '',
    `| consumer | ${big.map((s) => `${s.label}: msg/s | CPU us/msg | peak RSS MiB | peak heap MiB`).join(' | ')} |`,
    `|---|${big.map(() => '--:|--:|--:|--:').join('|')}|`,
  );
  for (const k of kindsSeen.filter((k) => big.some((s) => s.kinds.includes(k)))) {
    lines.push(
      `| ${LABEL[k]} | ${big.map((s) => [med(k, s.id, (r) => r.msgPerSec), med(k, s.id, (r) => r.cpuUsPerMsg), med(k, s.id, (r) => r.rssMiB), med(k, s.id, (r) => r.peakHeapMiB)].map((x) => fmt(x)).join(' | ')).join(' | ')} |`,
    );
  }
}
lines.push(
  '',
  '| consumer | calls/msg: ' +
    SHAPES.filter((s) => results.some((r) => r.shape === s.id))
      .map((s) => s.id)
      .join(' | ') +
    ' |',
);
for (const k of kindsSeen)
  lines.push(
    `| ${k} | ${SHAPES.filter((s) => results.some((r) => r.shape === s.id))
      .map((s) =>
        fmt(
          med(k, s.id, (r) => r.callsPerMsg),
          2,
        ),
      )
      .join(' | ')} |`,
  );
process.stdout.write(`\n${lines.join('\n')}\n\n`);

// The goals (issues 13 and 24), for workerless (lean) and, for comparison, workerless --aws-client sdk.
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : a / b);
const verdict = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'MET' : 'MISSED');
for (const w of (['workerless', 'workerless-sdk'] as const).filter((k) => kindsSeen.includes(k))) {
  const goals: [string, number | undefined, (x: number) => boolean, string][] = [
    [
      'batch 1, c=10: CPU/msg vs no-SDK floor with the same call shape (1.2 calls/msg)',
      ratio(
        med(w, 'c10', (r) => r.cpuUsPerMsg),
        med('floor-1.2', 'c10', (r) => r.cpuUsPerMsg),
      ),
      (x) => x <= 1.5,
      '<= 1.5x',
    ],
    [
      'batch 1, c=10: CPU/msg vs the Go loop on aws-sdk-go-v2',
      ratio(
        med(w, 'c10', (r) => r.cpuUsPerMsg),
        med('go-loop', 'c10', (r) => r.cpuUsPerMsg),
      ),
      (x) => x <= 0.8,
      '<= 0.8x',
    ],
    [
      'batch 10: CPU/msg vs naive SDK loop',
      ratio(
        med(w, 'c10b10', (r) => r.cpuUsPerMsg),
        med('naive', 'c10b10', (r) => r.cpuUsPerMsg),
      ),
      (x) => x <= 0.8,
      '<= 0.8x',
    ],
    [
      'batch 1, c=10: msg/s vs sqs-consumer',
      ratio(
        med(w, 'c10', (r) => r.msgPerSec),
        med('sqs-consumer', 'c10', (r) => r.msgPerSec),
      ),
      (x) => x >= 3,
      '>= 3x',
    ],
    [
      'batch 1, c=100: msg/s vs sqs-consumer',
      ratio(
        med(w, 'c100', (r) => r.msgPerSec),
        med('sqs-consumer', 'c100', (r) => r.msgPerSec),
      ),
      (x) => x >= 3,
      '>= 3x',
    ],
    ['c=10: peak RSS MiB', med(w, 'c10', (r) => r.rssMiB), (x) => x <= 75, '<= 75'],
    ['c=100: peak RSS MiB', med(w, 'c100', (r) => r.rssMiB), (x) => x <= 80, '<= 80'],
    [
      'c=1000, 2 s invocations: CPU/msg vs c=10',
      ratio(
        med(w, 'c1000', (r) => r.cpuUsPerMsg),
        med(w, 'c10', (r) => r.cpuUsPerMsg),
      ),
      (x) => x <= 1.3,
      '<= 1.3x',
    ],
    [
      'c=10000, 10 s invocations: msg/s vs the 1,000 msg/s ceiling',
      ratio(
        med(w, 'c10000', (r) => r.msgPerSec),
        1000,
      ),
      (x) => x >= 0.95,
      '>= 0.95',
    ],
    [
      'c=10000: peak RSS vs the no-SDK loop (floor-3)',
      ratio(
        med(w, 'c10000', (r) => r.rssMiB),
        med('floor-3', 'c10000', (r) => r.rssMiB),
      ),
      (x) => x <= 1.2,
      '<= 1.2x',
    ],
  ];
  process.stdout.write(`goals for ${w}${TLS ? ', every consumer over HTTPS' : ''}:\n`);
  for (const [what, x, ok, target] of goals)
    process.stdout.write(`  ${verdict(x === undefined ? undefined : ok(x)).padEnd(12)} ${what}: ${fmt(x, 2)} (goal ${target})\n`);
  // Not a goal: the same c=10000 rate by whole cycles, next to the floors' (see cycleMsgPerSec).
  const byCycle = (k: Kind) =>
    ratio(
      med(k, 'c10000', (r) => r.cycleMsgPerSec ?? Number.NaN),
      1000,
    );
  if (byCycle(w) !== undefined)
    process.stdout.write(
      `  ${'INFO'.padEnd(12)} c=10000 msg/s by whole cycles vs the ceiling: ${fmt(byCycle(w), 2)} ` +
        `(floor-1.2 ${fmt(byCycle('floor-1.2'), 2)}, floor-3 ${fmt(byCycle('floor-3'), 2)})\n`,
    );
}
process.stdout.write(
  'Medians over the runs. CPU = consumer utime+stime over the window / messages deleted in it; msg/s with long invocations counted after the first ones end (by cycle: concurrency x cycles / time between the middles of the first and the last wave of invocations ending); RSS = VmHWM; heap = peak V8 heapUsed sampled every 250 ms.\n',
);
