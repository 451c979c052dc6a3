// Proves the fault-injection test bed against the real SDK clients: @aws-sdk/client-sqs and client-cloudwatch
// talk to LocalStack, @aws-sdk/client-lambda to the test Lambda endpoint, each through a fault proxy (or
// Toxiproxy). Every fault must do to the SDK what the same failure in AWS would do, or the daemon's fault tests
// built on it prove nothing.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CloudWatchClient, InternalServiceFault, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import {
  InvokeCommand,
  KMSDisabledException,
  LambdaClient,
  LambdaServiceException,
  ResourceConflictException,
  ServiceException,
  TooManyRequestsException,
} from '@aws-sdk/client-lambda';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  QueueDoesNotExist,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  SQSServiceException,
  type Message,
} from '@aws-sdk/client-sqs';
import {
  countMessages,
  createQueue,
  localstackEndpoint,
  sendMessages,
  TEST_CREDENTIALS,
  TEST_REGION,
  type TestQueue,
} from '../support/aws.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { startToxiproxy } from '../support/toxiproxy.ts';

const config = (endpoint: string, maxAttempts: number) => ({ endpoint, region: TEST_REGION, credentials: TEST_CREDENTIALS, maxAttempts });
/** maxAttempts 1 unless a test is about retries: one SDK call is then exactly one request through the proxy. */
const sqsVia = (endpoint: string, maxAttempts = 1): SQSClient => new SQSClient(config(endpoint, maxAttempts));
const lambdaVia = (endpoint: string, maxAttempts = 1): LambdaClient => new LambdaClient(config(endpoint, maxAttempts));

/** What a test asserts about an SDK failure. */
interface Failure {
  name: string;
  code: string | undefined;
  status: number | undefined;
  error: unknown;
}
async function failure(promise: Promise<unknown>): Promise<Failure> {
  try {
    await promise;
  } catch (error) {
    const e = error as Error & { code?: string; $metadata?: { httpStatusCode?: number } };
    return { name: e.name, code: e.code, status: e.$metadata?.httpStatusCode, error };
  }
  assert.fail('expected the call to fail');
}
const attributes = (client: SQSClient, q: TestQueue, abortSignal?: AbortSignal) =>
  client.send(new GetQueueAttributesCommand({ QueueUrl: q.url, AttributeNames: ['QueueArn'] }), { abortSignal });
const receive = (client: SQSClient, q: TestQueue, abortSignal?: AbortSignal) =>
  client.send(new ReceiveMessageCommand({ QueueUrl: q.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }), { abortSignal });
const receiveAll = async (client: SQSClient, q: TestQueue, n: number): Promise<Message[]> => {
  const got: Message[] = [];
  for (let i = 0; i < 20 && got.length < n; i += 1) got.push(...((await receive(client, q)).Messages ?? []));
  assert.equal(got.length, n);
  return got;
};

