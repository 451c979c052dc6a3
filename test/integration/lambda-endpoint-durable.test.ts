// The test Lambda endpoint's model of durable executions (test/support/lambda-endpoint/durable-executions.ts), as
// @aws-sdk/client-lambda sees it. Each behaviour comes from AWS's pages: "Idempotency" in the Lambda Developer
// Guide (https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html, "Idempotency behavior"),
// the Invoke API reference (DurableExecutionName; StatusCode 202 for Event) and Lambda's quotas (1 MB for an
// asynchronous invocation's payload, 6 MB for a synchronous one).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { DurableExecutionAlreadyStartedException, InvokeCommand, LambdaClient, LambdaServiceException } from '@aws-sdk/client-lambda';
import { lambdaClient } from '../support/aws.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

const encode = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));
const text = (payload: Uint8Array | undefined): string => Buffer.from(payload ?? new Uint8Array()).toString('utf8');

describe('test Lambda endpoint: durable execution names, through @aws-sdk/client-lambda', () => {
  let endpoint: LambdaEndpoint;
  let client: LambdaClient;

  before(async () => {
    endpoint = await startLambdaEndpoint({
      handlerOutput: 'ignore',
      functions: {
        echo: { handler: functionFixture('echo.mjs') },
        slow: { handler: functionFixture('slow.mjs'), env: { SLOW_MS: '300' } },
        fail: { handler: functionFixture('fail.mjs') },
      },
    });
    client = lambdaClient(endpoint.url);
  });
  after(async () => {
    client.destroy();
    await endpoint.stop();
  });

  const invoke = (name: string, payload: unknown, type: 'Event' | 'RequestResponse', fn = 'echo') =>
    client.send(new InvokeCommand({ FunctionName: fn, InvocationType: type, DurableExecutionName: name, Payload: encode(payload) }));
  const runsOf = (name: string) =>
    endpoint.invocations.filter((r) => endpoint.durable.executions.get(name)?.invocation === r || JSON.stringify(r.payload).includes(name));

  it('Event: a new name starts an execution (202); the same name and payload again starts nothing and is accepted again', async () => {
    const first = await invoke('order-1', { order: 'order-1' }, 'Event');
    assert.equal(first.StatusCode, 202);
    await endpoint.waitFor(() => endpoint.durable.executions.get('order-1')?.invocation.status === 'success');
    const again = await invoke('order-1', { order: 'order-1' }, 'Event');
    assert.equal(again.StatusCode, 202);
    await delay(100);
    assert.equal(runsOf('order-1').length, 1, 'the handler ran once');
    assert.equal(endpoint.durable.executions.get('order-1')?.reattached, 1);
  });

  it('the same name with another payload: DurableExecutionAlreadyStartedException, 409 as the SDK models it', async () => {
    await invoke('order-2', { order: 'order-2' }, 'Event');
    for (const type of ['Event', 'RequestResponse'] as const) {
      await assert.rejects(invoke('order-2', { order: 'order-2', changed: true }, type), (err: unknown) => {
        assert.ok(err instanceof DurableExecutionAlreadyStartedException, String(err));
        assert.equal(err.$metadata.httpStatusCode, 409);
        return true;
      });
    }
    assert.equal(endpoint.durable.executions.get('order-2')?.refused, 2);
    assert.equal(runsOf('order-2').length, 1);
  });

  it('RequestResponse: a second start under the name reattaches: it waits for the running execution and gets its answer', async () => {
    const [a, b] = await Promise.all([
      invoke('slow-1', { n: 1 }, 'RequestResponse', 'slow'),
      delay(50).then(() => invoke('slow-1', { n: 1 }, 'RequestResponse', 'slow')),
    ]);
    assert.equal(a.StatusCode, 200);
    assert.equal(b.StatusCode, 200);
    assert.equal(text(b.Payload), text(a.Payload));
    assert.equal(endpoint.invocations.filter((r) => r.functionName === 'slow').length, 1, 'one execution ran');
    // A closed execution answers the same way, with its result.
    const later = await invoke('slow-1', { n: 1 }, 'RequestResponse', 'slow');
    assert.equal(text(later.Payload), text(a.Payload));
    assert.equal(endpoint.durable.executions.get('slow-1')?.reattached, 2);
  });

  it("a reattached synchronous start of a failed execution gets the execution's function error", async () => {
    const first = await invoke('fail-1', {}, 'RequestResponse', 'fail');
    const again = await invoke('fail-1', {}, 'RequestResponse', 'fail');
    assert.equal(first.FunctionError, 'Unhandled');
    assert.equal(again.FunctionError, 'Unhandled');
    assert.equal(text(again.Payload), text(first.Payload));
    assert.equal(endpoint.invocations.filter((r) => r.functionName === 'fail').length, 1);
  });

  it('a name outside 1-64 characters of [a-zA-Z0-9-_] is refused (400) and starts nothing', async () => {
    for (const name of ['has space', 'x'.repeat(65)]) {
      await assert.rejects(invoke(name, {}, 'Event'), (err: unknown) => {
        assert.ok(err instanceof LambdaServiceException);
        assert.equal(err.$metadata.httpStatusCode, 400);
        return true;
      });
      assert.equal(endpoint.durable.executions.has(name), false);
    }
  });

  it('an Event payload over 1 MB is refused with 413 before any name is taken; the same one synchronously is not', async () => {
    const big = { body: 'x'.repeat(1024 * 1024) };
    await assert.rejects(invoke('big-1', big, 'Event'), (err: unknown) => {
      assert.ok(err instanceof LambdaServiceException);
      assert.equal(err.$metadata.httpStatusCode, 413);
      return true;
    });
    assert.equal(endpoint.durable.executions.has('big-1'), false);
    const sync = await invoke('big-1', big, 'RequestResponse');
    assert.equal(sync.StatusCode, 200);
  });
});
