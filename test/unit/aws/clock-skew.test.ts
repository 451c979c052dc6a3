// Clock skew, corrected as the AWS SDK corrects it, on both clients (--aws-client lean and sdk), against a local
// server whose clock is 15 minutes off and that refuses, as AWS does, any request signed more than 5 minutes from
// its clock (https://docs.aws.amazon.com/IAM/latest/UserGuide/signature-v4-troubleshooting.html; the shapes are
// in test/support/skewed-clock.ts). Every call of a run is covered: the start-up checks (GetQueueUrl,
// GetQueueAttributes, DryRun), the hot path (ReceiveMessage, DeleteMessageBatch, Invoke) and PutMetricData.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { SkewClock, SKEWED_MS } from '../../../src/aws/clock-skew.ts';
import { createAwsAdapters, type AwsAdapters, type AwsClientKind } from '../../../src/aws/adapters.ts';
import { resolveAwsEndpoints } from '../../../src/aws/endpoints.ts';
import { queueAt } from '../../support/factories.ts';
import { RecordingServer, type Seen } from '../../support/recording-server.ts';
import { isLambdaRequest, skewRefusal } from '../../support/skewed-clock.ts';

const SKEW_MS = 15 * 60_000;

/** What the server answers once a request's signature is accepted, per operation. */
function answer(req: Seen, origin: URL): { status: number; body: string } {
  if (isLambdaRequest(req.path, req.headers)) {
    const type = req.headers['x-amz-invocation-type'];
    if (type === 'DryRun') return { status: 204, body: '' };
    return { status: 200, body: '{"ok":true}' };
  }
  const target = String(req.headers['x-amz-target'] ?? '');
  if (target.endsWith('.GetQueueUrl')) return { status: 200, body: JSON.stringify({ QueueUrl: `${origin.origin}/000000000000/q` }) };
  if (target.endsWith('.GetQueueAttributes'))
    return {
      status: 200,
      body: JSON.stringify({ Attributes: { QueueArn: 'arn:aws:sqs:us-east-1:000000000000:q', VisibilityTimeout: '30' } }),
    };
  if (target.endsWith('.ReceiveMessage')) return { status: 200, body: '{}' };
  if (target.endsWith('.DeleteMessageBatch')) return { status: 200, body: JSON.stringify({ Successful: [{ Id: '0' }], Failed: [] }) };
  return { status: 200, body: '{}' };
}

interface Line {
  level: number;
  msg: string;
  service?: string;
  offsetMs?: number;
}

const queue = queueAt;