describe('fault proxy in front of LocalStack SQS', () => {
  let proxy: FaultProxy;
  let sqs: SQSClient;
  let q: TestQueue;
  before(async () => {
    await ensureLocalStack();
    q = await createQueue('wl-fault-bed', { VisibilityTimeout: '30' });
  });
  // A proxy per test, so one test's hung connections and rules cannot leak into the next.
  beforeEach(async () => {
    proxy = await startFaultProxy({ upstream: localstackEndpoint() });
    sqs = sqsVia(proxy.url);
  });
  afterEach(async () => {
    sqs.destroy();
    await proxy.close();
  });

  it('passes requests through and names each SQS operation from X-Amz-Target', async () => {
    await sendMessages(q.url, ['a'], sqs);
    const [m] = await receiveAll(sqs, q, 1);
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: q.url, Entries: [{ Id: 'x', ReceiptHandle: m!.ReceiptHandle }] }));
    assert.deepEqual([...new Set(proxy.calls().map((c) => c.operation))], ['SendMessageBatch', 'ReceiveMessage', 'DeleteMessageBatch']);
    assert.ok(proxy.calls().every((c) => c.service === 'sqs' && c.queueUrl === q.url && c.status === 200 && c.fault === undefined));
  });

  it('hang: never answers, the client gives up through its abort signal, the connection outlives the window', async () => {
    const rule = proxy.inject({ operation: 'ReceiveMessage', fault: { kind: 'hang' }, forMs: 300 });
    const started = Date.now();
    const hung = failure(receive(sqs, q, AbortSignal.timeout(1_500)));
    const call = await proxy.waitForCall((c) => c.fault === 'hang');
    // Other operations are untouched while ReceiveMessage hangs.
    await attributes(sqs, q);
    await rule.ended;
    assert.equal(proxy.hungConnections(), 1, 'the window is over, yet the hung connection is still open');
    assert.equal(call.endedAt, undefined);
    // A new ReceiveMessage goes through at once, on another connection.
    assert.ok(Array.isArray((await receive(sqs, q)).Messages ?? []));
    const { name } = await hung;
    assert.equal(name, 'AbortError');
    assert.ok(Date.now() - started >= 1_400, 'only the abort signal ended it');
    await proxy.waitForCall((c) => c === call && c.clientClosed);
    assert.equal(call.status, undefined);
    assert.equal(proxy.hungConnections(), 0, 'the client closed it');
  });

  it('hang: close() destroys a hung connection that the client never gives up on', async () => {
    proxy.inject({ fault: { kind: 'hang' } });
    // A bare HTTP client with no timeout, like an SDK client without requestTimeout or abort signal.
    const outcome = new Promise<string>((resolve) => {
      const req = httpRequest(`${proxy.url}/`, { method: 'POST', headers: { 'x-amz-target': 'AmazonSQS.ListQueues' } }, () =>
        resolve('answered'),
      );
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      req.end('{}');
    });
    await proxy.waitForCall((c) => c.fault === 'hang');
    await sleep(200);
    assert.equal(proxy.hungConnections(), 1);
    await proxy.close();
    assert.equal(await outcome, 'ECONNRESET');
  });

  it('reset-after-send: the client sees a reset, yet the SendMessage happened', async () => {
    const target = await createQueue('wl-fault-reset-after');
    proxy.inject({ operation: 'SendMessage', fault: { kind: 'reset-after-send' }, count: 1 });
    const { name, code } = await failure(sqs.send(new SendMessageCommand({ QueueUrl: target.url, MessageBody: 'once' })));
    assert.equal(code, 'ECONNRESET', name);
    const [call] = proxy.calls('SendMessage');
    assert.equal(call?.upstreamStatus, 200);
    assert.equal(call?.status, undefined);
    assert.equal(await countMessages(target.url), 1, 'the message was sent although the client saw an error');
  });

  it('reset-after-send with the SDK default retries: the retry sends the message twice', async () => {
    const target = await createQueue('wl-fault-reset-retry');
    const retrying = sqsVia(proxy.url, 3);
    proxy.inject({ operation: 'SendMessage', fault: { kind: 'reset-after-send' }, count: 1 });
    const sent = await retrying.send(new SendMessageCommand({ QueueUrl: target.url, MessageBody: 'once' }));
    assert.equal(sent.$metadata.attempts, 2);
    assert.equal(await countMessages(target.url), 2, 'an SDK retry after a reset duplicates a SendMessage');
    retrying.destroy();
  });

  it('reset-before-send: the client sees a reset and nothing happened', async () => {
    const target = await createQueue('wl-fault-reset-before');
    proxy.inject({ operation: 'SendMessage', fault: { kind: 'reset-before-send' }, count: 1 });
    const { code } = await failure(sqs.send(new SendMessageCommand({ QueueUrl: target.url, MessageBody: 'never' })));
    assert.equal(code, 'ECONNRESET');
    assert.equal(proxy.calls('SendMessage')[0]?.upstreamStatus, undefined);
    assert.equal(await countMessages(target.url), 0);
  });

  it('status: SQS errors map to the SDK exception, status code and fault', async () => {
    proxy.inject({
      operation: 'ChangeMessageVisibilityBatch',
      fault: { kind: 'status', status: 500, errorType: 'InternalError' },
      count: 1,
    });
    const batch = new ChangeMessageVisibilityBatchCommand({
      QueueUrl: q.url,
      Entries: [{ Id: '0', ReceiptHandle: 'rh', VisibilityTimeout: 0 }],
    });
    const internal = await failure(sqs.send(batch));
    assert.equal(internal.name, 'InternalError');
    assert.equal(internal.status, 500);
    assert.ok(internal.error instanceof SQSServiceException);
    assert.equal(internal.error.$fault, 'server');

    proxy.inject({
      operation: 'GetQueueAttributes',
      fault: { kind: 'status', status: 400, errorType: 'QueueDoesNotExist', queryErrorCode: 'AWS.SimpleQueueService.NonExistentQueue' },
      count: 1,
    });
    const missing = await failure(attributes(sqs, q));
    assert.ok(missing.error instanceof QueueDoesNotExist, missing.name);
    assert.equal(missing.status, 400);
    assert.equal(missing.error.$fault, 'client');

    // ReceiveMessage was never faulted; both faulted calls were answered by the proxy, not LocalStack.
    assert.deepEqual(
      proxy
        .calls()
        .filter((c) => c.fault !== undefined)
        .map((c) => [c.operation, c.status, c.upstreamStatus]),
      [
        ['ChangeMessageVisibilityBatch', 500, undefined],
        ['GetQueueAttributes', 400, undefined],
      ],
    );
  });

  it('status with the SDK default retries: a 500 is retried, a count of 2 lets the third attempt through', async () => {
    const retrying = sqsVia(proxy.url, 3);
    proxy.inject({ operation: 'GetQueueAttributes', fault: { kind: 'status', status: 500, errorType: 'InternalError' }, count: 2 });
    const result = await attributes(retrying, q);
    assert.equal(result.$metadata.attempts, 3);
    assert.deepEqual(
      proxy.calls('GetQueueAttributes').map((c) => c.status),
      [500, 500, 200],
    );
    retrying.destroy();
  });

  it('count and window expiry let requests through again', async () => {
    proxy.inject({ operation: 'GetQueueAttributes', fault: { kind: 'status', status: 503, errorType: 'ServiceUnavailable' }, count: 2 });
    assert.equal((await failure(attributes(sqs, q))).status, 503);
    assert.equal((await failure(attributes(sqs, q))).status, 503);
    await attributes(sqs, q);

    const windowed = proxy.inject({
      operation: 'GetQueueAttributes',
      fault: { kind: 'status', status: 500, errorType: 'InternalError' },
      forMs: 400,
    });
    assert.equal((await failure(attributes(sqs, q))).name, 'InternalError');
    await windowed.ended;
    assert.equal(windowed.active, false);
    await attributes(sqs, q);
    assert.deepEqual(
      proxy.calls('GetQueueAttributes').map((c) => c.status),
      [503, 503, 200, 500, 200],
    );
  });

  it('delay: forwards, then holds the answer', async () => {
    proxy.inject({ operation: 'GetQueueAttributes', fault: { kind: 'delay', ms: 400 }, count: 1 });
    const t0 = Date.now();
    const result = await attributes(sqs, q);
    assert.ok(Date.now() - t0 >= 390);
    assert.equal(result.Attributes?.['QueueArn'], q.arn);
  });

  it('refuse: new connections get ECONNREFUSED for the window, then the same port accepts again', async () => {
    await attributes(sqs, q); // leaves an idle keep-alive connection, which the refuse window must close
    const rule = proxy.inject({ fault: { kind: 'refuse' }, forMs: 500 });
    // A client with a pooled connection may reuse it before it sees the close: ECONNRESET, as when a server dies.
    const pooled = await failure(attributes(sqs, q));
    assert.ok(pooled.code === 'ECONNRESET' || pooled.code === 'ECONNREFUSED', `${pooled.name}: ${String(pooled.error)}`);
    // A new connection is refused outright.
    const fresh = sqsVia(proxy.url);
    const refused = await failure(attributes(fresh, q));
    assert.equal(refused.code, 'ECONNREFUSED', `${refused.name}: ${String(refused.error)}`);
    await rule.ended;
    await attributes(fresh, q);
    await attributes(sqs, q);
    fresh.destroy();
    assert.equal(new URL(proxy.url).port, String(proxy.port));
  });

  it('entry-failure: selected entries come back Failed and really stay in the queue', async () => {
    const target = await createQueue('wl-fault-entries', { VisibilityTimeout: '30' });
    await sendMessages(target.url, ['a', 'b', 'c'], sqs);
    const messages = await receiveAll(sqs, target, 3);
    proxy.inject({ operation: 'DeleteMessageBatch', fault: { kind: 'entry-failure', entryIds: ['1'] }, count: 1 });
    const result = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: target.url,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }),
    );
    assert.deepEqual(result.Successful?.map((s) => s.Id).sort(), ['0', '2']);
    assert.deepEqual(
      result.Failed?.map((f) => [f.Id, f.Code, f.SenderFault]),
      [['1', 'ReceiptHandleIsInvalid', true]],
    );
    assert.equal(await countMessages(target.url), 1, 'the failed entry was not deleted');
  });

  it('probability: a seeded generator faults exactly the requests it picks', async () => {
    const draws = [0.1, 0.9, 0.2, 0.8];
    let i = 0;
    const seeded = await startFaultProxy({ upstream: localstackEndpoint(), random: () => draws[i++ % draws.length]! });
    const client = sqsVia(seeded.url);
    seeded.inject({
      operation: 'GetQueueAttributes',
      fault: { kind: 'status', status: 500, errorType: 'InternalError' },
      probability: 0.5,
    });
    for (let n = 0; n < 4; n += 1) await attributes(client, q).catch(() => undefined);
    assert.deepEqual(
      seeded.calls('GetQueueAttributes').map((c) => c.status),
      [500, 200, 500, 200],
    );
    client.destroy();
    await seeded.close();
  });
});

