import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CloudWatchClient, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { InvokeCommand, LambdaClient, ResourceNotFoundException, TooManyRequestsException } from '@aws-sdk/client-lambda';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  QueueDoesNotExist,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { classifyAwsError } from '../../../src/core/errors.ts';
import { backoffMs } from '../../../src/util/backoff.ts';
import { checkFunction } from '../../../src/daemon/function-check.ts';
import { LambdaSdkInvoker } from '../../../src/aws/lambda-sdk-invoker.ts';
import { CloudWatchMetrics } from '../../../src/operator/metrics/cloudwatch.ts';
import { CloudWatchSdkPublisher } from '../../../src/aws/cloudwatch-sdk.ts';
import { SqsSdkSource } from '../../../src/aws/sqs-sdk-source.ts';
import { StartupError } from '../../../src/core/errors.ts';
import { resolveQueues } from '../../../src/daemon/startup-checks.ts';
import { queue, silentLogger } from '../../support/factories.ts';

const region = 'us-east-1';

describe('SqsSdkSource', () => {
  it('receives with All system and message attributes and the requested wait and visibility', async () => {
    const sqs = mockClient(SQSClient);
    sqs.on(ReceiveMessageCommand).resolves({ Messages: [{ MessageId: 'm1' }] });
    const source = new SqsSdkSource(new SQSClient({ region }));
    const got = await source.receive(queue('q'), { max: 7, waitSec: 20, visibilityTimeoutSec: 45 });
    assert.deepEqual(got, [{ MessageId: 'm1' }]);
    assert.deepEqual(sqs.commandCalls(ReceiveMessageCommand)[0]!.args[0].input, {
      QueueUrl: queue('q').url,
      MaxNumberOfMessages: 7,
      WaitTimeSeconds: 20,
      VisibilityTimeout: 45,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    });
    sqs.restore();
  });

  it('reports the entries DeleteMessageBatch refused', async () => {
    const sqs = mockClient(SQSClient);
    sqs
      .on(DeleteMessageBatchCommand)
      .resolves({ Successful: [{ Id: '0' }], Failed: [{ Id: '1', Code: 'ReceiptHandleIsInvalid', SenderFault: true, Message: 'bad' }] });
    const source = new SqsSdkSource(new SQSClient({ region }));
    const failed = await source.deleteBatch(queue('q'), [
      { id: '0', receiptHandle: 'a' },
      { id: '1', receiptHandle: 'b' },
    ]);
    assert.deepEqual(failed, [{ id: '1', code: 'ReceiptHandleIsInvalid', message: 'bad' }]);
    sqs.restore();
  });
});

