// Answers larger than AWS can send are refused, on both clients, without reading them: a 600 MB answer to an
// Invoke once raised the daemon's RSS to 1.3 GB and was then treated as an unknown outcome (re-invoked).
// Caps (src/core/answer-caps.ts): a synchronous Invoke answers with at most 6 MB, "6 MB each for request and
// response (synchronous)", Lambda quotas, https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html;
// ReceiveMessage with at most 10 messages of 1 MiB, SQS message quotas,
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html, whose bodies may hold
// any of #x9 #xA #xD #x20-#xD7FF ... (SendMessage API reference, MessageBody,
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html), each escaped in the
// JSON answer to up to six bytes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { INVOKE_ANSWER_MAX_BYTES, RECEIVE_ANSWER_MAX_BYTES } from '../../../src/core/answer-caps.ts';
import { createAwsAdapters, type AwsAdapters } from '../../../src/aws/adapters.ts';
import { resolveAwsEndpoints } from '../../../src/aws/endpoints.ts';
import { AwsCallError } from '../../../src/core/errors.ts';
import type { ResolvedQueue } from '../../../src/core/queue.ts';
import { RecordingServer } from '../../support/recording-server.ts';

const MiB = 1024 * 1024;
const chunk = Buffer.alloc(MiB, 0x61);

describe('answer caps', () => {
  const server = new RecordingServer();
  let origin: URL;
  /** Bytes the server managed to write into the socket of the last answer before the client closed it. */
  let written = 0;
  const saved = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] };
  const clients: Record<string, AwsAdapters> = {};
  before(async () => {
    origin = await server.listen();
    process.env['AWS_ACCESS_KEY_ID'] = 'AKIDEXAMPLE';
    process.env['AWS_SECRET_ACCESS_KEY'] = 'secret';
    for (const kind of ['lean', 'sdk'] as const)
      clients[kind] = await createAwsAdapters(
        kind,
        { region: 'us-east-1', endpointUrl: origin.href },
        await resolveAwsEndpoints('us-east-1', origin.href),
        { maxSockets: 4 },
      );
  });
  after(() => {
    for (const c of Object.values(clients)) c.destroy();
    server.close();
    if (saved.id === undefined) delete process.env['AWS_ACCESS_KEY_ID'];
    else process.env['AWS_ACCESS_KEY_ID'] = saved.id;
    if (saved.secret === undefined) delete process.env['AWS_SECRET_ACCESS_KEY'];
    else process.env['AWS_SECRET_ACCESS_KEY'] = saved.secret;
  });

  const queue = (): ResolvedQueue => ({
    name: 'q',
    url: `${origin.origin}/000000000000/q`,
    arn: 'arn:aws:sqs:us-east-1:000000000000:q',
    region: 'us-east-1',
    fifo: false,
    visibilityTimeoutSec: 30,
    weight: 1,
  });

  /** Streams `total` bytes of JSON-ish filler (chunked unless `announce`), honouring back-pressure, until the client hangs up. */
  function stream(total: number, announce: boolean): void {
    written = 0;
    server.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', ...(announce ? { 'content-length': String(total) } : {}) });
      const pump = (): void => {
        while (written < total && !res.destroyed) {
          const part = chunk.subarray(0, Math.min(chunk.length, total - written));
          written += part.length;
          if (!res.write(part)) return void res.once('drain', pump);
        }
        if (written >= total) res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
    };
  }

  for (const kind of ['lean', 'sdk'] as const) {
    it(`${kind}: an Invoke answer announcing 600 MB is refused before its body is read, as 'rejected' (the function ran), naming the size`, async () => {
      stream(600 * MiB, true);
      const r = await clients[kind]!.invoker('fn').invoke('{}');
      assert.equal(r.ok, false);
      if (r.ok) return;
      assert.equal(r.error.kind, 'rejected');
      assert.equal(r.error.code, 'AnswerTooLarge');
      assert.match(r.error.message, new RegExp(`${600 * MiB}.*${INVOKE_ANSWER_MAX_BYTES}`));
      assert.ok(written < 64 * MiB, `the server wrote ${written} bytes before the socket closed`);
    });

    it(`${kind}: an Invoke answer streamed without a length stops being read at 6 MB; memory stays bounded`, async () => {
      stream(400 * MiB, false);
      global.gc?.();
      const rssBefore = process.memoryUsage().rss;
      const r = await clients[kind]!.invoker('fn').invoke('{}');
      const grewMiB = (process.memoryUsage().rss - rssBefore) / MiB;
      assert.equal(r.ok, false);
      if (r.ok) return;
      assert.equal(r.error.kind, 'rejected');
      assert.equal(r.error.code, 'AnswerTooLarge');
      const read = Number(/\((\d+) read\)/.exec(r.error.message)?.[1]);
      assert.ok(read > INVOKE_ANSWER_MAX_BYTES && read <= INVOKE_ANSWER_MAX_BYTES + MiB, `read ${read} bytes`);
      assert.ok(written < 64 * MiB, `the server wrote ${written} bytes before the socket closed`);
      assert.ok(grewMiB < 100, `RSS grew ${grewMiB.toFixed(0)} MiB`);
    });

    it(`${kind}: an Invoke answer of exactly 6 MB is read`, async () => {
      server.handler = (_req, res) => res.end(Buffer.alloc(INVOKE_ANSWER_MAX_BYTES, 0x31));
      const r = await clients[kind]!.invoker('fn').invoke('{}');
      assert.ok(r.ok, JSON.stringify(r.ok ? '' : r.error));
      assert.equal(r.response.payload?.length, INVOKE_ANSWER_MAX_BYTES);
    });

    it(`${kind}: the largest legal ReceiveMessage answer is read: 10 bodies of 1 MiB of DEL, each written as \\u007f (60 MiB)`, async () => {
      // LocalStack and moto write DEL (#x7F, legal in a body) as \u007f: six bytes in the answer for one in the body.
      const body = '\u007f'.repeat(MiB);
      const md5 = createHash('md5').update(body).digest('hex');
      const messages = Array.from({ length: 10 }, (_, i) => ({ MessageId: `m${i}`, ReceiptHandle: `rh${i}`, MD5OfBody: md5, Body: body }));
      const answer = JSON.stringify({ Messages: messages }).replaceAll('\u007f', '\\u007f');
      assert.ok(answer.length > 60 * MiB, `the answer is ${answer.length} bytes`);
      server.handler = (_req, res) => res.end(answer);
      const received = await clients[kind]!.sqs.receive(queue(), { max: 10, waitSec: 0 });
      assert.equal(received.length, 10);
      for (const m of received) assert.equal(m.Body, body);
    });

    it(`${kind}: a ReceiveMessage answer over its cap is a retryable AwsCallError naming the size`, async () => {
      stream(RECEIVE_ANSWER_MAX_BYTES + MiB, true);
      await assert.rejects(clients[kind]!.sqs.receive(queue(), { max: 10, waitSec: 0 }), (err: unknown) => {
        assert.ok(err instanceof AwsCallError);
        assert.equal(err.error.kind, 'retryable');
        assert.equal(err.error.code, 'AnswerTooLarge');
        assert.match(err.error.message, new RegExp(String(RECEIVE_ANSWER_MAX_BYTES + MiB)));
        return true;
      });
    });
  }
});
