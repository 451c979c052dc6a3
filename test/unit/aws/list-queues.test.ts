// ListQueues and ListQueueTags on both clients, as their API references define them:
// ListQueues (QueueNamePrefix; MaxResults 1-1000; NextToken until the last page):
//   https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ListQueues.html
// A server that repeats its NextToken, or never stops giving one, is not followed for ever (issue 42: one grew the
// daemon from 120 to 735 MiB in 30 s): the listing stops at a repeated token or after LIST_QUEUES_MAX_PAGES pages.
// ListQueueTags (QueueUrl -> Tags): https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ListQueueTags.html
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ListQueuesCommand, ListQueueTagsCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { AwsCallError } from '../../../src/core/errors.ts';
import { LIST_QUEUES_MAX_PAGES } from '../../../src/core/queue.ts';
import { SignedHttp } from '../../../src/aws/signed-http.ts';
import { SqsHttpSource } from '../../../src/aws/sqs-http-source.ts';
import { SqsSdkSource } from '../../../src/aws/sqs-sdk-source.ts';
import { RecordingServer } from '../../support/recording-server.ts';

const credentials = () => Promise.resolve({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' });
const urls = (from: number, n: number) => Array.from({ length: n }, (_, i) => `http://sqs.local/000000000000/t-${from + i}`);

describe('ListQueues and ListQueueTags, lean client', () => {
  const server = new RecordingServer();
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

  it('reads every page: MaxResults 1000 and the NextToken of each answer, under the prefix', async () => {
    server.seen.length = 0;
    server.handler = (req, res) => {
      const input = JSON.parse(req.body) as { NextToken?: string };
      if (input.NextToken === undefined) return res.end(JSON.stringify({ QueueUrls: urls(0, 1000), NextToken: 'p2' }));
      if (input.NextToken === 'p2') return res.end(JSON.stringify({ QueueUrls: urls(1000, 1000), NextToken: 'p3' }));
      return res.end(JSON.stringify({ QueueUrls: urls(2000, 5) }));
    };
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    const got = await source.listQueues('t-');
    assert.equal(got.urls.length, 2005);
    assert.deepEqual(got.urls.slice(-1), urls(2004, 1));
    assert.equal(got.stopped, undefined, 'every page read');
    assert.deepEqual(
      server.seen.map((r): unknown[] => [r.headers['x-amz-target'], JSON.parse(r.body)]),
      [
        ['AmazonSQS.ListQueues', { QueueNamePrefix: 't-', MaxResults: 1000 }],
        ['AmazonSQS.ListQueues', { QueueNamePrefix: 't-', MaxResults: 1000, NextToken: 'p2' }],
        ['AmazonSQS.ListQueues', { QueueNamePrefix: 't-', MaxResults: 1000, NextToken: 'p3' }],
      ],
    );
  });

  it('no prefix: every queue; an empty answer (no QueueUrls) is no queue', async () => {
    server.seen.length = 0;
    server.handler = (_req, res) => res.end('{}');
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    assert.deepEqual(await source.listQueues(undefined), { urls: [] });
    assert.deepEqual(JSON.parse(server.seen[0]!.body), { MaxResults: 1000 });
  });

  it(
    'a server repeating its NextToken: the listing stops at the repeat, with the queues found so far and why',
    { timeout: 10_000 },
    async () => {
      server.seen.length = 0;
      server.handler = (req, res) => {
        const input = JSON.parse(req.body) as { NextToken?: string };
        if (input.NextToken === undefined) return res.end(JSON.stringify({ QueueUrls: urls(0, 1000), NextToken: 'p2' }));
        return res.end(JSON.stringify({ QueueUrls: urls(1000, 1000), NextToken: 'p2' }));
      };
      const source = new SqsHttpSource(http, { url: origin, custom: true });
      const got = await source.listQueues('t-');
      assert.equal(server.seen.length, 2, 'no page asked for twice');
      assert.deepEqual(got, { urls: urls(0, 2000), stopped: 'ListQueues gave NextToken "p2" again after 2 pages' });
    },
  );

  it('a server giving a new NextToken on every page: the listing stops at LIST_QUEUES_MAX_PAGES pages', { timeout: 20_000 }, async () => {
    server.seen.length = 0;
    let n = 0;
    server.handler = (_req, res) => res.end(JSON.stringify({ QueueUrls: urls(n, 1), NextToken: `t${n++}` }));
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    const got = await source.listQueues('t-');
    assert.equal(server.seen.length, LIST_QUEUES_MAX_PAGES);
    assert.equal(got.urls.length, LIST_QUEUES_MAX_PAGES);
    assert.equal(got.stopped, `ListQueues still had a NextToken after ${LIST_QUEUES_MAX_PAGES} pages`);
  });

  it('ListQueueTags returns the tags; a refusal is a classified AwsCallError', async () => {
    server.seen.length = 0;
    server.handler = (req, res) => {
      if ((JSON.parse(req.body) as { QueueUrl: string }).QueueUrl.endsWith('/t-0'))
        return res.end(JSON.stringify({ Tags: { workerless: 'payments', 'workerless:weight': '3' } }));
      res.writeHead(400, { 'x-amzn-query-error': 'AccessDenied;Sender' });
      res.end(JSON.stringify({ __type: 'com.amazonaws.sqs#AccessDenied', message: 'not allowed' }));
    };
    const source = new SqsHttpSource(http, { url: origin, custom: true });
    assert.deepEqual(await source.queueTags(urls(0, 1)[0]!), { workerless: 'payments', 'workerless:weight': '3' });
    assert.equal(server.seen[0]!.headers['x-amz-target'], 'AmazonSQS.ListQueueTags');
    await assert.rejects(source.queueTags(urls(1, 1)[0]!), (err: unknown) => {
      assert.ok(err instanceof AwsCallError);
      assert.equal(err.error.kind, 'fatal');
      return true;
    });
  });
});

describe('ListQueues and ListQueueTags, SDK client', () => {
  it('reads every page with MaxResults 1000 and NextToken; tags as given', async () => {
    const sqs = mockClient(SQSClient);
    sqs
      .on(ListQueuesCommand)
      .resolvesOnce({ QueueUrls: urls(0, 1000), NextToken: 'p2' })
      .resolvesOnce({ QueueUrls: urls(1000, 3) });
    sqs.on(ListQueueTagsCommand).resolves({ Tags: { workerless: 'payments' } });
    const source = new SqsSdkSource(new SQSClient({ region: 'us-east-1' }));
    assert.equal((await source.listQueues('t-')).urls.length, 1003);
    assert.deepEqual(
      sqs.commandCalls(ListQueuesCommand).map((c) => c.args[0].input),
      [
        { QueueNamePrefix: 't-', MaxResults: 1000 },
        { QueueNamePrefix: 't-', MaxResults: 1000, NextToken: 'p2' },
      ],
    );
    assert.deepEqual(await source.queueTags(urls(0, 1)[0]!), { workerless: 'payments' });
    assert.deepEqual(sqs.commandCalls(ListQueueTagsCommand)[0]!.args[0].input, { QueueUrl: urls(0, 1)[0] });
    sqs.restore();
  });

  it('a repeated NextToken ends the listing', { timeout: 10_000 }, async () => {
    const sqs = mockClient(SQSClient);
    sqs.on(ListQueuesCommand).resolves({ QueueUrls: urls(0, 2), NextToken: 'same' });
    const source = new SqsSdkSource(new SQSClient({ region: 'us-east-1' }));
    try {
      assert.deepEqual(await source.listQueues('t-'), {
        urls: urls(0, 2),
        stopped: 'ListQueues gave NextToken "same" again after 2 pages',
      });
      assert.equal(sqs.commandCalls(ListQueuesCommand).length, 2);
    } finally {
      sqs.restore();
    }
  });
});
