// Differential tests: the lean client (--aws-client lean, the default) against the AWS SDK's clients
// (--aws-client sdk, the reference), both built as a run builds them (createAwsAdapters), against one local
// recording server.
// (a) The same inputs give equivalent requests: method, path, the headers AWS reads, the body (JSON-equal) and the
//     signature's credential scope and signed headers, for every call a run makes.
// (b) The same answers are classified the same way: a table of AWS's real error shapes (AWS JSON 1.0 `__type`
//     with and without namespace, `x-amzn-query-error` of awsQueryCompatible SQS, Lambda's `x-amzn-ErrorType`,
//     429 with `Reason`, 5xx, throttles, skew refusals, a proxy's HTML), each as the SDK client classifies it.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { AwsCallError, callErrorOf } from '../../../src/core/errors.ts';
import { createAwsAdapters, type AwsAdapters, type AwsClientKind } from '../../../src/aws/adapters.ts';
import { resolveAwsEndpoints } from '../../../src/aws/endpoints.ts';
import type { InvokeResult } from '../../../src/core/function-invoker.ts';
import type { ResolvedQueue } from '../../../src/core/queue.ts';
import { RecordingServer, type Seen } from '../../support/recording-server.ts';

const KINDS: readonly AwsClientKind[] = ['lean', 'sdk'];

/** The request headers AWS reads (the rest, such as user-agent or the SDK's invocation id, it does not). */
const AWS_READ_HEADERS = [
  'content-type',
  'x-amz-target',
  'x-amz-invocation-type',
  'x-amz-client-context',
  'x-amz-log-type',
  'x-amz-durable-execution-name',
  'x-amz-tenant-id',
  'x-amz-security-token',
  'x-amzn-query-mode',
  'host',
];

/** Headers only the SDK sends (and signs), which AWS does not act on. */
const SDK_BOOKKEEPING = ['x-amz-user-agent', 'amz-sdk-invocation-id', 'amz-sdk-request'];

/** What AWS sees of a request. */
function view(s: Seen): Record<string, unknown> {
  const auth = String(s.headers['authorization'] ?? '');
  const scope = /Credential=[^/]+\/\d{8}\/([^,]+)/.exec(auth)?.[1];
  const signed = (/SignedHeaders=([^,]+)/.exec(auth)?.[1] ?? '').split(';');
  return {
    method: s.method,
    path: s.path,
    headers: Object.fromEntries(AWS_READ_HEADERS.map((h) => [h, s.headers[h]])),
    body: s.body === '' ? undefined : (JSON.parse(s.body) as unknown),
    scope,
    // Every header AWS reads is signed by both; the SDK also signs its own bookkeeping headers, which AWS ignores.
    signedAwsHeaders: signed.filter((h) => (AWS_READ_HEADERS.includes(h) || h.startsWith('x-amz')) && !SDK_BOOKKEEPING.includes(h)),
  };
}

