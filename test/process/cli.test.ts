import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CORE_OPTIONS, envName } from '../../src/config/options.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { until } from '../support/factories.ts';
import { startLambdaEndpoint } from '../support/lambda-endpoint/server.ts';

const NOTHING_TO_DO =
  'workerless: nothing to do: --queues (with --function), routes in the --config file, or --temporal-task-queues (with --temporal-function) is required (env WORKERLESS_QUEUES, WORKERLESS_TEMPORAL_TASK_QUEUES)';
const HELP_HINT = 'Run "workerless --help" for the options.';

/** Exit 2 with exactly these problem lines (and the help hint) on stderr, nothing on stdout. */
async function assertUsageError(run: CliRun, problems: string[]): Promise<void> {
  const { code } = await run.exited;
  assert.equal(code, 2, run.stderr());
  assert.deepEqual(run.stderr().trim().split('\n'), [...problems, HELP_HINT]);
  assert.equal(run.stdout(), '', 'nothing on stdout (no log lines, no stack trace)');
  assert.ok(!run.stderr().includes('    at '), 'no stack trace');
}

describe('the workerless CLI as a process', () => {
  it('--help documents every option with its env var and default, exit 0', async () => {
    const run = runCli(['--help']);
    const { code } = await run.exited;
    assert.equal(code, 0);
    for (const d of CORE_OPTIONS) {
      assert.ok(run.stdout().includes(`--${d.flag}`), d.flag);
      assert.ok(run.stdout().includes(envName(d.flag)), envName(d.flag));
    }
    assert.ok(run.stdout().includes('--temporal-task-queues'), 'Temporal options are listed');
    assert.equal(run.stderr(), '');
  });

  it('--version prints the package version', async () => {
    const run = runCli(['--version']);
    assert.equal((await run.exited).code, 0);
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    assert.equal(run.stdout().trim(), pkg.version);
  });

  it('bad flags and env vars: exit 2, every problem listed on stderr, no stack trace', async () => {
    const run = runCli(['--function', 'fn', '--queues', 'a:1,b', '--concurency', '3', '--poll-for', '99'], {
      WORKERLESS_BATCH_SIZE: 'ten',
      AWS_REGION: 'us-east-1',
    });
    const { code } = await run.exited;
    assert.equal(code, 2);
    const lines = run.stderr().trim().split('\n');
    assert.deepEqual(lines, [
      'workerless: unknown option --concurency (did you mean --concurrency?)',
      'workerless: --queues mixes weighted and unweighted queues (give every queue a weight, or none), got "a:1,b"',
      'workerless: --batch-size must be an integer from 1 to 10000, got "ten" (from WORKERLESS_BATCH_SIZE)',
      'workerless: --poll-for must be an integer from 0 to 20, got "99"',
      'Run "workerless --help" for the options.',
    ]);
    assert.equal(run.stdout(), '');
  });

  it("batching window rules, as on Lambda's trigger: exit 2 naming the flag, the value and the FIFO queue", async () => {
    const env = { AWS_REGION: 'us-east-1' };
    await assertUsageError(runCli(['--function', 'f', '--queues', 'q', '--batch-size', '11'], env), [
      "workerless: --batch-size above 10 needs a --batch-window of at least 1s (as on Lambda's trigger), got --batch-size 11 with --batch-window 0s",
    ]);
    await assertUsageError(runCli(['--function', 'f', '--queues', 'q,jobs.fifo', '--batch-size', '10', '--batch-window', '5s'], env), [
      "workerless: --batch-window is not available with FIFO queue jobs.fifo (Lambda's trigger has no window on FIFO), got 5s",
    ]);
    await assertUsageError(runCli(['--function', 'f', '--queues', 'jobs.fifo', '--batch-size', '50'], env), [
      "workerless: --batch-size must be at most 10 with FIFO queue jobs.fifo (as on Lambda's trigger), got 50",
    ]);
    await assertUsageError(
      runCli(['--function', 'f', '--queues', 'q', '--batch-size', '100'], { ...env, WORKERLESS_BATCH_WINDOW: '301' }),
      ['workerless: --batch-window must be a duration from 0 to 5m (e.g. 500ms, 5s, 10m), got "301" (from WORKERLESS_BATCH_WINDOW)'],
    );
  });

  it('nothing to do is a configuration error', async () => {
    await assertUsageError(runCli([], { AWS_REGION: 'us-east-1' }), [NOTHING_TO_DO]);
  });

  it('only a Temporal option (a namespace from a shared env file): exit 2, naming it and its value', async () => {
    await assertUsageError(runCli([], { AWS_REGION: 'us-east-1', WORKERLESS_TEMPORAL_NAMESPACE: 'prod' }), [
      'workerless: --temporal-namespace is only used with --temporal-task-queues (none given), got "prod" (from WORKERLESS_TEMPORAL_NAMESPACE)',
      NOTHING_TO_DO,
    ]);
  });

  it('--function and --temporal-function without any queues: exit 2', async () => {
    await assertUsageError(runCli(['--function', 'f', '--temporal-function', 'w'], { AWS_REGION: 'us-east-1' }), [
      'workerless: --function is only used with --queues (none given), got "f"',
      'workerless: --temporal-function is only used with --temporal-task-queues (none given), got "w"',
      NOTHING_TO_DO,
    ]);
  });

  it('a stray option of the half that is not configured: exit 2 (the API key masked)', async () => {
    await assertUsageError(
      runCli(['--temporal-task-queues', 'orders', '--temporal-function', 'w'], { AWS_REGION: 'us-east-1', WORKERLESS_FUNCTION: 'f' }),
      ['workerless: --function is only used with --queues (none given), got "f" (from WORKERLESS_FUNCTION)'],
    );
    const run = runCli(['--function', 'f', '--queues', 'q'], { AWS_REGION: 'us-east-1', WORKERLESS_TEMPORAL_API_KEY: 'secret-key' });
    await assertUsageError(run, [
      'workerless: --temporal-api-key is only used with --temporal-task-queues (none given), got "***" (from WORKERLESS_TEMPORAL_API_KEY)',
    ]);
    assert.ok(!run.stderr().includes('secret-key'));
  });

  it('task queues without --temporal-function: exit 2', async () => {
    await assertUsageError(runCli(['--temporal-task-queues', 'orders'], { AWS_REGION: 'us-east-1' }), [
      'workerless: --temporal-function is required with --temporal-task-queues (env WORKERLESS_TEMPORAL_FUNCTION): the function that hosts the Temporal worker',
    ]);
  });

  it('an unreadable Temporal TLS file: exit 2 at start-up instead of retrying the connection forever', async () => {
    await assertUsageError(
      runCli(['--temporal-task-queues', 'orders', '--temporal-function', 'w', '--temporal-tls-ca', '/missing.pem'], {
        AWS_REGION: 'us-east-1',
        WORKERLESS_TEMPORAL_TLS_CERT: '/missing-client.pem',
        WORKERLESS_TEMPORAL_TLS_KEY: fileURLToPath(new URL('.', import.meta.url)),
      }),
      [
        'workerless: --temporal-tls-cert cannot read "/missing-client.pem": ENOENT (from WORKERLESS_TEMPORAL_TLS_CERT)',
        `workerless: --temporal-tls-key cannot read "${fileURLToPath(new URL('.', import.meta.url))}": EISDIR (from WORKERLESS_TEMPORAL_TLS_KEY)`,
        'workerless: --temporal-tls-ca cannot read "/missing.pem": ENOENT',
      ],
    );
  });

  it('an unreachable endpoint: exit 1 with a one-line explanation that names the endpoint, not a stack trace', async () => {
    const run = runCli(['--function', 'fn', '--queues', 'q', '--endpoint-url', 'http://127.0.0.1:9'], {
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    });
    const { code } = await run.exited;
    assert.equal(code, 1);
    assert.equal(
      run.stderr(),
      'workerless: queue q: cannot reach SQS at http://127.0.0.1:9: ECONNREFUSED (check --endpoint-url / --region and the network)\n',
    );
    assert.ok(!run.stdout().includes('    at '), 'no stack trace');
  });

  it('bad routes in the config file: exit 2, each problem naming its route and key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wl-routes-'));
    const file = join(dir, 'wl.yaml');
    writeFileSync(
      file,
      'routes:\n  - { function: a-fn, queues: a, concurrency: 0 }\n  - { function: b-fn, queues: a, region: eu-west-1 }\n',
    );
    const run = runCli(['--config', file], { AWS_REGION: 'us-east-1' });
    await assertUsageError(run, [
      `workerless: --concurrency must be an integer from 1 to 10000, got "0" (from routes[0].concurrency in ${file})`,
      `workerless: routes[1] in ${file}: region applies to the whole daemon; set it outside routes`,
      'workerless: queue a is in routes[0] and routes[1]: a queue belongs to one route',
    ]);
  });

  it('--http-port abc: exit 2 naming the option and the value', async () => {
    const run = runCli(['--function', 'fn', '--queues', 'q', '--http-port', 'abc'], { AWS_REGION: 'us-east-1' });
    await assertUsageError(run, ['workerless: --http-port must be an integer from 1 to 65535, got "abc"']);
  });

  it('an --http-port already in use: exit 1 with one line, before any AWS call', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      // The endpoint is unreachable on purpose: the HTTP server must fail first.
      const run = runCli(['--function', 'fn', '--queues', 'q', '--endpoint-url', 'http://127.0.0.1:9', '--http-port', String(port)], {
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
      });
      const { code } = await run.exited;
      assert.equal(code, 1);
      assert.equal(run.stderr(), `workerless: cannot listen on 127.0.0.1:${port}: EADDRINUSE\n`);
    } finally {
      taken.close();
    }
  });
});

