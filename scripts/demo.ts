// The demo behind `npm run demo` (scripts/demo.sh starts LocalStack and builds first): a demo function behind
// the test Lambda endpoint, three prioritised queues, and the real CLI dispatching them, first in strict and
// then in weighted order. Prints what was dispatched in which order, then stops everything.
import { spawn } from 'node:child_process';
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
  functions: { 'workerless-demo': { handler: fileURLToPath(new URL('../localstack/functions/demo.mjs', import.meta.url)), timeoutSec: 10 } },
  handlerOutput: 'ignore',
});

async function fill(perQueue: number): Promise<void> {
  for (const name of QUEUES) {
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
    await sqs.send(new PurgeQueueCommand({ QueueUrl }));
    for (let i = 0; i < perQueue; i += 10) {
      const entries = Array.from({ length: Math.min(10, perQueue - i) }, (_, k) => ({ Id: String(k), MessageBody: `${SHORT[name]}${i + k + 1}` }));
      await sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries: entries }));
    }
  }
}

async function dispatch(title: string, queues: string, concurrency: number, expected: number): Promise<void> {
  endpoint.reset();
  console.log(`\n== ${title}\n   workerless --function workerless-demo --queues ${queues} --concurrency ${concurrency}`);
  const cli = fileURLToPath(new URL('../dist/src/main.js', import.meta.url));
  const child = spawn(process.execPath, [cli, '--function', 'workerless-demo', '--queues', queues, '--concurrency', String(concurrency), '--poll-for', '1', '--metrics', 'off', '--log-level', 'warn'], {
    env: { ...process.env, AWS_ENDPOINT_URL_SQS: LOCALSTACK, AWS_ENDPOINT_URL_CLOUDWATCH: LOCALSTACK, AWS_ENDPOINT_URL_LAMBDA: endpoint.url },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
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
  console.log(`   first ${firstHalf.length} invocations: ${['H', 'D', 'L'].map(share).join(', ')}; workerless exited with ${code} after SIGTERM`);
}

try {
  await fill(8);
  await dispatch('strict order: high, then default, then low', QUEUES.join(','), 1, 24);
  await fill(30);
  await dispatch('weighted 3:2:1 (high first ~50%, default ~33%, low ~17%)', `${QUEUES[0]}:3,${QUEUES[1]}:2,${QUEUES[2]}:1`, 2, 45);
  console.log('\ndemo finished');
} finally {
  await endpoint.stop();
  sqs.destroy();
}