describe('resolveQueues', () => {
  it('resolves names and URLs to URL, ARN, region, FIFO flag and visibility timeout', async () => {
    const sqs = mockClient(SQSClient);
    sqs.on(GetQueueUrlCommand, { QueueName: 'jobs' }).resolves({ QueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/jobs' });
    sqs.on(GetQueueAttributesCommand, { QueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/jobs' }).resolves({
      Attributes: { QueueArn: 'arn:aws:sqs:eu-west-1:123456789012:jobs', VisibilityTimeout: '90' },
    });
    sqs.on(GetQueueAttributesCommand, { QueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo' }).resolves({
      Attributes: { QueueArn: 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo', VisibilityTimeout: '30', FifoQueue: 'true' },
    });
    const got = await resolveQueues(
      new SqsSdkSource(new SQSClient({ region })),
      [
        { ref: 'jobs', weight: 3 },
        { ref: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo', weight: 1 },
      ],
      undefined,
    );
    assert.deepEqual(got, [
      {
        name: 'jobs',
        url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/jobs',
        arn: 'arn:aws:sqs:eu-west-1:123456789012:jobs',
        region: 'eu-west-1',
        fifo: false,
        visibilityTimeoutSec: 90,
        weight: 3,
      },
      {
        name: 'orders.fifo',
        url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo',
        arn: 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo',
        region: 'eu-west-1',
        fifo: true,
        visibilityTimeoutSec: 30,
        weight: 1,
      },
    ]);
    assert.equal(sqs.commandCalls(GetQueueUrlCommand).length, 1);
    sqs.restore();
  });

  it('explains a missing queue and an unreachable endpoint in one line', async () => {
    const sqs = mockClient(SQSClient);
    sqs
      .on(GetQueueUrlCommand, { QueueName: 'nope' })
      .rejects(new QueueDoesNotExist({ message: 'The specified queue does not exist.', $metadata: {} }));
    await assert.rejects(
      resolveQueues(new SqsSdkSource(new SQSClient({ region })), [{ ref: 'nope', weight: 1 }], undefined),
      (err: unknown) => {
        assert.ok(err instanceof StartupError);
        assert.equal(err.message, 'queue nope: does not exist (QueueDoesNotExist)');
        return true;
      },
    );
    sqs
      .on(GetQueueUrlCommand, { QueueName: 'far' })
      .rejects(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }));
    await assert.rejects(resolveQueues(new SqsSdkSource(new SQSClient({ region })), [{ ref: 'far', weight: 1 }], undefined), {
      message: 'queue far: cannot reach SQS: ECONNREFUSED (check --endpoint-url / --region and the network)',
    });
    sqs.restore();
  });
});

describe('LambdaSdkInvoker', () => {
  it('invokes synchronously and returns the payload and FunctionError', async () => {
    const lambda = mockClient(LambdaClient);
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: Buffer.from('{"errorType":"Error","errorMessage":"boom"}') as never,
    });
    const invoker = new LambdaSdkInvoker(new LambdaClient({ region }), 'fn:live');
    const out = await invoker.invoke('{"Records":[]}');
    assert.deepEqual(out, { ok: true, response: { payload: '{"errorType":"Error","errorMessage":"boom"}', functionError: 'Unhandled' } });
    const input = lambda.commandCalls(InvokeCommand)[0]!.args[0].input;
    assert.equal(input.FunctionName, 'fn:live');
    assert.equal(input.InvocationType, 'RequestResponse');
    assert.equal(Buffer.from(input.Payload as Uint8Array).toString(), '{"Records":[]}');
    lambda.restore();
  });

  it('returns AWS errors classified instead of throwing', async () => {
    const lambda = mockClient(LambdaClient);
    lambda.on(InvokeCommand).rejects(
      new TooManyRequestsException({
        message: 'Rate Exceeded.',
        $metadata: { httpStatusCode: 429 },
        Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
      }),
    );
    const out = await new LambdaSdkInvoker(new LambdaClient({ region }), 'fn').invoke('{}');
    assert.equal(out.ok, false);
    assert.equal(!out.ok && out.error.kind, 'throttled');
    lambda.restore();
  });

  it('the start-up DryRun check explains a missing function', async () => {
    const lambda = mockClient(LambdaClient);
    lambda.on(InvokeCommand).rejects(
      new ResourceNotFoundException({
        message: 'Function not found: arn:aws:lambda:us-east-1:000000000000:function:nope',
        $metadata: { httpStatusCode: 404 },
      }),
    );
    const invoker = new LambdaSdkInvoker(new LambdaClient({ region }), 'nope');
    await assert.rejects(checkFunction(invoker, 'nope'), { message: 'function nope: does not exist (ResourceNotFoundException)' });
    assert.equal(lambda.commandCalls(InvokeCommand)[0]!.args[0].input.InvocationType, 'DryRun');
    lambda
      .on(InvokeCommand)
      .rejects(Object.assign(new Error('User is not authorized'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 403 } }));
    await assert.rejects(checkFunction(invoker, 'nope'), {
      message: 'function nope: cannot invoke: access denied (needs lambda:InvokeFunction)',
    });
    // The spillover function's check says which function it was.
    await assert.rejects(checkFunction(invoker, 'nope', undefined, 'Temporal worker function'), {
      message: 'Temporal worker function nope: cannot invoke: access denied (needs lambda:InvokeFunction)',
    });
    lambda.restore();
  });
});

describe('CloudWatchMetrics', () => {
  it('sends one statistic set per metric and queue, not one datum per message', async () => {
    const cw = mockClient(CloudWatchClient);
    cw.on(PutMetricDataCommand).resolves({});
    const metrics = new CloudWatchMetrics(new CloudWatchSdkPublisher(new CloudWatchClient({ region })), silentLogger, {
      namespace: 'Workerless-test',
    });
    for (const v of [10, 20, 30])
      metrics.record({ name: 'ProcessingDuration', unit: 'Milliseconds', value: v, dimensions: { Queue: 'a' } });
    metrics.record({ name: 'MessagesReceived', unit: 'Count', value: 3, dimensions: { Queue: 'a' } });
    metrics.record({ name: 'MessagesReceived', unit: 'Count', value: 1, dimensions: { Queue: 'b' } });
    await metrics.flush();
    const calls = cw.commandCalls(PutMetricDataCommand);
    assert.equal(calls.length, 1);
    const input = calls[0]!.args[0].input;
    assert.equal(input.Namespace, 'Workerless-test');
    const byKey = Object.fromEntries(
      (input.MetricData ?? []).map((d) => [`${d.MetricName}/${d.Dimensions?.[0]?.Value}`, [d.Unit, d.StatisticValues]]),
    );
    assert.deepEqual(byKey, {
      'ProcessingDuration/a': ['Milliseconds', { SampleCount: 3, Sum: 60, Minimum: 10, Maximum: 30 }],
      'MessagesReceived/a': ['Count', { SampleCount: 1, Sum: 3, Minimum: 3, Maximum: 3 }],
      'MessagesReceived/b': ['Count', { SampleCount: 1, Sum: 1, Minimum: 1, Maximum: 1 }],
    });
    await metrics.flush();
    assert.equal(cw.commandCalls(PutMetricDataCommand).length, 1, 'nothing new, nothing sent');
    cw.restore();
  });

  it('splits at 1000 datums per call, keeps data when CloudWatch fails, and bounds what it keeps', async () => {
    const cw = mockClient(CloudWatchClient);
    cw.on(PutMetricDataCommand)
      .rejectsOnce(Object.assign(new Error('down'), { name: 'InternalServiceError', $metadata: { httpStatusCode: 500 } }))
      .resolves({});
    const metrics = new CloudWatchMetrics(new CloudWatchSdkPublisher(new CloudWatchClient({ region })), silentLogger, {
      namespace: 'ns',
      maxPendingDatums: 1500,
    });
    for (let i = 0; i < 1200; i++) metrics.record({ name: 'MessagesReceived', unit: 'Count', value: 1, dimensions: { Queue: `q${i}` } });
    await metrics.flush(); // fails: kept
    for (let i = 0; i < 600; i++) metrics.record({ name: 'MessagesDeleted', unit: 'Count', value: 1, dimensions: { Queue: `q${i}` } });
    await metrics.flush(); // 1800 pending > 1500: the oldest 300 are dropped, the rest go out in 2 calls
    const sizes = cw.commandCalls(PutMetricDataCommand).map((c) => c.args[0].input.MetricData?.length);
    assert.deepEqual(sizes, [1000, 1000, 500]);
    cw.restore();
  });
});

