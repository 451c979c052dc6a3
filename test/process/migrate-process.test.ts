// `workerless migrate` as a process, without LocalStack: an invalid flag is exit 2 naming it and its value, an
// unreachable endpoint and a refused read are one line each and exit 1, never a stack trace. What it reads and
// switches is tested against LocalStack and moto in test/integration/migrate.test.ts.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { runCli } from '../support/cli.ts';
import { freePort } from '../support/http.ts';

const AWS_ENV = {
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  AWS_CONFIG_FILE: '/dev/null',
  AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
};

async function migrate(args: string[], env: Record<string, string> = AWS_ENV) {
  const run = runCli(['migrate', ...args], env);
  const { code } = await run.exited;
  return { code, out: run.stdout(), err: run.stderr() };
}

describe('workerless migrate as a process', () => {
  it('--help: exit 0 with the usage', async () => {
    const r = await migrate(['--help']);
    assert.equal(r.code, 0);
    assert.match(r.out, /^Usage: workerless migrate --function/);
    const daemonHelp = runCli(['--help']);
    assert.equal((await daemonHelp.exited).code, 0);
    assert.ok(daemonHelp.stdout().includes('workerless migrate --function <name>'), "the daemon's --help names the command");
  });

  it('invalid flags: exit 2, each named with its value, nothing on stdout', async () => {
    const r = await migrate(['--function', 'my fn', '--cutover', '--ready-url', 'localhost:8080/readyz', '--queues', 'a']);
    assert.equal(r.code, 2);
    assert.equal(r.out, '');
    assert.deepEqual(r.err.trimEnd().split('\n'), [
      'workerless: unknown option --queues (see workerless migrate --help)',
      'workerless: --function must be a function name, name:alias or function ARN, got "my fn"',
      'workerless: --ready-url must be an http(s) URL, got "localhost:8080/readyz"',
    ]);
  });

  it('an unreachable endpoint: one line naming it, exit 1', async () => {
    const port = await freePort();
    const r = await migrate(['--function', 'orders-fn', '--endpoint-url', `http://127.0.0.1:${port}`]);
    assert.deepEqual(r, {
      code: 1,
      out: '',
      err: `workerless: ListEventSourceMappings for orders-fn: cannot reach Lambda at http://127.0.0.1:${port}: ECONNREFUSED (check --endpoint-url / --region and the network)\n`,
    });
  });

  it('a function the caller may not read: one line naming the IAM action, exit 1', async () => {
    // Lambda's answer to a caller without the permission (Lambda API reference, "Errors": AccessDeniedException, 403).
    const lambda = createServer((req, res) => {
      req.resume();
      res.writeHead(403, { 'content-type': 'application/json', 'x-amzn-errortype': 'AccessDeniedException' });
      res.end(
        JSON.stringify({
          Message: 'User: arn:aws:iam::123456789012:user/dev is not authorized to perform: lambda:ListEventSourceMappings on resource: *',
        }),
      );
    });
    await new Promise<void>((resolve) => lambda.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(lambda.address() as AddressInfo).port}`;
    try {
      const r = await migrate(['--function', 'orders-fn'], { ...AWS_ENV, AWS_ENDPOINT_URL_LAMBDA: url });
      assert.deepEqual(r, {
        code: 1,
        out: '',
        err: 'workerless: ListEventSourceMappings for orders-fn: access denied (needs lambda:ListEventSourceMappings)\n',
      });
    } finally {
      lambda.close();
    }
  });
});
