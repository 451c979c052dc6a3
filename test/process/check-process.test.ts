// `workerless check` as a process, without LocalStack: it validates exactly as a run does (exit 2), is in
// --help, and reports unreachable endpoints (AWS, Temporal) as one line each, exit 1, within its deadlines.
// The checks against LocalStack are in test/integration/check-localstack.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/http.ts';
import { runCli } from '../support/cli.ts';
import { startLambdaEndpoint } from '../support/lambda-endpoint/server.ts';

const AWS_ENV = { AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' };
const NOTE =
  'note sqs:ReceiveMessage, sqs:DeleteMessage, sqs:ChangeMessageVisibility are needed by a run but not checked: only receiving (which hides messages) or changing messages could prove them';
const HINT = '(check --endpoint-url / --region and the network)';

describe('workerless check as a process', () => {
  it('an invalid configuration: exit 2 with exactly the lines a run prints', async () => {
    const args = ['--function', 'fn', '--queues', 'a:1,b', '--concurency', '3'];
    const env = { AWS_REGION: 'us-east-1', WORKERLESS_BATCH_SIZE: 'ten' };
    const check = runCli(['check', ...args], env);
    const run = runCli(args, env);
    const [checked, ran] = await Promise.all([check.exited, run.exited]);
    assert.equal(checked.code, 2);
    assert.equal(ran.code, 2);
    assert.equal(check.stderr(), run.stderr());
    assert.ok(
      check.stderr().includes('workerless: --batch-size must be an integer from 1 to 10000, got "ten" (from WORKERLESS_BATCH_SIZE)'),
      check.stderr(),
    );
    assert.equal(check.stdout(), '');
  });

  it('--replicas out of range: exit 2 naming the option and the value, as every option', async () => {
    const run = runCli(['check', '--function', 'fn', '--queues', 'q', '--replicas', '0'], { AWS_REGION: 'us-east-1' });
    assert.equal((await run.exited).code, 2);
    assert.deepEqual(run.stderr().trim().split('\n'), [
      'workerless: --replicas must be an integer from 1 to 10000, got "0"',
      'Run "workerless --help" for the options.',
    ]);
    assert.equal(run.stdout(), '');
  });

  it('--help names the subcommand and its exit codes', async () => {
    for (const args of [['--help'], ['check', '--help']]) {
      const run = runCli(args);
      assert.equal((await run.exited).code, 0);
      assert.ok(run.stdout().includes('workerless check [the same options]'), run.stdout());
      assert.ok(run.stdout().includes('(check: a check failed)'), run.stdout());
    }
  });

  it('unreachable AWS endpoints: exit 1, one line per service naming its endpoint (the queues merged), no stack trace', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const run = runCli(['check', '--function', 'fn', '--queues', 'a,b', '--endpoint-url', endpoint], AWS_ENV);
    const { code } = await run.exited;
    assert.equal(code, 1);
    assert.equal(run.stderr(), '');
    assert.deepEqual(run.stdout().trimEnd().split('\n'), [
      `FAIL queues a, b: cannot reach SQS at ${endpoint}: ECONNREFUSED ${HINT}`,
      `FAIL function fn: cannot reach Lambda at ${endpoint}: ECONNREFUSED ${HINT}`,
      `FAIL metrics Workerless-default: cannot reach CloudWatch at ${endpoint}: ECONNREFUSED ${HINT}`,
      NOTE,
    ]);
  });

  it('unreachable Temporal (a closed port): exit 1, one line, after the worker function was checked', { timeout: 60_000 }, async () => {
    const record = fileURLToPath(new URL('../fixtures/functions/record.mjs', import.meta.url));
    const endpoint = await startLambdaEndpoint({ handlerOutput: 'ignore', functions: { 'temporal-worker': { handler: record } } });
    try {
      const address = `127.0.0.1:${await freePort()}`;
      const started = Date.now();
      const run = runCli(
        [
          'check',
          '--temporal-task-queues',
          'orders,billing',
          '--temporal-function',
          'temporal-worker',
          '--temporal-address',
          address,
          '--metrics',
          'off',
        ],
        { ...AWS_ENV, AWS_ENDPOINT_URL_LAMBDA: endpoint.url },
      );
      const { code } = await run.exited;
      assert.equal(code, 1, run.stderr());
      assert.equal(run.stderr(), '');
      assert.deepEqual(run.stdout().trimEnd().split('\n'), [
        'ok   Temporal worker function temporal-worker (DryRun invoke allowed)',
        `FAIL temporal ${address}: cannot reach Temporal: ECONNREFUSED (check --temporal-address and the network)`,
      ]);
      // Bounded by the Temporal client's connect timeout (10 s) plus start-up; never a retry loop like a run's.
      assert.ok(Date.now() - started < 30_000, `took ${Date.now() - started} ms`);
      assert.deepEqual(
        endpoint.rejected.map((r) => [r.functionName, r.statusCode]),
        [['temporal-worker', 204]],
      );
    } finally {
      await endpoint.stop();
    }
  });
});