describe('classifyAwsError and backoff', () => {
  it('classifies throttling, server, network and client errors', () => {
    assert.equal(
      classifyAwsError(Object.assign(new Error('x'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } })).kind,
      'throttled',
    );
    assert.equal(
      classifyAwsError(Object.assign(new Error('x'), { name: 'Whatever', $metadata: { httpStatusCode: 429 } })).kind,
      'throttled',
    );
    assert.equal(
      classifyAwsError(Object.assign(new Error('x'), { name: 'ServiceException', $metadata: { httpStatusCode: 500 } })).kind,
      'retryable',
    );
    assert.deepEqual(classifyAwsError(Object.assign(new Error('x'), { cause: { code: 'ECONNRESET' } })).code, 'ECONNRESET');
    assert.equal(classifyAwsError(Object.assign(new AggregateError([{ code: 'ECONNREFUSED' }]), {})).kind, 'retryable');
    assert.equal(
      classifyAwsError(Object.assign(new Error('x'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 403 } })).kind,
      'fatal',
    );
    assert.equal(classifyAwsError(new Error('plain')).kind, 'fatal');
  });

  it("caps the message (src/util/cap-text.ts): Lambda's InvalidRequestContentException quotes the payload it could not parse", () => {
    const quoted = `Could not parse request body into json: ${'x'.repeat(4096)} PAYLOAD-MARKER`;
    const e = classifyAwsError(
      Object.assign(new Error(quoted), { name: 'InvalidRequestContentException', $metadata: { httpStatusCode: 400 } }),
    );
    assert.equal(e.code, 'InvalidRequestContentException');
    assert.match(e.message, /^Could not parse request body into json: x+…\[\d+ bytes cut\]$/);
    assert.ok(!e.message.includes('PAYLOAD-MARKER'));
  });

  it('an abort by our own timeout is a retryable TimeoutError, any other abort is not', async () => {
    const silent = await import('node:net').then((net) => net.createServer(() => {}));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const client = new SQSClient({
      region,
      endpoint: `http://127.0.0.1:${port}`,
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      maxAttempts: 1,
    });
    const signal = AbortSignal.timeout(100);
    const err = await client.send(new ReceiveMessageCommand({ QueueUrl: 'q' }), { abortSignal: signal }).catch((e: unknown) => e);
    assert.deepEqual([classifyAwsError(err, signal).kind, classifyAwsError(err, signal).code], ['retryable', 'TimeoutError']);
    const stop = new AbortController();
    const pending = client.send(new ReceiveMessageCommand({ QueueUrl: 'q' }), { abortSignal: stop.signal }).catch((e: unknown) => e);
    stop.abort();
    assert.equal(classifyAwsError(await pending, stop.signal).kind, 'fatal');
    client.destroy();
    silent.close();
  });

  it('back-off is full jitter, exponential and capped', () => {
    assert.equal(
      backoffMs(0, 100, 1000, () => 0.999),
      99,
    );
    assert.equal(
      backoffMs(3, 100, 1000, () => 0.5),
      400,
    );
    assert.equal(
      backoffMs(20, 100, 1000, () => 0.999),
      999,
    );
    assert.equal(
      backoffMs(5, 100, 1000, () => 0),
      0,
    );
  });
});
