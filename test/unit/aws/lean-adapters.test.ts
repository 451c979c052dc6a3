// The lean hot path (--aws-client lean) against a local HTTP server that answers like SQS and Lambda: the
// wire requests it sends, how it reads answers, and that failures are classified exactly as the SDK
// adapters' are (AwsCallError kinds, InvokeErrorKind), including the MD5 check and the SDK's retries.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { AwsCallError } from '../../../src/core/errors.ts';
import { sanitizeErrorCode, SignedHttp } from '../../../src/aws/signed-http.ts';
import { LambdaHttpInvoker } from '../../../src/aws/lambda-http-invoker.ts';
import { SqsHttpSource } from '../../../src/aws/sqs-http-source.ts';
import { QueueResolveError, resolveQueue } from '../../../src/aws/resolve-queues.ts';
import { queueAt } from '../../support/factories.ts';
import { RecordingServer } from '../../support/recording-server.ts';

const credentials = () => Promise.resolve({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' });
const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const queue = queueAt;

/** Every awsQueryError code in @aws-sdk/client-sqs's error schemas (3.1169), and one it does not know. */
const AWS_QUERY_ERRORS = [
  'AWS.SimpleQueueService.BatchEntryIdsNotDistinct',
  'AWS.SimpleQueueService.BatchRequestTooLong',
  'AWS.SimpleQueueService.EmptyBatchRequest',
  'InvalidAddress',
  'AWS.SimpleQueueService.InvalidBatchEntryId',
  'InvalidSecurity',
  'KMS.AccessDeniedException',
  'KMS.DisabledException',
  'KMS.InvalidKeyUsageException',
  'KMS.InvalidStateException',
  'KMS.NotFoundException',
  'KMS.OptInRequired',
  'KMS.ThrottlingException',
  'AWS.SimpleQueueService.MessageNotInflight',
  'OverLimit',
  'AWS.SimpleQueueService.PurgeQueueInProgress',
  'AWS.SimpleQueueService.QueueDeletedRecently',
  'AWS.SimpleQueueService.NonExistentQueue',
  'QueueAlreadyExists',
  'ReceiptHandleIsInvalid',
  'RequestThrottled',
  'ResourceNotFoundException',
  'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
  'AWS.SimpleQueueService.UnsupportedOperation',
];

describe('lean adapters', () => {
  const server = new RecordingServer();
  const seen = server.seen;
  let origin: URL;
  let http: SignedHttp;
  before(async () => {
    origin = await server.listen();
    http = new SignedHttp({ service: 'sqs', region: 'us-east-1', credentials, maxSockets: 4 });
  });
  after(() => {
    http.destroy();
    server.close();
  });

  it('receives with the SQS JSON protocol, signed, and hands out SDK-shaped messages (binary attributes as bytes)', async () => {
    seen.length = 0;
    server.handler = (_req, res) =>
      res.end(
        JSON.stringify({
          Messages: [
            {
              MessageId: 'm1',
              ReceiptHandle: 'r1',
              Body: 'hello',
              MD5OfBody: md5('hello'),
              MessageAttributes: { b: { DataType: 'Binary', BinaryValue: 'AQI=' } },
            },
          ],
        }),
      );
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    const [m] = await source.receive(queue(`${origin.origin}/000000000000/q`), { max: 10, waitSec: 0 });
    assert.equal(m?.Body, 'hello');
    assert.deepEqual([...(m?.MessageAttributes?.['b']?.BinaryValue ?? [])], [1, 2]);
    const req = seen[0]!;
    assert.equal(req.headers['x-amz-target'], 'AmazonSQS.ReceiveMessage');
    assert.equal(req.headers['content-type'], 'application/x-amz-json-1.0');
    assert.match(
      String(req.headers['authorization']),
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/sqs\/aws4_request, SignedHeaders=.*host.*, Signature=[0-9a-f]{64}$/,
    );
    assert.deepEqual(JSON.parse(req.body), {
      QueueUrl: `${origin.origin}/000000000000/q`,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    });
  });

  it('fails a receive whose body does not match MD5OfBody, as the SDK does (fatal)', async () => {
    server.handler = (_req, res) =>
      res.end(JSON.stringify({ Messages: [{ MessageId: 'm1', ReceiptHandle: 'r1', Body: 'hello', MD5OfBody: md5('other') }] }));
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    await assert.rejects(source.receive(queue(`${origin.origin}/000000000000/q`), { max: 1, waitSec: 0 }), (err: unknown) => {
      assert.ok(err instanceof AwsCallError);
      assert.equal(err.error.kind, 'fatal');
      assert.match(err.error.message, /Invalid MD5 checksum on messages: m1/);
      return true;
    });
  });

  it('retries a 500 like the SDK (3 attempts), then reports it retryable with its code', async () => {
    seen.length = 0;
    server.handler = (_req, res) => {
      res.writeHead(500, { 'x-amzn-query-error': 'InternalError;Receiver' });
      res.end(JSON.stringify({ __type: 'com.amazonaws.sqs#InternalError', message: 'boom' }));
    };
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    await assert.rejects(source.deleteBatch(queue(`${origin.origin}/q`), [{ id: '1', receiptHandle: 'r' }]), (err: unknown) => {
      assert.ok(err instanceof AwsCallError);
      assert.deepEqual({ ...err.error }, { kind: 'retryable', code: 'InternalError', message: 'boom', status: 500 });
      return true;
    });
    assert.equal(seen.length, 3);
  });

  it('reads the entries SQS refused, and a 400 QueueDoesNotExist is fatal at once, named as the SDK names it', async () => {
    server.handler = (_req, res) =>
      res.end(JSON.stringify({ Successful: [], Failed: [{ Id: '1', Code: 'ReceiptHandleIsInvalid', Message: 'bad', SenderFault: true }] }));
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    assert.deepEqual(await source.changeVisibility(queue(`${origin.origin}/q`), [{ id: '1', receiptHandle: 'r' }], 0), [
      { id: '1', code: 'ReceiptHandleIsInvalid', message: 'bad' },
    ]);
    seen.length = 0;
    server.handler = (_req, res) => {
      res.writeHead(400, { 'x-amzn-query-error': 'AWS.SimpleQueueService.NonExistentQueue;Sender' });
      res.end(JSON.stringify({ __type: 'com.amazonaws.sqs#QueueDoesNotExist', message: 'no queue' }));
    };
    await assert.rejects(source.deleteBatch(queue(`${origin.origin}/q`), [{ id: '1', receiptHandle: 'r' }]), (err: unknown) => {
      assert.ok(err instanceof AwsCallError);
      assert.equal(err.error.kind, 'fatal');
      assert.equal(err.error.code, 'QueueDoesNotExist');
      return true;
    });
    assert.equal(seen.length, 1);
  });

  it('resolves queues as the SDK path does: GetQueueUrl for a name, GetQueueAttributes, a missing queue in one line', async () => {
    seen.length = 0;
    const url = `${origin.origin}/000000000000/jobs`;
    server.handler = (req, res) => {
      const target = req.headers['x-amz-target'];
      if (target === 'AmazonSQS.GetQueueUrl' && (JSON.parse(req.body) as { QueueName?: string }).QueueName === 'jobs')
        return res.end(JSON.stringify({ QueueUrl: url }));
      if (target === 'AmazonSQS.GetQueueAttributes')
        return res.end(JSON.stringify({ Attributes: { QueueArn: 'arn:aws:sqs:eu-west-1:000000000000:jobs', VisibilityTimeout: '90' } }));
      res.writeHead(400, { 'x-amzn-query-error': 'AWS.SimpleQueueService.NonExistentQueue;Sender' });
      res.end(JSON.stringify({ __type: 'com.amazonaws.sqs#QueueDoesNotExist', message: 'The specified queue does not exist.' }));
    };
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    assert.deepEqual(
      [await resolveQueue(source, { ref: 'jobs', weight: 2 }, undefined)],
      [
        {
          name: 'jobs',
          url,
          arn: 'arn:aws:sqs:eu-west-1:000000000000:jobs',
          region: 'eu-west-1',
          fifo: false,
          visibilityTimeoutSec: 90,
          weight: 2,
        },
      ],
    );
    assert.deepEqual(
      seen.map((r): unknown[] => [r.headers['x-amz-target'], JSON.parse(r.body)]),
      [
        ['AmazonSQS.GetQueueUrl', { QueueName: 'jobs' }],
        [
          'AmazonSQS.GetQueueAttributes',
          { QueueUrl: url, AttributeNames: ['QueueArn', 'VisibilityTimeout', 'FifoQueue', 'RedrivePolicy'] },
        ],
      ],
    );
    await assert.rejects(resolveQueue(source, { ref: 'nope', weight: 1 }, undefined), (err: unknown) => {
      assert.ok(err instanceof QueueResolveError);
      assert.equal(err.operation, 'GetQueueUrl');
      assert.equal(err.error.code, 'QueueDoesNotExist');
      return true;
    });
    // Without a configured endpoint, GetQueueUrl goes to the regional endpoint and GetQueueAttributes to the queue URL's host.
    seen.length = 0;
    const regional = new SqsHttpSource(http, { url: new URL('http://127.0.0.1:1'), custom: false });
    assert.equal((await regional.queueAttributes(url, ['QueueArn']))['QueueArn'], 'arn:aws:sqs:eu-west-1:000000000000:jobs');
    await assert.rejects(regional.queueUrl('jobs'), (err: unknown) => err instanceof AwsCallError && err.error.code === 'ECONNREFUSED');
    assert.equal(seen.length, 1);
  });

  it('names SQS errors as the installed SDK does (SDK_ERROR_NAMES), for every awsQuery code of its schema', async () => {
    const sdk = new SQSClient({
      region: 'us-east-1',
      endpoint: origin.href,
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      maxAttempts: 1,
    });
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    try {
      for (const code of [...AWS_QUERY_ERRORS, 'AccessDenied']) {
        server.handler = (_req, res) => {
          res.writeHead(400, { 'x-amzn-query-error': `${code};Sender` });
          res.end(JSON.stringify({ message: 'refused' }));
        };
        const sdkName = await sdk.send(new GetQueueUrlCommand({ QueueName: 'q' })).then(
          () => 'no error',
          (err: unknown) => (err as Error).name,
        );
        const leanName = await source.queueUrl('q').then(
          () => 'no error',
          (err: unknown) => (err instanceof AwsCallError ? err.error.code : String(err)),
        );
        assert.equal(leanName, sdkName, code);
      }
    } finally {
      sdk.destroy();
    }
  });

  it('gives up a hung call at its deadline as a retryable TimeoutError', async () => {
    server.handler = () => {}; // never answers
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    const started = Date.now();
    // waitSec 0: the receive deadline is RECEIVE_MARGIN_MS (5 s); the caller's own signal is shorter here.
    await assert.rejects(source.receive(queue(`${origin.origin}/q`), { max: 1, waitSec: 0 }, AbortSignal.timeout(300)), (err: unknown) => {
      assert.ok(err instanceof AwsCallError);
      assert.equal(err.error.kind, 'retryable');
      assert.equal(err.error.code, 'TimeoutError');
      return true;
    });
    assert.ok(Date.now() - started < 2_000);
  });

  it('invokes with Lambda REST JSON and classifies its answers like LambdaSdkInvoker', async () => {
    const lambda = new SignedHttp({ service: 'lambda', region: 'us-east-1', credentials, maxSockets: 4 });
    try {
      seen.length = 0;
      server.handler = (_req, res) => {
        res.writeHead(200, { 'x-amz-function-error': 'Unhandled' });
        res.end('{"errorType":"Error"}');
      };
      const invoker = new LambdaHttpInvoker(lambda, origin, 'fn:live');
      assert.deepEqual(await invoker.invoke('{"Records":[]}'), {
        ok: true,
        response: { payload: '{"errorType":"Error"}', functionError: 'Unhandled' },
      });
      assert.equal(seen[0]!.path, '/2015-03-31/functions/fn%3Alive/invocations');
      assert.equal(seen[0]!.headers['x-amz-invocation-type'], 'RequestResponse');
      assert.equal(seen[0]!.body, '{"Records":[]}');

      server.handler = (_req, res) => {
        res.writeHead(429, { 'x-amzn-errortype': 'TooManyRequestsException:http://internal.amazon.com/coral/com.amazonaws.awsgirt/' });
        res.end('{"Reason":"ReservedFunctionConcurrentInvocationLimitExceeded","Type":"User","message":"Rate Exceeded."}');
      };
      const throttled = await invoker.invoke('{}');
      assert.equal(throttled.ok, false);
      assert.deepEqual(!throttled.ok && throttled.error, {
        kind: 'throttled',
        code: 'TooManyRequestsException',
        message: 'Rate Exceeded.',
        status: 429,
        reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
      });

      server.handler = (_req, res) => {
        res.writeHead(404, { 'x-amzn-errortype': 'ResourceNotFoundException' });
        res.end('{"Type":"User","Message":"Function not found"}');
      };
      const missing = await invoker.dryRun();
      assert.equal(!missing.ok && missing.error.kind, 'unusable');

      // The request reached the server, then the connection was reset: the function may be running.
      server.handler = (_req, res) => res.socket?.destroy();
      const reset = await invoker.invoke('{}');
      assert.equal(!reset.ok && reset.error.kind, 'unknown');
      assert.equal(!reset.ok && reset.error.code, 'ECONNRESET');

      // Nothing listens: nothing was sent.
      const closed = new LambdaHttpInvoker(lambda, new URL('http://127.0.0.1:1'), 'fn');
      const refused = await closed.invoke('{}');
      assert.equal(!refused.ok && refused.error.kind, 'not-sent');
      assert.equal(!refused.ok && refused.error.code, 'ECONNREFUSED');
    } finally {
      lambda.destroy();
    }
  });

  it('reads error codes as the SDK does: without the namespace or URI suffix', () => {
    assert.equal(sanitizeErrorCode('com.amazonaws.sqs#QueueDoesNotExist'), 'QueueDoesNotExist');
    assert.equal(sanitizeErrorCode('ResourceNotFoundException:http://internal.amazon.com/'), 'ResourceNotFoundException');
  });
});