describe('fault proxy in front of LocalStack CloudWatch', () => {
  it('names PutMetricData (AWS JSON 1.0, X-Amz-Target) and maps a 500 to InternalServiceFault', async () => {
    await ensureLocalStack();
    const proxy = await startFaultProxy({ upstream: localstackEndpoint() });
    const cloudwatch = new CloudWatchClient(config(proxy.url, 1));
    const put = new PutMetricDataCommand({ Namespace: 'workerless/fault-bed', MetricData: [{ MetricName: 'probe', Value: 1 }] });
    await cloudwatch.send(put);
    proxy.inject({
      operation: 'PutMetricData',
      fault: { kind: 'status', status: 500, errorType: 'InternalServiceFault', queryErrorCode: 'InternalServiceError' },
      count: 1,
    });
    const failed = await failure(cloudwatch.send(put));
    assert.ok(failed.error instanceof InternalServiceFault, failed.name);
    assert.equal(failed.status, 500);
    assert.deepEqual(
      proxy.calls().map((c) => [c.service, c.operation, c.status]),
      [
        ['cloudwatch', 'PutMetricData', 200],
        ['cloudwatch', 'PutMetricData', 500],
      ],
    );
    cloudwatch.destroy();
    await proxy.close();
  });
});

describe('fault proxy in front of the test Lambda endpoint', () => {
  let endpoint: LambdaEndpoint;
  let proxy: FaultProxy;
  let lambda: LambdaClient;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: { record: { handler: functionFixture('record.mjs') }, slow: { handler: functionFixture('slow.mjs') } },
    });
    proxy = await startFaultProxy({ upstream: endpoint.url });
    lambda = lambdaVia(proxy.url);
  });
  after(async () => {
    lambda.destroy();
    await proxy.close();
    await endpoint.stop();
  });
  const invoke = (fn: string, type: 'RequestResponse' | 'DryRun' = 'RequestResponse', abortSignal?: AbortSignal) =>
    lambda.send(new InvokeCommand({ FunctionName: fn, InvocationType: type, Payload: Buffer.from('{"Records":[]}') }), { abortSignal });

  it('reset-after-send on Invoke only: DryRun passes, the reset Invoke really ran', async () => {
    endpoint.reset();
    proxy.inject({ operation: 'Invoke', invocationType: 'RequestResponse', fault: { kind: 'reset-after-send' }, count: 1 });
    assert.equal((await invoke('record', 'DryRun')).StatusCode, 204);
    const { code } = await failure(invoke('record'));
    assert.equal(code, 'ECONNRESET');
    assert.deepEqual(
      endpoint.invocations.map((i) => [i.functionName, i.status]),
      [['record', 'success']],
    );
    const calls = proxy.calls('Invoke').slice(-2);
    assert.deepEqual(
      calls.map((c) => [c.invocationType, c.functionName, c.fault, c.upstreamStatus]),
      [
        ['DryRun', 'record', undefined, 204],
        ['RequestResponse', 'record', 'reset-after-send', 200],
      ],
    );
  });

  it("reset-after-send when 'sent': the function is still running when the client sees the reset", async () => {
    endpoint.reset();
    proxy.inject({ operation: 'Invoke', fault: { kind: 'reset-after-send', when: 'sent' }, count: 1 });
    const slow = lambda.send(
      new InvokeCommand({ FunctionName: 'slow', Payload: Buffer.from('{"Records":[{"body":"{\\"sleepMs\\":800}"}]}') }),
    );
    assert.equal((await failure(slow)).code, 'ECONNRESET');
    assert.equal(endpoint.inFlight('slow'), 1, 'reset while the invocation runs');
    await endpoint.waitFor((inv) => inv.some((i) => i.status === 'success'), 5_000);
  });

  it('hang on Invoke: the client times out through its abort signal', async () => {
    proxy.inject({ operation: 'Invoke', fault: { kind: 'hang' }, count: 1 });
    const { name } = await failure(invoke('record', 'RequestResponse', AbortSignal.timeout(300)));
    assert.equal(name, 'AbortError');
  });

  const cases = [
    {
      status: 429,
      errorType: 'TooManyRequestsException',
      fields: { Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded' },
      cls: TooManyRequestsException,
      fault: 'client',
    },
    { status: 500, errorType: 'ServiceException', cls: ServiceException, fault: 'server' },
    { status: 502, errorType: 'KMSDisabledException', cls: KMSDisabledException, fault: 'server' },
    { status: 409, errorType: 'ResourceConflictException', cls: ResourceConflictException, fault: 'client' },
    // Not modelled by client-lambda: the SDK falls back to its base exception, named after the code.
    { status: 403, errorType: 'AccessDeniedException', cls: LambdaServiceException, fault: 'client' },
  ] as const;
  for (const c of cases) {
    it(`status ${c.status} ${c.errorType} -> ${c.cls.name}`, async () => {
      proxy.inject({
        operation: 'Invoke',
        fault: { kind: 'status', status: c.status, errorType: c.errorType, ...('fields' in c ? { fields: c.fields } : {}) },
        count: 1,
      });
      const failed = await failure(invoke('record'));
      assert.ok(failed.error instanceof c.cls, failed.name);
      assert.equal(failed.name, c.errorType);
      assert.equal(failed.status, c.status);
      assert.equal((failed.error as LambdaServiceException).$fault, c.fault);
      if ('fields' in c) assert.equal((failed.error as TooManyRequestsException).Reason, c.fields.Reason);
    });
  }

  it('refuse on the Lambda side: ECONNREFUSED, then Invoke works again', async () => {
    const rule = proxy.inject({ fault: { kind: 'refuse' }, forMs: 300 });
    // A new client: no pooled connection that could fail with ECONNRESET instead (see the SQS refuse test).
    const fresh = lambdaVia(proxy.url);
    const send = () => fresh.send(new InvokeCommand({ FunctionName: 'record', Payload: Buffer.from('{}') }));
    assert.equal((await failure(send())).code, 'ECONNREFUSED');
    await rule.ended;
    assert.equal((await send()).StatusCode, 200);
    fresh.destroy();
  });
});

