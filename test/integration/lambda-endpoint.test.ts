// Proves the test Lambda endpoint answers the way AWS Lambda does, as seen through @aws-sdk/client-lambda:
// each failure surfaces as the same exception class / FunctionError the daemon will meet in production.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  InvalidRequestContentException,
  InvokeCommand,
  LambdaClient,
  LambdaServiceException,
  RequestTooLargeException,
  ResourceNotFoundException,
  TooManyRequestsException,
  type InvokeCommandOutput,
} from '@aws-sdk/client-lambda';
import { lambdaClient } from '../support/aws.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

const text = (payload: Uint8Array | undefined): string => Buffer.from(payload ?? new Uint8Array()).toString('utf8');
const json = (output: InvokeCommandOutput): unknown => JSON.parse(text(output.Payload));
const encode = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));

describe('test Lambda endpoint, through @aws-sdk/client-lambda', () => {
  let endpoint: LambdaEndpoint;
  let client: LambdaClient;
  let tmp: string;

  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'workerless-lambda-'));
    // A callback-style handler and a TypeScript one, written here so the fixtures folder stays minimal.
    await writeFile(
      join(tmp, 'callback.cjs'),
      'exports.handler = (event, context, callback) => { setTimeout(() => callback(null, { got: event }), 10); };\n',
    );
    await writeFile(join(tmp, 'typed.ts'), 'export const handler = async (event: { n: number }): Promise<number> => event.n * 2;\n');
    await writeFile(join(tmp, 'broken.mjs'), 'export const nothandler = 1;\n');
    endpoint = await startLambdaEndpoint({
      handlerOutput: 'ignore',
      functions: {
        record: { handler: functionFixture('record.mjs') },
        echo: { handler: functionFixture('echo.mjs'), timeoutSec: 7, memoryMb: 256, env: { ECHO_TAG: 'tagged' } },
        fail: { handler: functionFixture('fail.mjs') },
        partial: { handler: functionFixture('partial.mjs') },
        slow: { handler: functionFixture('slow.mjs'), reservedConcurrency: 1, env: { SLOW_MS: '50' } },
        timeout: { handler: functionFixture('timeout.mjs'), timeoutSec: 1 },
        crash: { handler: functionFixture('crash.mjs') },
        callback: { handler: join(tmp, 'callback.cjs') },
        typed: { handler: join(tmp, 'typed.ts') },
        broken: { handler: join(tmp, 'broken.mjs') },
      },
    });
    // maxAttempts 1: the SDK would otherwise retry throttling and 5xx and hide what the server answered.
    client = lambdaClient(endpoint.url);
  });

  after(async () => {
    client.destroy();
    await endpoint.stop();
    await rm(tmp, { recursive: true, force: true });
  });

  it('RequestResponse: 200, body null for a handler that returns nothing, headers, and a record', async () => {
    const out = await client.send(new InvokeCommand({ FunctionName: 'record', Payload: encode({ Records: [] }) }));
    assert.equal(out.StatusCode, 200);
    assert.equal(out.FunctionError, undefined);
    assert.equal(out.ExecutedVersion, '$LATEST');
    assert.equal(text(out.Payload), 'null');
    const record = endpoint.invocations.find((r) => r.requestId === out.$metadata.requestId);
    assert.ok(record, 'x-amzn-RequestId names the recorded invocation');
    assert.equal(record.functionName, 'record');
    assert.equal(record.invocationType, 'RequestResponse');
    assert.deepEqual(record.payload, { Records: [] });
    assert.equal(record.status, 'success');
    assert.equal(record.result, null);
    assert.ok(record.endedAt !== undefined && record.endedAt >= record.startedAt);
  });

  it('gives the handler a Lambda context and environment; a warm environment is reused', async () => {
    const first = json(await client.send(new InvokeCommand({ FunctionName: 'echo', Payload: encode({ a: 1 }) }))) as {
      event: unknown;
      context: Record<string, unknown>;
      env: Record<string, unknown>;
      pid: number;
    };
    assert.deepEqual(first.event, { a: 1 });
    assert.equal(first.context['functionName'], 'echo');
    assert.equal(first.context['functionVersion'], '$LATEST');
    assert.equal(first.context['invokedFunctionArn'], 'arn:aws:lambda:us-east-1:000000000000:function:echo');
    assert.equal(first.context['memoryLimitInMB'], '256');
    assert.equal(first.context['callbackWaitsForEmptyEventLoop'], true);
    assert.match(String(first.context['awsRequestId']), /^[0-9a-f-]{36}$/);
    const remaining = Number(first.context['remainingTimeInMillis']);
    assert.ok(remaining > 6000 && remaining <= 7000, `remaining ${remaining} ms of a 7 s timeout`);
    assert.deepEqual(first.env, { AWS_LAMBDA_FUNCTION_NAME: 'echo', ECHO_TAG: 'tagged' });
    const second = json(await client.send(new InvokeCommand({ FunctionName: 'echo', Payload: encode({ a: 2 }) }))) as { pid: number };
    assert.equal(second.pid, first.pid, 'second invocation ran in the same (warm) process');
  });

  it('accepts a full ARN, an ARN with qualifier, name:alias and the Qualifier parameter', async () => {
    const cases: Array<[{ FunctionName: string; Qualifier?: string }, string, string | undefined]> = [
      [
        { FunctionName: 'arn:aws:lambda:us-east-1:000000000000:function:echo' },
        'arn:aws:lambda:us-east-1:000000000000:function:echo',
        undefined,
      ],
      [
        { FunctionName: 'arn:aws:lambda:us-east-1:000000000000:function:echo:live' },
        'arn:aws:lambda:us-east-1:000000000000:function:echo:live',
        'live',
      ],
      [{ FunctionName: 'echo:prod' }, 'arn:aws:lambda:us-east-1:000000000000:function:echo:prod', 'prod'],
      [{ FunctionName: 'echo', Qualifier: '$LATEST' }, 'arn:aws:lambda:us-east-1:000000000000:function:echo:$LATEST', '$LATEST'],
    ];
    for (const [input, arn, qualifier] of cases) {
      const out = await client.send(new InvokeCommand({ ...input, Payload: encode({}) }));
      const body = json(out) as { context: Record<string, unknown> };
      assert.equal(body.context['invokedFunctionArn'], arn, input.FunctionName);
      assert.equal(endpoint.invocations.find((r) => r.requestId === out.$metadata.requestId)?.qualifier, qualifier);
    }
  });

  it('handler threw: 200 with FunctionError Unhandled and {errorType, errorMessage, trace}', async () => {
    const out = await client.send(new InvokeCommand({ FunctionName: 'fail', Payload: encode({}) }));
    assert.equal(out.StatusCode, 200);
    assert.equal(out.FunctionError, 'Unhandled');
    const body = json(out) as { errorType: string; errorMessage: string; trace: string[] };
    assert.equal(body.errorType, 'Error');
    assert.equal(body.errorMessage, 'boom');
    assert.ok(Array.isArray(body.trace) && body.trace[0] === 'Error: boom');
    assert.equal(endpoint.invocations.find((r) => r.requestId === out.$metadata.requestId)?.status, 'error');
  });

  it('partial batch response comes back as the handler returned it', async () => {
    const event = {
      Records: [
        { messageId: 'm1', body: 'ok' },
        { messageId: 'm2', body: 'please fail' },
      ],
    };
    const out = await client.send(new InvokeCommand({ FunctionName: 'partial', Payload: encode(event) }));
    assert.deepEqual(json(out), { batchItemFailures: [{ itemIdentifier: 'm2' }] });
  });

  it('supports callback-style and TypeScript handlers', async () => {
    const cb = await client.send(new InvokeCommand({ FunctionName: 'callback', Payload: encode({ x: 1 }) }));
    assert.deepEqual(json(cb), { got: { x: 1 } });
    const typed = await client.send(new InvokeCommand({ FunctionName: 'typed', Payload: encode({ n: 21 }) }));
    assert.equal(json(typed), 42);
  });

  it('a module without a handler export fails like Lambda (Runtime.HandlerNotFound)', async () => {
    const out = await client.send(new InvokeCommand({ FunctionName: 'broken', Payload: encode({}) }));
    assert.equal(out.FunctionError, 'Unhandled');
    assert.equal((json(out) as { errorType: string }).errorType, 'Runtime.HandlerNotFound');
  });

  it('Event: 202 at once, the handler still runs and is recorded; DryRun: 204 and nothing runs', async () => {
    const before = endpoint.invocations.length;
    const out = await client.send(new InvokeCommand({ FunctionName: 'record', InvocationType: 'Event', Payload: encode({ async: true }) }));
    assert.equal(out.StatusCode, 202);
    assert.equal(text(out.Payload), '');
    const requestId = out.$metadata.requestId;
    await endpoint.waitFor((all) => all.some((r) => r.requestId === requestId && r.status === 'success'), 5000);
    const record = endpoint.invocations.find((r) => r.requestId === requestId);
    assert.equal(record?.invocationType, 'Event');
    assert.equal(record?.statusCode, 202);

    const dry = await client.send(new InvokeCommand({ FunctionName: 'record', InvocationType: 'DryRun' }));
    assert.equal(dry.StatusCode, 204);
    assert.equal(endpoint.invocations.length, before + 1, 'DryRun did not run the handler');
  });

  it('unknown function: ResourceNotFoundException (404)', async () => {
    await assert.rejects(client.send(new InvokeCommand({ FunctionName: 'does-not-exist', Payload: encode({}) })), (error: unknown) => {
      assert.ok(error instanceof ResourceNotFoundException);
      assert.equal(error.$metadata.httpStatusCode, 404);
      assert.equal(error.Type, 'User');
      assert.match(error.message, /Function not found: arn:aws:lambda:us-east-1:000000000000:function:does-not-exist/);
      return true;
    });
  });

  it('payload that is not JSON: InvalidRequestContentException (400)', async () => {
    await assert.rejects(client.send(new InvokeCommand({ FunctionName: 'record', Payload: Buffer.from('{nope') })), (error: unknown) => {
      assert.ok(error instanceof InvalidRequestContentException);
      assert.equal(error.$metadata.httpStatusCode, 400);
      return true;
    });
  });

  it('over reserved concurrency: TooManyRequestsException (429) with its Reason; lifting the limit lets both run', async () => {
    const slowEvent = encode({ Records: [{ messageId: 's', body: JSON.stringify({ sleepMs: 600 }) }] });
    const running = client.send(new InvokeCommand({ FunctionName: 'slow', Payload: slowEvent }));
    await endpoint.waitFor(() => endpoint.inFlight('slow') === 1, 5000);
    await assert.rejects(client.send(new InvokeCommand({ FunctionName: 'slow', Payload: encode({}) })), (error: unknown) => {
      assert.ok(error instanceof TooManyRequestsException);
      assert.equal(error.$metadata.httpStatusCode, 429);
      assert.equal(error.Reason, 'ReservedFunctionConcurrentInvocationLimitExceeded');
      assert.equal(error.Type, 'User');
      return true;
    });
    assert.equal((await running).StatusCode, 200);
    assert.ok(endpoint.rejected.some((r) => r.functionName === 'slow' && r.statusCode === 429));

    endpoint.setReservedConcurrency('slow', undefined);
    const both = await Promise.all([
      client.send(new InvokeCommand({ FunctionName: 'slow', Payload: slowEvent })),
      client.send(new InvokeCommand({ FunctionName: 'slow', Payload: slowEvent })),
    ]);
    assert.deepEqual(
      both.map((o) => o.StatusCode),
      [200, 200],
    );
    assert.equal(endpoint.peakConcurrency('slow'), 2);
    endpoint.setReservedConcurrency('slow', 1);
  });

  it('request over 6 MB: 413 RequestEntityTooLargeException (unmodelled in the SDK); exactly 6291456 bytes is accepted', async () => {
    const limit = 6_291_456;
    const justRight = Buffer.from(`"${'x'.repeat(limit - 2)}"`);
    const ok = await client.send(new InvokeCommand({ FunctionName: 'record', Payload: justRight }));
    assert.equal(ok.StatusCode, 200);
    const tooBig = Buffer.from(`"${'x'.repeat(limit - 1)}"`);
    await assert.rejects(client.send(new InvokeCommand({ FunctionName: 'record', Payload: tooBig })), (error: unknown) => {
      // AWS answers this error code, which the Lambda model does not declare (it declares
      // RequestTooLargeException), so the SDK raises its generic service exception under that name.
      assert.ok(error instanceof LambdaServiceException);
      assert.ok(!(error instanceof RequestTooLargeException));
      assert.equal(error.name, 'RequestEntityTooLargeException');
      assert.equal(error.$metadata.httpStatusCode, 413);
      assert.equal(error.$fault, 'client');
      assert.match(error.message, /Request must be smaller than 6291456 bytes for the InvokeFunction operation/);
      return true;
    });
  });

  it('timeout: Sandbox.Timedout after timeoutSec, the sandbox is replaced', async () => {
    const started = Date.now();
    const out = await client.send(new InvokeCommand({ FunctionName: 'timeout', Payload: encode({}) }));
    const took = Date.now() - started;
    assert.equal(out.StatusCode, 200);
    assert.equal(out.FunctionError, 'Unhandled');
    const body = json(out) as { errorType: string; errorMessage: string };
    assert.equal(body.errorType, 'Sandbox.Timedout');
    assert.match(body.errorMessage, /Task timed out after 1\.00 seconds/);
    assert.ok(took >= 1000 && took < 3000, `answered after ${took} ms`);
    assert.equal(endpoint.invocations.find((r) => r.requestId === out.$metadata.requestId)?.status, 'timeout');
  });

  it('a handler that exits the process fails only its invocation (Runtime.ExitError); the endpoint keeps serving', async () => {
    const out = await client.send(new InvokeCommand({ FunctionName: 'crash', Payload: encode({}) }));
    assert.equal(out.FunctionError, 'Unhandled');
    const body = json(out) as { errorType: string; errorMessage: string };
    assert.equal(body.errorType, 'Runtime.ExitError');
    assert.match(body.errorMessage, /exit status 1/);
    const again = await client.send(new InvokeCommand({ FunctionName: 'crash', Payload: encode({}) }));
    assert.equal(again.FunctionError, 'Unhandled', 'a fresh sandbox ran the second invocation');
    const next = await client.send(new InvokeCommand({ FunctionName: 'record', Payload: encode({}) }));
    assert.equal(next.StatusCode, 200);
    assert.equal(next.FunctionError, undefined);
  });
});

