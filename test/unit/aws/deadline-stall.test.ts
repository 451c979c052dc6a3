// Issue 42 (Low): an answer that arrived in time is not dropped after a stall of the event loop. When the loop is
// blocked past a call's deadline while the answer is already on the socket, the deadline's timer runs before the
// socket is read (timers come before the poll phase); the receive was aborted, and the messages SQS had handed out
// stayed invisible a whole visibility timeout with one more receive count. Both clients' deadlines now abort only
// after the loop's next read of its sockets: the lean one's (CallDeadlines, src/aws/signed-http.ts, as
// SqsHttpSource holds them) and the SDK client's (withDeadline, src/core/errors.ts, as SqsSdkSource passes it).
// The server runs in a process of its own, so that it answers while this one's loop is blocked.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Http1Pool } from '../../../src/aws/http1-pool.ts';
import { CallDeadlines } from '../../../src/aws/signed-http.ts';
import { withDeadline } from '../../../src/core/errors.ts';

/** Answers each request with one SQS message (AWS JSON 1.0, as ReceiveMessage does) ANSWER_MS after reading it. */
const ANSWER_MS = 150;
const CHILD_SERVER = `
const body = 'stalled but answered';
const md5 = require('node:crypto').createHash('md5').update(body).digest('hex');
const answer = JSON.stringify({ Messages: [{ MessageId: 'm-1', ReceiptHandle: 'r-1', MD5OfBody: md5, Body: body }] });
const server = require('node:http').createServer((req, res) => {
  req.resume();
  req.on('end', () => setTimeout(() => {
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'req-1', 'content-length': Buffer.byteLength(answer) });
    res.end(answer);
  }, ${ANSWER_MS}));
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

/** The call's deadline, and how long the loop is blocked from BLOCK_AT_MS: the answer comes in the middle of it. */
const DEADLINE_MS = 400;
const BLOCK_AT_MS = 50;
const BLOCK_UNTIL_MS = 700;

/** Starts `call` (given the deadline's signal), blocks the loop from BLOCK_AT_MS to BLOCK_UNTIL_MS, and settles. */
async function stalled<T>(call: () => Promise<T>): Promise<{ value?: T; error?: unknown }> {
  const started = performance.now();
  const outcome = call().then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  // Blocked in the check phase, as by a long callback: the next turn of the loop runs its timers first, on a fresh
  // clock (a block inside a timer's callback would leave the rest of that phase on the clock read before it).
  setTimeout(
    () =>
      setImmediate(() => {
        while (performance.now() < started + BLOCK_UNTIL_MS);
      }),
    BLOCK_AT_MS,
  );
  return outcome;
}

describe('a deadline that passed while the event loop was blocked, with the answer on the socket', () => {
  let child: ChildProcess;
  let port = 0;
  before(async () => {
    child = spawn(process.execPath, ['-e', CHILD_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await once(child.stdout!, 'data')) as [Buffer];
    port = Number(line.toString().trim());
  });
  after(() => child.kill());

  it('the lean client reads the answer instead of aborting the call', async () => {
    const pool = new Http1Pool(4);
    const deadlines = new CallDeadlines();
    const target = { host: `127.0.0.1:${port}`, hostname: '127.0.0.1', port, https: false };
    const headers = { host: target.host, 'content-length': '2' };
    const abortError = (signal: AbortSignal) =>
      Object.assign(new Error('Request aborted', { cause: signal.reason }), { name: 'AbortError' });
    const post = async () => {
      const deadline = deadlines.start(DEADLINE_MS);
      try {
        return await pool.post(target, '/', headers, '{}', deadline.signal, 1 << 20, abortError);
      } finally {
        deadline.clear();
      }
    };
    try {
      await post(); // a kept socket, as a daemon's receives have
      const { value, error } = await stalled(post);
      assert.equal(error, undefined, `the call failed: ${String(error)} (${String((error as Error | undefined)?.cause)})`);
      assert.match(value!.body.toString(), /stalled but answered/);
      // And a deadline still aborts a call that has no answer.
      const deadline = deadlines.start(50);
      const hung = pool.post(target, '/', headers, '{}', deadline.signal, 1 << 20, abortError);
      // The server answers after ANSWER_MS, past this deadline: aborted, with the TimeoutError as its cause.
      await assert.rejects(hung, (err: Error) => err.name === 'AbortError' && (err.cause as Error).name === 'TimeoutError');
      deadline.clear();
    } finally {
      pool.destroy();
    }
  });

  it('the SDK client reads the answer instead of aborting the call', async () => {
    const client = new SQSClient({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: 1,
    });
    const receive = () =>
      client.send(new ReceiveMessageCommand({ QueueUrl: `http://127.0.0.1:${port}/000000000000/q`, WaitTimeSeconds: 0 }), {
        abortSignal: withDeadline(DEADLINE_MS),
      });
    try {
      await receive(); // a kept socket and a warm client
      const { value, error } = await stalled(receive);
      assert.equal(error, undefined, `the call failed: ${String(error)}`);
      assert.equal(value!.Messages?.[0]?.Body, 'stalled but answered');
      // And a deadline still aborts a call that has no answer in time.
      await assert.rejects(
        client.send(new ReceiveMessageCommand({ QueueUrl: `http://127.0.0.1:${port}/000000000000/q` }), { abortSignal: withDeadline(50) }),
        (err: Error) => err.name === 'AbortError' || err.name === 'TimeoutError',
      );
    } finally {
      client.destroy();
    }
  });
});