describe('clock skew', () => {
  const server = new RecordingServer();
  let origin: URL;
  /** The server's clock, relative to this machine's. */
  let skewMs = 0;
  const saved = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] };
  before(async () => {
    origin = await server.listen();
    process.env['AWS_ACCESS_KEY_ID'] = 'AKIDEXAMPLE';
    process.env['AWS_SECRET_ACCESS_KEY'] = 'secret';
    server.handler = skewed;
  });
  const skewed: RecordingServer['handler'] = (req, res) => {
    const now = Date.now() + skewMs;
    const refusal = skewRefusal(req.headers, now, isLambdaRequest(req.path, req.headers));
    if (refusal) return void res.writeHead(refusal.status, refusal.headers).end(refusal.body);
    const a = answer(req, origin);
    res.writeHead(a.status, { date: new Date(now).toUTCString(), 'content-type': 'application/json' }).end(a.body);
  };
  after(() => {
    server.close();
    process.env['AWS_ACCESS_KEY_ID'] = saved.id;
    process.env['AWS_SECRET_ACCESS_KEY'] = saved.secret;
    if (saved.id === undefined) delete process.env['AWS_ACCESS_KEY_ID'];
    if (saved.secret === undefined) delete process.env['AWS_SECRET_ACCESS_KEY'];
  });

  async function adapters(kind: AwsClientKind): Promise<{ aws: AwsAdapters; lines: Line[] }> {
    const lines: Line[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(JSON.parse(chunk.toString()) as Line), done()) }),
    );
    const aws = await createAwsAdapters(
      kind,
      { region: 'us-east-1', endpointUrl: origin.href },
      await resolveAwsEndpoints('us-east-1', origin.href),
      { maxSockets: 4, logger },
    );
    return { aws, lines };
  }

  for (const kind of ['lean', 'sdk'] as const) {
    for (const skew of [SKEW_MS, -SKEW_MS]) {
      it(`${kind}: every call recovers from a clock ${skew > 0 ? 'behind' : 'ahead of'} AWS's by 15 min, and each service logs its correction once`, async () => {
        skewMs = skew;
        server.handler = skewed;
        const { aws, lines } = await adapters(kind);
        try {
          server.seen.length = 0;
          const url = await aws.sqs.queueUrl('q');
          const attributes = await aws.sqs.queueAttributes(url, ['QueueArn']);
          assert.equal(attributes['QueueArn'], 'arn:aws:sqs:us-east-1:000000000000:q');
          const invoker = aws.invoker('fn');
          // Lambda's client corrects itself on its first call, the DryRun, even though it never retries otherwise.
          const dry = await invoker.dryRun();
          assert.ok(dry.ok, JSON.stringify(dry));
          await aws.sqs.receive(queue(url), { max: 10, waitSec: 0 });
          const invoked = await invoker.invoke('{"Records":[]}');
          assert.ok(invoked.ok, JSON.stringify(invoked));
          assert.deepEqual(await aws.sqs.deleteBatch(queue(url), [{ id: '0', receiptHandle: 'r' }]), []);
          await (
            await aws.cloudwatch()
          ).putMetricData({ Namespace: 'n', MetricData: [{ MetricName: 'm', Value: 1 }] }, AbortSignal.timeout(5_000));

          // One refusal per service (its first call), then every request is signed with AWS's time.
          const refused = server.seen.filter((s) => skewRefusal(s.headers, Date.now() + skew, isLambdaRequest(s.path, s.headers)));
          const targetOf = (s: Seen) =>
            isLambdaRequest(s.path, s.headers) ? `Invoke:${String(s.headers['x-amz-invocation-type'])}` : String(s.headers['x-amz-target']);
          assert.deepEqual(refused.map(targetOf), [
            'AmazonSQS.GetQueueUrl',
            'Invoke:DryRun',
            'GraniteServiceVersion20100801.PutMetricData',
          ]);
          assert.equal(
            server.seen.filter((s) => targetOf(s) === 'Invoke:RequestResponse').length,
            1,
            'the Invoke went out once, signed right',
          );

          const corrections = lines.filter((l) => l.offsetMs !== undefined);
          assert.deepEqual(corrections.map((l) => l.service).sort(), ['cloudwatch', 'lambda', 'sqs']);
          for (const l of corrections) {
            assert.equal(l.level, 40, 'a warning');
            assert.ok(Math.abs(l.offsetMs! - skew) < 2_000, `offset ${l.offsetMs} ~ ${skew}`);
          }
        } finally {
          aws.destroy();
        }
      });
    }

    it(`${kind}: Invoke is not retried for anything but a skew refusal (a throttle, a 5xx, an access denial without skew)`, async () => {
      skewMs = 0;
      const { aws } = await adapters(kind);
      const answers: [number, Record<string, string>, string][] = [
        [
          429,
          { 'x-amzn-errortype': 'TooManyRequestsException' },
          '{"Reason":"ReservedFunctionConcurrentInvocationLimitExceeded","message":"Rate exceeded"}',
        ],
        [500, { 'x-amzn-errortype': 'ServiceException' }, '{"message":"internal"}'],
        [403, { 'x-amzn-errortype': 'AccessDeniedException' }, '{"message":"not allowed"}'],
      ];
      try {
        for (const [status, headers, body] of answers) {
          server.handler = (_req, res) => res.writeHead(status, { ...headers, 'content-type': 'application/json' }).end(body);
          server.seen.length = 0;
          const r = await aws.invoker('fn').invoke('{}');
          assert.equal(r.ok, false);
          assert.equal(server.seen.length, 1, `HTTP ${status}: one request`);
        }
      } finally {
        aws.destroy();
      }
    });
  }

  it('SkewClock follows the SDK: the Date header sets the offset unless the answer was cached (Age) or took over 15 minutes', () => {
    let now = 1_000_000_000_000;
    const clock = new SkewClock(() => now);
    const date = (ms: number) => new Date(ms).toUTCString();
    assert.deepEqual(clock.sample(date(now + SKEW_MS), '12', now, 0), { corrected: false });
    assert.equal(clock.offsetMs, 0, 'a cached answer says nothing about the clock');
    const sent = now;
    now += 901_000;
    assert.deepEqual(clock.sample(date(now + SKEW_MS), undefined, sent, 0), { corrected: false });
    assert.equal(clock.offsetMs, 0, 'an answer over 15 minutes late says nothing about the clock');
    assert.deepEqual(clock.sample(date(now + SKEW_MS), undefined, now, 0), { corrected: true });
    assert.equal(clock.offsetMs, SKEW_MS);
    assert.equal(clock.signingDate().getTime(), now + SKEW_MS);
    assert.deepEqual(clock.sample(date(now + SKEW_MS), undefined, now, SKEW_MS), { corrected: false }, 'already signed with it');
    assert.deepEqual(clock.sample(date(now + SKEWED_MS - 1_000), undefined, now, 0), { corrected: false }, 'under the 4-minute threshold');
  });
});
