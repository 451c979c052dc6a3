import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { CORE_OPTIONS, envName } from '../../src/cli.ts';
import { runCli } from '../support/cli.ts';
import { until } from '../support/factories.ts';

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
      'workerless: --poll-for must be an integer from 0 to 20, got "99"',
      'workerless: --batch-size must be an integer from 1 to 10, got "ten" (from WORKERLESS_BATCH_SIZE)',
      'Run "workerless --help" for the options.',
    ]);
    assert.equal(run.stdout(), '');
  });

  it('nothing to do is a configuration error', async () => {
    const run = runCli([], { AWS_REGION: 'us-east-1' });
    assert.equal((await run.exited).code, 2);
    assert.match(run.stderr(), /--queues is required/);
  });

  it('an unreachable endpoint: exit 1 with a one-line explanation, not a stack trace', async () => {
    const run = runCli(['--function', 'fn', '--queues', 'q', '--endpoint-url', 'http://127.0.0.1:9'], {
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    });
    const { code } = await run.exited;
    assert.equal(code, 1);
    assert.equal(run.stderr(), 'workerless: cannot reach SQS for queue "q": ECONNREFUSED (check --endpoint-url / --region and the network)\n');
    assert.ok(!run.stdout().includes('    at '), 'no stack trace');
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
