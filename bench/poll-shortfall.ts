// A backlog on one queue of many when the open-file limit allows fewer long polls than there are queues (issue 42):
// 1,000 queues at --concurrency 10 under `prlimit --nofile=256` leave about 100 polls, and the queues take turns.
// For each CLI (this build, and --cli builds beside it) and each limit (none, then 256), one run: the daemon starts
// on the queues, rests --settle-sec, then --messages messages are sent at once to one queue; printed: the time from
// the first send to the last invocation, the ReceiveMessage the daemon made meanwhile (its /metrics count), and the
// same for one probe sent to a random other queue afterwards (send -> Invoke), which waits for its queue's turn.
//
//   npm run build && node bench/poll-shortfall.ts [--queues 1000] [--messages 200] [--nofile 256] [--settle-sec 25]
//       [--cli other/dist/src/main.js ...] [--prefix wl-bench-short]
//
// Against the ElasticMQ at ELASTICMQ_ENDPOINT (default http://127.0.0.1:9324; scripts/sqs-servers.sh start
// elasticmq). Its queues are named <prefix>-0000 ... and kept, so the next run reuses them (each run drains what it
// sent). The figures, main's build on loopback: 0.7 s and 149 receives unlimited, 42 s and 86,446 under the
// limit; the goal: at most 3x the time and 3x the receives of the unlimited run.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CreateQueueCommand, SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { awsTestEnv, sqsClient } from '../test/support/aws.ts';
import { daemonSqsCalls, freePort, startIdleEndpoint } from './idle.ts';
import { shebangNodeFlags, until } from './support/consumer-process.ts';

const { values } = parseArgs({
  options: {
    queues: { type: 'string', default: '1000' },
    messages: { type: 'string', default: '200' },
    nofile: { type: 'string', default: '256' },
    'settle-sec': { type: 'string', default: '25' },
    cli: { type: 'string', multiple: true, default: [] },
    prefix: { type: 'string', default: 'wl-bench-short' },
  },
});
const QUEUES = Number(values.queues);
const MESSAGES = Number(values.messages);
const SETTLE_MS = Number(values['settle-sec']) * 1000;
const endpoint = process.env['ELASTICMQ_ENDPOINT'] ?? 'http://127.0.0.1:9324';
const here = (rel: string) => fileURLToPath(new URL(rel, import.meta.url));
const clis = [here('../dist/src/main.js'), ...values.cli];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row {
  readonly cli: string;
  readonly limit: string;
  readonly drainMs: number;
  readonly drainReceives: number;
  readonly probeMs: number;
}

async function queues(sqs: SQSClient): Promise<{ name: string; url: string }[]> {
  const names = Array.from({ length: QUEUES }, (_, i) => `${values.prefix}-${String(i).padStart(4, '0')}`);
  const out: { name: string; url: string }[] = [];
  for (let i = 0; i < names.length; i += 50) {
    const urls = await Promise.all(names.slice(i, i + 50).map((n) => sqs.send(new CreateQueueCommand({ QueueName: n }))));
    urls.forEach((u, k) => out.push({ name: names[i + k]!, url: u.QueueUrl! }));
  }
  return out;
}

async function run(cli: string, nofile: string | undefined, qs: readonly { name: string; url: string }[], sqs: SQSClient): Promise<Row> {
  const lambda = await startIdleEndpoint();
  const httpPort = await freePort();
  const config = join(mkdtempSync(join(tmpdir(), 'bench-short-')), 'workerless.json');
  writeFileSync(config, JSON.stringify({ queues: qs.map((q) => q.name) }));
  const node = [...shebangNodeFlags(cli), cli, '--metrics', 'off', '--log-level', 'warn', '--http-port', String(httpPort)];
  const args = [...node, '--function', 'idle-echo', '--config', config, '--concurrency', '10'];
  const [command, argv] =
    nofile === undefined ? [process.execPath, args] : ['prlimit', [`--nofile=${nofile}:${nofile}`, process.execPath, ...args]];
  const child: ChildProcess = spawn(command, argv, {
    env: {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      ...awsTestEnv({ lambdaEndpoint: lambda.url }),
      AWS_ENDPOINT_URL_SQS: endpoint,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await until(
      '/readyz 200',
      async () => (await fetch(`http://127.0.0.1:${httpPort}/readyz`).catch(() => undefined))?.status === 200,
      120_000,
      100,
    );
    await sleep(SETTLE_MS);
    const target = qs[Math.floor(qs.length / 2)]!;
    const before = (await daemonSqsCalls(httpPort))['ReceiveMessage'] ?? 0;
    const invoked0 = lambda.invocations.length;
    const sentAt = Date.now();
    await Promise.all(
      Array.from({ length: MESSAGES / 10 }, (_, b) =>
        sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: target.url,
            Entries: Array.from({ length: 10 }, (_, k) => ({ Id: String(k), MessageBody: `m-${b}-${k}` })),
          }),
        ),
      ),
    );
    const records = () =>
      lambda.invocations.slice(invoked0).reduce((n, inv) => n + ((inv.payload as { Records?: unknown[] }).Records?.length ?? 0), 0);
    await until('the backlog invoked', () => records() >= MESSAGES, 300_000, 20);
    const drainMs = Math.max(...lambda.invocations.slice(invoked0).map((i) => i.startedAt)) - sentAt;
    const drainReceives = ((await daemonSqsCalls(httpPort))['ReceiveMessage'] ?? 0) - before;
    // One message to another queue, once the loops are idle again: it waits for its queue's turn for a poll.
    await sleep(3_000);
    const probeQueue = qs[(Math.floor(qs.length / 2) + 1 + Math.floor(Math.random() * (qs.length - 1))) % qs.length]!;
    const invoked1 = lambda.invocations.length;
    const probeAt = Date.now();
    await sqs.send(new SendMessageCommand({ QueueUrl: probeQueue.url, MessageBody: 'probe' }));
    await until('the probe invoked', () => lambda.invocations.length > invoked1, 300_000, 20);
    const probeMs = lambda.invocations[invoked1]!.startedAt - probeAt;
    return { cli, limit: nofile ?? 'none', drainMs, drainReceives, probeMs };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await lambda.stop();
  }
}

const sqs = sqsClient(endpoint);
const qs = await queues(sqs);
const rows: Row[] = [];
// Alternated: each CLI unlimited, then under the limit, so a noisy moment hits both.
for (const nofile of [undefined, values.nofile])
  for (const cli of clis) {
    const row = await run(cli, nofile, qs, sqs);
    rows.push(row);
    console.log(
      `${row.cli}  limit ${row.limit}: ${MESSAGES} messages on one of ${QUEUES} queues drained in ${row.drainMs} ms with ${row.drainReceives} ReceiveMessage; a probe to another queue ${row.probeMs} ms`,
    );
  }
sqs.destroy();
