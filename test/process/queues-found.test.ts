// --queues-prefix and --queues-tag as a process: an invalid prefix or tag exits 2 naming the flag and the value,
// for a run and for `check` alike. What a valid one matches is checked against LocalStack, ElasticMQ and moto in
// test/integration/queue-discovery.test.ts and test/integration/check-localstack.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../support/cli.ts';

const ENV = { AWS_REGION: 'us-east-1' };

describe('queues found, not listed, as a process', () => {
  for (const [flag, value, rule] of [
    ['--queues-prefix', 'tenant.', "must be 1 to 80 letters, digits, hyphens or underscores (a queue name's characters)"],
    [
      '--queues-tag',
      'workerless',
      'must be key=value: a key of 1 to 128 and a value of up to 256 letters, digits, spaces or _ . : / + - @ (= in the value too), the key not starting with aws:',
    ],
    [
      '--queues-tag',
      'aws:cloudformation:stack-name=x',
      'must be key=value: a key of 1 to 128 and a value of up to 256 letters, digits, spaces or _ . : / + - @ (= in the value too), the key not starting with aws:',
    ],
  ] as const) {
    it(`${flag} ${value}: exit 2 with the flag's name and value, for a run and for check`, async () => {
      const run = runCli(['--function', 'fn', flag, value], ENV);
      const check = runCli(['check', '--function', 'fn', flag, value], ENV);
      const [ran, checked] = await Promise.all([run.exited, check.exited]);
      assert.equal(ran.code, 2, run.stderr());
      assert.equal(checked.code, 2, check.stderr());
      assert.deepEqual(run.stderr().trim().split('\n'), [
        `workerless: ${flag} must be ${rule.slice('must be '.length)}, got ${JSON.stringify(value)}`,
        'Run "workerless --help" for the options.',
      ]);
      assert.equal(check.stderr(), run.stderr());
      assert.equal(run.stdout(), '');
    });
  }

  it('--queues with --queues-prefix: exit 2, list the queues or find them', async () => {
    const run = runCli(['--function', 'fn', '--queues', 'a', '--queues-prefix', 'tenant-'], ENV);
    assert.equal((await run.exited).code, 2);
    assert.ok(
      run.stderr().includes('--queues cannot be used with --queues-prefix or --queues-tag: list the queues, or find them'),
      run.stderr(),
    );
  });
});
