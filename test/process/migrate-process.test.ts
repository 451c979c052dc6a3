// `workerless migrate` as a process, without LocalStack: an invalid flag is exit 2 naming it and its value, an
// unreachable endpoint and a refused read are one line each and exit 1, never a stack trace; a SIGINT during a switch
// says it was interrupted and what it left unknown and undone. What it reads and
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

  it('--cutover with a ready run that reads only one of the two queues: refused, nothing disabled, the other queue named', async () => {
    // One server as both: Lambda (its REST API) and the workerless run (/readyz, and status.json listing queue a-q).
    const updated: string[] = [];
    const server = createServer((req, res) => {
      req.resume();
      res.setHeader('content-type', 'application/json');
      const path = (req.url ?? '').split('?')[0];
      if (path === '/run/readyz') return res.end('ok\n');
      if (path === '/run/status.json')
        return res.end(JSON.stringify({ functions: ['orders-fn'], summary: { queues: 1 }, queues: [{ name: 'a-q' }] }));
      if (req.method === 'GET')
        return res.end(
          JSON.stringify({
            EventSourceMappings: ['a', 'b'].map((uuid) => ({
              UUID: uuid,
              FunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:orders-fn',
              EventSourceArn: `arn:aws:sqs:us-east-1:123456789012:${uuid}-q`,
              State: 'Enabled',
            })),
          }),
        );
      updated.push(path ?? '');
      res.writeHead(202);
      res.end(JSON.stringify({ State: 'Disabling' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const r = await migrate(['--function', 'orders-fn', '--cutover', '--ready-url', `${url}/run/readyz`], {
        ...AWS_ENV,
        AWS_ENDPOINT_URL_LAMBDA: url,
      });
      assert.deepEqual(updated, [], 'no mapping disabled');
      assert.deepEqual(r, {
        code: 1,
        out: '',
        err: `workerless: --ready-url ${url}/run/readyz: that run does not read queue b-q of orders-fn's mappings, which would be left without a consumer; nothing was changed (run it with that queue, or give --partial to disable only the mappings of the queues it reads)\n`,
      });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('SIGINT during --rollback: interrupted, the mapping in flight named as unknown and those not reached, exit 1', async () => {
    // Lambda's REST API (Lambda API reference): ListEventSourceMappings is GET /2015-03-31/event-source-mappings/,
    // UpdateEventSourceMapping is PUT /2015-03-31/event-source-mappings/{UUID}. The update of b never answers.
    const mapping = (uuid: string) => ({
      UUID: uuid,
      FunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:orders-fn',
      EventSourceArn: `arn:aws:sqs:us-east-1:123456789012:${uuid}-q`,
      State: 'Disabled',
      BatchSize: 10,
    });
    let heldB: () => void = () => {};
    const bArrived = new Promise<void>((resolve) => (heldB = resolve));
    const lambda = createServer((req, res) => {
      req.resume();
      const uuid = /\/event-source-mappings\/([a-z])$/.exec(req.url ?? '')?.[1];
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') return res.end(JSON.stringify({ EventSourceMappings: ['a', 'b', 'c'].map(mapping) }));
      if (uuid === 'b') return heldB();
      res.writeHead(202);
      res.end(JSON.stringify({ ...mapping(uuid ?? '?'), State: 'Enabling' }));
    });
    await new Promise<void>((resolve) => lambda.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(lambda.address() as AddressInfo).port}`;
    try {
      const run = runCli(['migrate', '--function', 'orders-fn', '--rollback'], { ...AWS_ENV, AWS_ENDPOINT_URL_LAMBDA: url });
      await bArrived;
      run.child.kill('SIGINT');
      const { code } = await run.exited;
      assert.deepEqual(
        { code, out: run.stdout(), err: run.stderr() },
        {
          code: 1,
          out: 'mapping a (queue a-q): Disabled -> Enabling\n',
          err: [
            'workerless: interrupted: mapping b (queue b-q) was being enabled: its state is unknown (Lambda may have applied the update)',
            'workerless: interrupted: not reached: mapping c (queue c-q)',
            'workerless: run the same command again to finish: it skips the mappings already switched',
            '',
          ].join('\n'),
        },
      );
    } finally {
      lambda.closeAllConnections();
      lambda.close();
    }
  });
});