describe('toxiproxy helper in front of LocalStack', () => {
  it('a timeout toxic hangs requests; removing it lets new ones through; disabling refuses', async () => {
    await ensureLocalStack();
    const q = await createQueue('wl-toxiproxy');
    const toxiproxy = await startToxiproxy();
    try {
      const proxy = await toxiproxy.createProxy({ upstream: new URL(localstackEndpoint()).host });
      assert.match(proxy.listen, /^127\.0\.0\.1:\d+$/);
      const sqs = sqsVia(proxy.url);
      await attributes(sqs, q);

      const toxic = await proxy.addToxic({ type: 'timeout', attributes: { timeout: 0 } }, { stream: 'upstream' });
      const t0 = Date.now();
      assert.equal((await failure(attributes(sqs, q, AbortSignal.timeout(700)))).name, 'AbortError');
      assert.ok(Date.now() - t0 >= 650);
      await proxy.removeToxic(toxic);
      await attributes(sqs, q, AbortSignal.timeout(5_000));

      await proxy.setEnabled(false);
      // A new client, so the call must connect: the old one may still hold its keep-alive socket, which it
      // learns toxiproxy closed only when it writes to it (ECONNRESET, seen once in CI).
      const fresh = sqsVia(proxy.url);
      assert.equal((await failure(attributes(fresh, q))).code, 'ECONNREFUSED');
      fresh.destroy();
      await proxy.setEnabled(true);
      await attributes(sqs, q);
      sqs.destroy();
    } finally {
      await toxiproxy.stop();
    }
  });
});