describe('the Temporal worker function is checked at start-up (no Temporal server needed)', () => {
  // The checks run before spillover connects to Temporal, so an address nobody listens on is enough.
  const record = fileURLToPath(new URL('../fixtures/functions/record.mjs', import.meta.url));
  const spillover = (fn: string, endpointUrl: string, extra: readonly string[] = []) =>
    runCli(
      [
        ...extra,
        '--temporal-task-queues',
        'orders',
        '--temporal-function',
        fn,
        '--temporal-address',
        '127.0.0.1:9',
        '--endpoint-url',
        endpointUrl,
        '--metrics',
        'off',
      ],
      { AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' },
    );

  it('a missing function: exit 1 with a one-line explanation, before "workerless started"', async () => {
    const endpoint = await startLambdaEndpoint({ handlerOutput: 'ignore', functions: { 'temporal-worker': { handler: record } } });
    const run = spillover('no-such-worker', endpoint.url);
    // Without the check the daemon starts and runs on: fail after 15 s instead of hanging.
    const deadline = setTimeout(() => run.child.kill('SIGKILL'), 15_000);
    try {
      const { code } = await run.exited;
      assert.equal(code, 1, run.stderr());
      assert.equal(run.stderr(), 'workerless: Temporal worker function no-such-worker: does not exist (ResourceNotFoundException)\n');
      assert.ok(!run.logs().some((l) => l['msg'] === 'workerless started'), 'did not start');
      assert.ok(!run.stdout().includes('    at '), 'no stack trace');
      assert.deepEqual(
        endpoint.rejected.map((r) => [r.functionName, r.statusCode]),
        [['no-such-worker', 404]],
      );
    } finally {
      clearTimeout(deadline);
      await endpoint.stop();
    }
  });

  it('a --temporal-versions target that cannot be invoked stops the start too, named once', async () => {
    const endpoint = await startLambdaEndpoint({ handlerOutput: 'ignore', functions: { 'temporal-worker': { handler: record } } });
    const run = spillover('temporal-worker', endpoint.url, ['--temporal-versions', 'v1=temporal-worker:live,v2=no-such-worker:live']);
    const deadline = setTimeout(() => run.child.kill('SIGKILL'), 15_000);
    try {
      const { code } = await run.exited;
      assert.equal(code, 1, run.stderr());
      assert.equal(run.stderr(), 'workerless: Temporal worker function no-such-worker:live: does not exist (ResourceNotFoundException)\n');
      assert.ok(!run.logs().some((l) => l['msg'] === 'workerless started'), 'did not start');
      assert.deepEqual(
        endpoint.rejected.map((r) => [r.functionName, r.errorType]),
        [
          ['temporal-worker', 'DryRun'],
          ['temporal-worker', 'DryRun'],
          ['no-such-worker', 'ResourceNotFoundException'],
        ],
      );
    } finally {
      clearTimeout(deadline);
      await endpoint.stop();
    }
  });

  it('an existing function passes the DryRun (nothing runs) and the daemon starts', async () => {
    const endpoint = await startLambdaEndpoint({ handlerOutput: 'ignore', functions: { 'temporal-worker': { handler: record } } });
    const run = spillover('temporal-worker', endpoint.url);
    try {
      await run.waitForLog((l) => l['msg'] === 'workerless started');
      assert.deepEqual(
        endpoint.rejected.map((r) => [r.functionName, r.errorType]),
        [['temporal-worker', 'DryRun']],
      );
      assert.deepEqual(endpoint.invocations, [], 'the dry run did not run the worker');
      assert.equal(run.stderr(), '');
    } finally {
      // SIGKILL: shutdown is not under test here, and with no Temporal server the process lingers for the
      // gRPC connect timeout (10 s) after "stopped cleanly".
      run.child.kill('SIGKILL');
      await run.exited;
      await endpoint.stop();
    }
  });
});

describe('signals during start-up', () => {
  it('a SIGTERM during start-up is a clean stop (exit 0), not a kill and not a start-up failure', async () => {
    // An endpoint that accepts connections and never answers keeps the daemon in its start-up checks.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const run = runCli(['--function', 'fn', '--queues', 'q', '--endpoint-url', `http://127.0.0.1:${port}`], {
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
      });
      await until(() => sockets.length > 0, 10_000, 'the first start-up request');
      run.child.kill('SIGTERM');
      const { code, signal } = await run.exited;
      assert.equal(signal, null, run.stderr());
      assert.equal(code, 0, run.stderr());
      assert.equal(run.stderr(), '');
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});