describe('test Lambda endpoint CLI', () => {
  it('prints {"url"} when listening, one JSON line per invocation, and exits 0 on SIGTERM', async () => {
    const cli = fileURLToPath(new URL('../support/lambda-endpoint/cli.ts', import.meta.url));
    const child = spawn(
      process.execPath,
      [cli, '--port', '0', '--function', `partial=${functionFixture('partial.mjs')},timeout=5,reserved=2`],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const exited = once(child, 'exit');
    try {
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const first = await lines.next();
      const { url } = JSON.parse(String(first.value)) as { url: string };
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const client = new LambdaClient({
        endpoint: url,
        region: 'us-east-1',
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
        maxAttempts: 1,
      });
      const event = {
        Records: [
          { messageId: 'm1', body: 'fail' },
          { messageId: 'm2', body: 'ok' },
        ],
      };
      const out = await client.send(new InvokeCommand({ FunctionName: 'partial', Payload: encode(event) }));
      client.destroy();
      assert.deepEqual(json(out), { batchItemFailures: [{ itemIdentifier: 'm1' }] });
      const logged = JSON.parse(String((await lines.next()).value)) as Record<string, unknown>;
      assert.equal(logged['event'], 'invocation');
      assert.equal(logged['functionName'], 'partial');
      assert.equal(logged['status'], 'success');
      assert.equal(logged['requestId'], out.$metadata.requestId);
      assert.deepEqual(logged['messageIds'], ['m1', 'm2']);
      assert.equal(logged['payload'], undefined, 'payloads are only logged with --log-payloads');
    } finally {
      child.kill('SIGTERM');
    }
    const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
    assert.equal(signal, null);
    assert.equal(code, 0);
  });
});
