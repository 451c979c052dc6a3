// `workerless check` with Temporal spillover against a real dev server: each task queue is read with the run's
// DescribeTaskQueue, and a namespace the server does not know fails that line (exit 1).
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { runCli, type CliRun } from '../../support/cli.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../../support/lambda-endpoint/server.ts';
import { startTemporalDevServer, type TemporalDevServer } from '../../support/temporal.ts';

const record = fileURLToPath(new URL('../../fixtures/functions/record.mjs', import.meta.url));

describe('workerless check against a Temporal dev server', { timeout: 120_000 }, () => {
  let server: TemporalDevServer;
  let endpoint: LambdaEndpoint;
  before(async () => {
    server = await startTemporalDevServer();
    endpoint = await startLambdaEndpoint({ handlerOutput: 'ignore', functions: { 'temporal-worker': { handler: record } } });
  });
  after(async () => {
    await endpoint?.stop();
    await server?.stop();
  });
  const check = (namespace: string, extra: readonly string[] = []): CliRun =>
    runCli(
      [
        'check',
        ...extra,
        '--temporal-task-queues',
        'orders,billing',
        '--temporal-function',
        'temporal-worker',
        '--temporal-address',
        server.address,
        '--temporal-namespace',
        namespace,
        '--metrics',
        'off',
      ],
      { AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_ENDPOINT_URL_LAMBDA: endpoint.url },
    );

  it('all ok: exit 0, one line per task queue', async () => {
    const run = check('default');
    const { code } = await run.exited;
    assert.equal(code, 0, run.stdout() + run.stderr());
    assert.equal(run.stderr(), '');
    assert.deepEqual(run.stdout().trimEnd().split('\n'), [
      'ok   Temporal worker function temporal-worker (DryRun invoke allowed)',
      `ok   temporal task queue orders (namespace default at ${server.address}, backlog 0)`,
      `ok   temporal task queue billing (namespace default at ${server.address}, backlog 0)`,
    ]);
  });

  it("an unknown namespace: exit 1, each task queue fails with the server's NOT_FOUND", async () => {
    const run = check('no-such-namespace');
    const { code } = await run.exited;
    assert.equal(code, 1);
    assert.deepEqual(run.stdout().trimEnd().split('\n'), [
      'ok   Temporal worker function temporal-worker (DryRun invoke allowed)',
      'FAIL temporal task queue orders: NOT_FOUND: Namespace no-such-namespace is not found.',
      'FAIL temporal task queue billing: NOT_FOUND: Namespace no-such-namespace is not found.',
    ]);
  });

  it('every --temporal-versions target gets its own DryRun: one that cannot be invoked fails its line (exit 1)', async () => {
    // Spillover invokes a version's function only once that version has a backlog: without this line a typo in
    // the mapping shows only then, as refused invocations (the validation invoke Temporal's controller sends).
    const run = check('default', ['--temporal-versions', 'v1=temporal-worker:live,v2=no-such-worker:live']);
    const { code } = await run.exited;
    assert.equal(code, 1, run.stdout() + run.stderr());
    assert.deepEqual(run.stdout().trimEnd().split('\n'), [
      'ok   Temporal worker function temporal-worker (DryRun invoke allowed)',
      'ok   Temporal worker function temporal-worker:live (DryRun invoke allowed)',
      'FAIL Temporal worker function no-such-worker:live: does not exist (ResourceNotFoundException)',
      `ok   temporal task queue orders (namespace default at ${server.address}, backlog 0)`,
      `ok   temporal task queue billing (namespace default at ${server.address}, backlog 0)`,
    ]);
    assert.deepEqual(
      endpoint.rejected
        .slice(-3)
        .map((r) => r.functionName)
        .sort(),
      ['no-such-worker', 'temporal-worker', 'temporal-worker'],
    );
  });
});
