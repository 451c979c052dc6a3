// The demo behind `npm run demo` (scripts/demo.sh starts LocalStack and builds first): a demo function behind
// the test Lambda endpoint, three prioritised queues, and the real CLI dispatching them, first in strict and
// then in weighted order. Prints what was dispatched in which order. Then it runs the daemon with --http-port
// and a trickle of messages, prints the status page's address, and holds for DEMO_HOLD_SEC (default 60) or until
// Ctrl-C, before stopping everything. DEMO_HTTP_PORT picks the port (default 8080, or a free one when taken).
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { GetQueueUrlCommand, PurgeQueueCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startLambdaEndpoint } from '../test/support/lambda-endpoint/server.ts';

const LOCALSTACK = process.env['LOCALSTACK_ENDPOINT'] ?? 'http://127.0.0.1:4566';
const QUEUES = ['workerless-demo-high', 'workerless-demo-default', 'workerless-demo-low'];
const SHORT: Record<string, string> = { 'workerless-demo-high': 'H', 'workerless-demo-default': 'D', 'workerless-demo-low': 'L' };
const aws = { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_REGION: 'us-east-1' };
Object.assign(process.env, aws);

const sqs = new SQSClient({ endpoint: LOCALSTACK });
const endpoint = await startLambdaEndpoint({
  functions: {
    'workerless-demo': { handler: fileURLToPath(new URL('../localstack/functions/demo.mjs', import.meta.url)), timeoutSec: 10 },
  },
  handlerOutput: 'ignore',
});

async function fill(perQueue: number): Promise<void> {
  for (const name of QUEUES) {
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
    await sqs.send(new PurgeQueueCommand({ QueueUrl }));
    for (let i = 0; i < perQueue; i += 10) {
      const entries = Array.from({ length: Math.min(10, perQueue - i) }, (_, k) => ({
        Id: String(k),
        MessageBody: `${SHORT[name]}${i + k + 1}`,
      }));
      await sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries: entries }));
    }
  }
}

/** The built CLI serving `queues` with the demo function (1 s polls, no metrics); its output goes to this terminal. */
function startDaemon(queues: string, concurrency: number, args: string[]) {
  const cli = fileURLToPath(new URL('../dist/src/main.js', import.meta.url));
  const child = spawn(
    process.execPath,
    [
      cli,
      '--function',
      'workerless-demo',
      '--queues',
      queues,
      '--concurrency',
      String(concurrency),
      '--poll-for',
      '1',
      '--metrics',
      'off',
      ...args,
    ],
    {
      env: {
        ...process.env,
        AWS_ENDPOINT_URL_SQS: LOCALSTACK,
        AWS_ENDPOINT_URL_CLOUDWATCH: LOCALSTACK,
        AWS_ENDPOINT_URL_LAMBDA: endpoint.url,
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { child, exited };
}

async function dispatch(title: string, queues: string, concurrency: number, expected: number): Promise<void> {
  endpoint.reset();
  console.log(`\n== ${title}\n   workerless --function workerless-demo --queues ${queues} --concurrency ${concurrency}`);
  const { child, exited } = startDaemon(queues, concurrency, ['--log-level', 'warn']);
  await endpoint.waitFor((inv) => inv.filter((i) => i.status === 'success').length >= expected, 60_000);
  child.kill('SIGTERM');
  const code = await exited;
  const order = endpoint.invocations.map((i) => {
    const records = (i.payload as { Records: { eventSourceARN: string }[] }).Records;
    return SHORT[records[0]!.eventSourceARN.split(':').pop()!] ?? '?';
  });
  console.log(`   dispatch order: ${order.join('')}`);
  const firstHalf = order.slice(0, Math.floor(order.length / 2));
  const share = (q: string) => `${q} ${firstHalf.filter((x) => x === q).length}`;
  console.log(
    `   first ${firstHalf.length} invocations: ${['H', 'D', 'L'].map(share).join(', ')}; workerless exited with ${code} after SIGTERM`,
  );
}

/** `preferred` when it is free on 127.0.0.1, else a free port. */
async function pickPort(preferred: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | undefined>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(undefined));
      server.listen(port, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(address !== null && typeof address === 'object' ? address.port : undefined));
      });
    });
  return (await tryListen(preferred)) ?? (await tryListen(0)) ?? preferred;
}

/** The daemon with its HTTP server, fed a trickle of messages until the hold ends or Ctrl-C. */
async function statusPage(holdSec: number): Promise<void> {
  endpoint.reset();
  const port = await pickPort(Number(process.env['DEMO_HTTP_PORT'] ?? 8080));
  const queues = `${QUEUES[0]}:3,${QUEUES[1]}:2,${QUEUES[2]}:1`;
  console.log(`\n== status page: workerless --function workerless-demo --queues ${queues} --concurrency 2 --http-port ${port}`);
  const { child, exited } = startDaemon(queues, 2, ['--log-level', 'error', '--http-port', String(port)]);
  const base = `http://127.0.0.1:${port}`;
  // Ready once the start-up checks passed (or give up when the daemon exited).
  for (let ready = false; !ready && child.exitCode === null;) {
    ready = await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (!ready) await new Promise((r) => setTimeout(r, 200));
  }
  const line = '='.repeat(64);
  console.log(
    `\n${line}\n   Status page:  ${base}/\n   Also:         ${base}/metrics  ${base}/status.json  ${base}/readyz\n` +
      `   Holding for ${holdSec} s (DEMO_HOLD_SEC) with a trickle of messages; Ctrl-C ends it sooner.\n${line}`,
  );
  // Ctrl-C reaches the daemon too (same process group), which drains and exits on its own.
  const hold = new AbortController();
  const onInterrupt = () => hold.abort();
  process.once('SIGINT', onInterrupt);
  const timer = setTimeout(() => hold.abort(), holdSec * 1000);
  let n = 0;
  while (!hold.signal.aborted && child.exitCode === null) {
    n++;
    const name = QUEUES[n % 3 === 0 ? 2 : n % 2]!;
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl,
        Entries: [
          { Id: '0', MessageBody: `${SHORT[name]}${n}` },
          { Id: '1', MessageBody: `${SHORT[name]}${n}b` },
        ],
      }),
    );
    await new Promise((r) => setTimeout(r, 250));
  }
  clearTimeout(timer);
  process.off('SIGINT', onInterrupt);
  const status = (await fetch(`${base}/status.json`).then(
    (r) => r.json(),
    () => undefined,
  )) as { queues?: { name: string; buckets: { invoked: number }[] }[] } | undefined;
  if (child.exitCode === null) child.kill('SIGTERM');
  const code = await exited;
  const counts = (status?.queues ?? []).map((q) => `${SHORT[q.name] ?? q.name} ${q.buckets.reduce((sum, b) => sum + b.invoked, 0)}`);
  console.log(`   invoked while the page was up: ${counts.join(', ')}; workerless exited with ${code}`);
}

try {
  await fill(8);
  await dispatch('strict order: high, then default, then low', QUEUES.join(','), 1, 24);
  await fill(30);
  await dispatch('weighted 3:2:1 (high first ~50%, default ~33%, low ~17%)', `${QUEUES[0]}:3,${QUEUES[1]}:2,${QUEUES[2]}:1`, 2, 45);
  await statusPage(Number(process.env['DEMO_HOLD_SEC'] ?? 60));
  console.log('\ndemo finished');
} finally {
  await endpoint.stop();
  sqs.destroy();
}