describe('lean against the SDK', () => {
  const server = new RecordingServer();
  let origin: URL;
  const clients = new Map<AwsClientKind, AwsAdapters>();
  const saved = { ...process.env };
  let q: ResolvedQueue;
  before(async () => {
    origin = await server.listen();
    process.env['AWS_ACCESS_KEY_ID'] = 'AKIDEXAMPLE';
    process.env['AWS_SECRET_ACCESS_KEY'] = 'secret';
    process.env['AWS_SESSION_TOKEN'] = 'session-token';
    for (const kind of KINDS)
      clients.set(
        kind,
        await createAwsAdapters(
          kind,
          { region: 'eu-west-1', endpointUrl: origin.href },
          await resolveAwsEndpoints('eu-west-1', origin.href),
          { maxSockets: 4 },
        ),
      );
    q = {
      name: 'q',
      url: `${origin.origin}/000000000000/q`,
      arn: 'arn:aws:sqs:eu-west-1:000000000000:q',
      region: 'eu-west-1',
      fifo: false,
      visibilityTimeoutSec: 30,
      weight: 1,
    };
  });
  after(() => {
    for (const c of clients.values()) c.destroy();
    server.close();
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN']) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  /** Runs `call` on each client; returns what the server saw of each, and what each call gave. */
  async function both<T>(
    call: (aws: AwsAdapters) => Promise<T>,
  ): Promise<{ seen: Record<string, unknown>[][]; results: (T | { threw: unknown })[] }> {
    const seen: Record<string, unknown>[][] = [];
    const results: (T | { threw: unknown })[] = [];
    for (const kind of KINDS) {
      server.seen.length = 0;
      results.push(await call(clients.get(kind)!).catch((err: unknown) => ({ threw: err })));
      seen.push(server.seen.map(view));
    }
    return { seen, results };
  }

  describe('(a) the same inputs give equivalent requests', () => {
    const answers: Record<string, string> = {
      'AmazonSQS.GetQueueUrl': JSON.stringify({ QueueUrl: 'QUEUE_URL' }),
      'AmazonSQS.GetQueueAttributes': JSON.stringify({ Attributes: { QueueArn: 'arn:aws:sqs:eu-west-1:000000000000:q' } }),
      'AmazonSQS.ReceiveMessage': '{}',
      'AmazonSQS.DeleteMessageBatch': JSON.stringify({ Successful: [{ Id: '0' }] }),
      'AmazonSQS.ChangeMessageVisibilityBatch': JSON.stringify({ Successful: [{ Id: '0' }] }),
      'GraniteServiceVersion20100801.PutMetricData': '{}',
    };
    before(() => {
      server.handler = (req, res) => {
        const target = String(req.headers['x-amz-target'] ?? '');
        if (!target) {
          // Lambda's status per InvocationType (Invoke API reference, StatusCode): DryRun 204, Event 202 (no body).
          const type = req.headers['x-amz-invocation-type'];
          if (type === 'Event') return void res.writeHead(202, { 'x-amzn-requestid': 'req-1' }).end();
          if (type === 'DryRun') return void res.writeHead(204).end('{"done":true}');
          return void res.writeHead(200, { 'x-amzn-requestid': 'req-1' }).end('{"done":true}');
        }
        if (target === 'AmazonSQS.SendMessage') {
          // SQS answers with the MD5 of the body it stored; both clients check it against what they sent.
          const sent = (JSON.parse(req.body) as { MessageBody: string }).MessageBody;
          const md5 = createHash('md5').update(sent).digest('hex');
          return void res
            .writeHead(200, { 'content-type': 'application/x-amz-json-1.0' })
            .end(JSON.stringify({ MessageId: 'mid-1', MD5OfMessageBody: md5 }));
        }
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' }).end((answers[target] ?? '{}').replace('QUEUE_URL', q.url));
      };
    });

    const calls: [string, (aws: AwsAdapters) => Promise<unknown>][] = [
      ['GetQueueUrl', (aws) => aws.sqs.queueUrl('q')],
      ['GetQueueAttributes', (aws) => aws.sqs.queueAttributes(q.url, ['QueueArn', 'VisibilityTimeout', 'FifoQueue'])],
      ['ReceiveMessage (long poll)', (aws) => aws.sqs.receive(q, { max: 10, waitSec: 0 })],
      ['ReceiveMessage (with a visibility timeout)', (aws) => aws.sqs.receive(q, { max: 3, waitSec: 0, visibilityTimeoutSec: 45 })],
      [
        'DeleteMessageBatch',
        (aws) =>
          aws.sqs.deleteBatch(q, [
            { id: '0', receiptHandle: 'AQEB+/=x' },
            { id: '1', receiptHandle: 'r2' },
          ]),
      ],
      ['ChangeMessageVisibilityBatch', (aws) => aws.sqs.changeVisibility(q, [{ id: '0', receiptHandle: 'AQEB+/=x' }], 0)],
      ['Invoke (RequestResponse)', (aws) => aws.invoker('my-fn:live').invoke('{"Records":[{"body":"é"}]}')],
      ['SendMessage (a failure record)', (aws) => aws.sqs.sendMessage(q.url, { body: '{"record":{"body":"é"}}' })],
      [
        'SendMessage (with a String message attribute)',
        (aws) => aws.sqs.sendMessage(q.url, { body: 'x', attributes: { 'workerless-deduplication-id': 'ab12' } }),
      ],
      [
        'SendMessage (to a FIFO queue)',
        (aws) =>
          aws.sqs.sendMessage(`${q.url}.fifo`, { body: 'x', groupId: 'g-1', deduplicationId: '059f36b4-87a3-44ab-83d2-661975830a7d' }),
      ],
      ['Invoke (DryRun)', (aws) => aws.invoker('arn:aws:lambda:eu-west-1:000000000000:function:my-fn').dryRun()],
      // A tenant id as a message group id may hold it: printable ASCII, punctuation and inner spaces.
      ['Invoke (TenantId)', (aws) => aws.invoker('my-fn').invoke('{"Records":[]}', undefined, { tenantId: 'acme corp/eu:1+x=y' })],
      ['Invoke (DryRun, TenantId)', (aws) => aws.invoker('my-fn').dryRun(undefined, { tenantId: 'workerless-dry-run' })],
      [
        'Invoke (RequestResponse, durable execution name)',
        (aws) => aws.invoker('my-fn').invoke('{"Records":[]}', undefined, { durableExecutionName: 'q-0a1b2c3d4e5f-9a8b_7c6d' }),
      ],
      [
        'Invoke (Event, durable execution name)',
        (aws) => aws.invoker('my-fn:live').invoke('{"Records":[]}', undefined, { durableExecutionName: 'abc-DEF_123', async: true }),
      ],
      [
        'PutMetricData',
        async (aws) =>
          (await aws.cloudwatch()).putMetricData(
            {
              Namespace: 'Workerless-test',
              MetricData: [
                {
                  MetricName: 'm',
                  Unit: 'Count',
                  Value: 2,
                  Timestamp: new Date(1_700_000_000_123),
                  Dimensions: [{ Name: 'Queue', Value: 'q' }],
                },
                { MetricName: 'd', Unit: 'Milliseconds', StatisticValues: { SampleCount: 2, Sum: 3, Minimum: 1, Maximum: 2 } },
              ],
            },
            AbortSignal.timeout(5_000),
          ),
      ],
    ];
    for (const [name, call] of calls) {
      it(name, async () => {
        const { seen, results } = await both(call);
        for (const r of results) if (r !== null && typeof r === 'object' && 'threw' in r) assert.fail(`${name} failed: ${String(r.threw)}`);
        assert.equal(seen[0]!.length, 1);
        assert.deepEqual(seen[0], seen[1]);
        assert.deepEqual(results[0], results[1], 'the same result');
      });
    }
    it('TenantId travels as the X-Amz-Tenant-Id header, signed, on both (and not at all when absent)', async () => {
      for (const call of [
        (aws: AwsAdapters) => aws.invoker('fn').invoke('{}', undefined, { tenantId: 'blue' }),
        (aws: AwsAdapters) => aws.invoker('fn').dryRun(undefined, { tenantId: 'blue' }),
      ]) {
        const { seen } = await both(call);
        for (const s of seen) {
          assert.equal((s[0]!['headers'] as Record<string, unknown>)['x-amz-tenant-id'], 'blue');
          assert.ok((s[0]!['signedAwsHeaders'] as string[]).includes('x-amz-tenant-id'));
        }
      }
      const { seen } = await both((aws) => aws.invoker('fn').invoke('{}'));
      for (const s of seen) assert.equal((s[0]!['headers'] as Record<string, unknown>)['x-amz-tenant-id'], undefined);
    });
  });

  describe('(b) the same answers are classified the same way', () => {
    /**
     * `unnamed`: an answer that names no error (no body, a proxy's HTML page). The kind and status must agree; the
     * names differ by design: the SDK reports 'Unknown', or 'SyntaxError' from its JSON parser, and the lean client
     * 'UnknownError' (4xx) or 'ServiceException' (5xx) with "HTTP <status>".
     */
    type Answer = { status: number; headers?: Record<string, string>; body?: string; unnamed?: true };
    const SQS: [string, Answer][] = [
      [
        'awsQueryCompatible: x-amzn-query-error and a namespaced __type',
        {
          status: 400,
          headers: { 'x-amzn-query-error': 'AWS.SimpleQueueService.NonExistentQueue;Sender' },
          body: '{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}',
        },
      ],
      ['__type without namespace', { status: 400, body: '{"__type":"QueueDoesNotExist","message":"nope"}' }],
      ['__type with namespace only', { status: 400, body: '{"__type":"com.amazonaws.sqs#InvalidAddress","message":"bad"}' }],
      ['access denied', { status: 403, body: '{"__type":"com.amazon.coral.service#AccessDeniedException","Message":"no"}' }],
      [
        'throttled (RequestThrottled)',
        {
          status: 400,
          headers: { 'x-amzn-query-error': 'RequestThrottled;Sender' },
          body: '{"__type":"com.amazonaws.sqs#RequestThrottled","message":"slow"}',
        },
      ],
      [
        'throttled (ThrottlingException)',
        { status: 400, body: '{"__type":"com.amazon.coral.availability#ThrottlingException","message":"Rate exceeded"}' },
      ],
      ['429 without a body', { status: 429, unnamed: true }],
      ['500 InternalError', { status: 500, body: '{"__type":"com.amazon.coral.service#InternalFailure"}' }],
      ['503 ServiceUnavailable', { status: 503, body: '{"__type":"com.amazonaws.sqs#ServiceUnavailable","message":"x"}' }],
      [
        'a skew refusal with an unskewed Date (nothing to correct)',
        {
          status: 400,
          body: '{"__type":"com.amazon.coral.service#InvalidSignatureException","message":"Signature expired: 20260101T000000Z is now earlier than 20260101T000500Z (20260101T001000Z - 5 min.)"}',
        },
      ],
      [
        'a proxy HTML page (502)',
        { status: 502, headers: { 'content-type': 'text/html' }, body: '<html><body>Bad Gateway</body></html>', unnamed: true },
      ],
      [
        'a proxy HTML page (403)',
        { status: 403, headers: { 'content-type': 'text/html' }, body: '<html><body>Forbidden</body></html>', unnamed: true },
      ],
      ['an answer over 1 MiB', { status: 200, body: `{"x":"${'a'.repeat(1024 * 1024)}"}` }],
    ];
    const LAMBDA: [string, Answer][] = [
      [
        '429 TooManyRequestsException with Reason',
        {
          status: 429,
          headers: { 'x-amzn-errortype': 'TooManyRequestsException' },
          body: '{"Reason":"ReservedFunctionConcurrentInvocationLimitExceeded","Type":"User","message":"Rate Exceeded."}',
        },
      ],
      [
        '429 TooManyRequestsException with a Reason newer than the SDK',
        {
          status: 429,
          headers: { 'x-amzn-errortype': 'TooManyRequestsException' },
          body: '{"Reason":"SomeFutureLimitExceeded","Type":"User","message":"Rate Exceeded."}',
        },
      ],
      [
        // Invoke API reference, Errors: TooManyRequestsException's retryAfterSeconds comes in the Retry-After header.
        '429 TooManyRequestsException, ConcurrentSnapshotCreateLimitExceeded with a Retry-After',
        {
          status: 429,
          headers: { 'x-amzn-errortype': 'TooManyRequestsException', 'retry-after': '7' },
          body: '{"Reason":"ConcurrentSnapshotCreateLimitExceeded","Type":"User","message":"Rate Exceeded."}',
        },
      ],
      [
        '429 TooManyRequestsException without a Reason',
        { status: 429, headers: { 'x-amzn-errortype': 'TooManyRequestsException' }, body: '{"Type":"User","message":"busy"}' },
      ],
      [
        'x-amzn-ErrorType with a URI suffix (404)',
        {
          status: 404,
          headers: { 'x-amzn-errortype': 'ResourceNotFoundException:http://internal.amazon.com/coral/com.amazonaws.awsgirt/' },
          body: '{"Type":"User","Message":"Function not found"}',
        },
      ],
      ['AccessDeniedException', { status: 403, headers: { 'x-amzn-errortype': 'AccessDeniedException' }, body: '{"Message":"no"}' }],
      [
        'RequestEntityTooLargeException (413)',
        { status: 413, headers: { 'x-amzn-errortype': 'RequestEntityTooLargeException' }, body: '{"Type":"User","message":"too big"}' },
      ],
      [
        'InvalidRequestContentException (400)',
        { status: 400, headers: { 'x-amzn-errortype': 'InvalidRequestContentException' }, body: '{"Type":"User","message":"bad json"}' },
      ],
      [
        // Its status (409) and name from the SDK's model (DurableExecutionAlreadyStartedException$).
        'DurableExecutionAlreadyStartedException (409)',
        {
          status: 409,
          headers: { 'x-amzn-errortype': 'DurableExecutionAlreadyStartedException' },
          body: '{"Type":"User","message":"An execution with this name already exists with a different payload"}',
        },
      ],
      [
        'RequestTooLargeException (413)',
        { status: 413, headers: { 'x-amzn-errortype': 'RequestTooLargeException' }, body: '{"Type":"User","message":"too big"}' },
      ],
      [
        'ResourceConflictException (409)',
        { status: 409, headers: { 'x-amzn-errortype': 'ResourceConflictException' }, body: '{"Type":"User","message":"Pending"}' },
      ],
      [
        '500 ServiceException',
        { status: 500, headers: { 'x-amzn-errortype': 'ServiceException' }, body: '{"Type":"Service","message":"x"}' },
      ],
      ['503 without a type', { status: 503, body: '', unnamed: true }],
      [
        'a skew refusal with an unskewed Date (403 InvalidSignatureException)',
        {
          status: 403,
          headers: { 'x-amzn-errortype': 'InvalidSignatureException' },
          body: '{"message":"Signature expired: 20260101T000000Z is now earlier than 20260101T000500Z (20260101T001000Z - 5 min.)"}',
        },
      ],
      [
        'a proxy HTML page (502)',
        { status: 502, headers: { 'content-type': 'text/html' }, body: '<html>Bad Gateway</html>', unnamed: true },
      ],
      [
        'a function error (200, X-Amz-Function-Error)',
        { status: 200, headers: { 'x-amz-function-error': 'Unhandled' }, body: '{"errorType":"Error","errorMessage":"boom"}' },
      ],
      ['an answer over 6 MB', { status: 200, body: 'a'.repeat(6 * 1024 * 1024 + 1) }],
    ];
    const serve = (a: Answer) => (server.handler = (_req, res) => res.writeHead(a.status, a.headers ?? {}).end(a.body ?? ''));

    for (const [name, answer] of SQS) {
      it(`SQS: ${name}`, async () => {
        serve(answer);
        const { results } = await both((aws) => aws.sqs.deleteBatch(q, [{ id: '0', receiptHandle: 'r' }]));
        const classes = results.map((r) => {
          const err = (r as { threw?: unknown }).threw;
          assert.ok(err instanceof AwsCallError, `threw ${String(err)}`);
          const e = callErrorOf(err);
          return { kind: e.kind, status: e.status, ...(answer.unnamed ? {} : { code: e.code }) };
        });
        assert.deepEqual(classes[0], classes[1]);
      });
    }
    it('SQS: SendMessage answered with another body’s MD5 (or none) fails on both, classified alike', async () => {
      for (const answer of ['{"MessageId":"m","MD5OfMessageBody":"0123456789abcdef0123456789abcdef"}', '{"MessageId":"m"}']) {
        serve({ status: 200, body: answer });
        const { results } = await both((aws) => aws.sqs.sendMessage(q.url, { body: 'x' }));
        const classes = results.map((r) => {
          const err = (r as { threw?: unknown }).threw;
          assert.ok(err instanceof AwsCallError, `threw ${String(err)}`);
          const e = callErrorOf(err);
          return { kind: e.kind, message: e.message };
        });
        assert.deepEqual(classes[0], classes[1]);
      }
    });
    for (const [name, answer] of LAMBDA) {
      it(`Lambda: ${name}`, async () => {
        serve(answer);
        const { results } = await both((aws) => aws.invoker('fn').invoke('{}'));
        const classes = results.map((r) => {
          const result = r as InvokeResult;
          if (result.ok) return { ok: true, functionError: result.response.functionError };
          return {
            kind: result.error.kind,
            status: result.error.status,
            reason: result.error.reason,
            retryAfterMs: result.error.retryAfterMs,
            ...(answer.unnamed ? {} : { code: result.error.code }),
          };
        });
        assert.deepEqual(classes[0], classes[1]);
        // Both carry Lambda's throttle Reason as given (not only alike: dropped by both would also be alike).
        const given = /"Reason":"(\w+)"/.exec(answer.body ?? '')?.[1];
        assert.equal((classes[0] as { reason?: string }).reason, given);
        // And its Retry-After, which the retry waits out (src/invoke/invoke-retry.ts).
        const retryAfter = answer.headers?.['retry-after'];
        assert.equal(
          (classes[0] as { retryAfterMs?: number }).retryAfterMs,
          retryAfter === undefined ? undefined : Number(retryAfter) * 1000,
        );
      });
    }
  });
});
