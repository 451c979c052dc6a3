// Failures where nothing left this machine (issue 19 item 4; issue 20 item 8 for EMFILE/ENFILE): no file
// descriptor for a socket, DNS, a refused or unroutable connect, a connect timeout, credentials that cannot be
// loaded. They are retryable with back-off everywhere: an Invoke is 'not-sent' (never 'unknown', which would hold
// its batch a whole visibility timeout) and a delete or visibility change is retried (never fatal). Only a
// failure after the request may have reached AWS stays 'unknown'. src/core/errors.ts (notSentCode) decides, from
// the lean transport's own mark or, on the SDK path, from the error as Node and the SDK raise it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { AwsCallError, classifyAwsError } from '../../../src/core/errors.ts';
import { SignedHttp } from '../../../src/aws/signed-http.ts';
import { LambdaHttpInvoker } from '../../../src/aws/lambda-http-invoker.ts';
import { classifyInvokeError } from '../../../src/invoke/lambda-errors.ts';
import type { MessageSource, ResolvedQueue } from '../../../src/core/queue.ts';
import { DeleteBatcher } from '../../../src/settle/delete-batcher.ts';
import { changeVisibility } from '../../../src/settle/visibility-change.ts';
import { RecordingServer } from '../../support/recording-server.ts';

const errno = (code: string, syscall: string, message = `${syscall} ${code}`) => Object.assign(new Error(message), { code, syscall });

/** Errors as Node and the SDK raise them when nothing was sent. */
const NOT_SENT: [string, unknown][] = [
  ['EMFILE (no file descriptor for the socket)', errno('EMFILE', 'connect')],
  ['ENFILE (system file table full)', errno('ENFILE', 'connect')],
  ['ENOTFOUND (DNS)', errno('ENOTFOUND', 'getaddrinfo', 'getaddrinfo ENOTFOUND sqs.example')],
  ['EAI_AGAIN (DNS not answering)', errno('EAI_AGAIN', 'getaddrinfo')],
  ['ECONNREFUSED', errno('ECONNREFUSED', 'connect')],
  [
    'ECONNREFUSED on every address (happy eyeballs)',
    new AggregateError([errno('ECONNREFUSED', 'connect'), errno('ECONNREFUSED', 'connect')]),
  ],
  [
    'credentials that cannot be loaded (the SDK provider chain)',
    Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError', tryNextLink: false }),
  ],
  [
    "the SDK handler's connect timeout",
    Object.assign(new Error('Socket timed out without establishing a connection within 1000 ms'), { name: 'TimeoutError' }),
  ],
];

/** Errors after which the request may have reached AWS. */
const MAYBE_SENT: [string, unknown][] = [
  ['ECONNRESET after the request was written', errno('ECONNRESET', 'read')],
  ['EPIPE', errno('EPIPE', 'write')],
  ['ETIMEDOUT (the SDK cannot tell connect from read)', errno('ETIMEDOUT', 'read')],
  ['the SDK socket timeout while waiting', Object.assign(new Error('Connection timed out after 5000 ms'), { name: 'TimeoutError' })],
];

const queue: ResolvedQueue = {
  name: 'q',
  url: 'http://127.0.0.1/000000000000/q',
  arn: 'arn:aws:sqs:us-east-1:000000000000:q',
  region: 'us-east-1',
  fifo: false,
  visibilityTimeoutSec: 30,
  weight: 1,
};

describe('local failures (nothing sent)', () => {
  for (const [what, err] of NOT_SENT) {
    it(`${what}: retryable, and an Invoke is 'not-sent'`, () => {
      const e = classifyAwsError(err);
      assert.equal(e.kind, 'retryable');
      assert.equal(e.notSent, true);
      // The code names the cause, for the log line and the start-up message.
      assert.match(e.code, /^(EMFILE|ENFILE|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|CredentialsProviderError|TimeoutError)$/);
      assert.equal(classifyInvokeError(err).kind, 'not-sent');
    });
  }
  for (const [what, err] of MAYBE_SENT) {
    it(`${what}: retryable, but an Invoke's outcome is 'unknown'`, () => {
      assert.equal(classifyAwsError(err).kind, 'retryable');
      assert.equal(classifyInvokeError(err).kind, 'unknown');
    });
  }

  describe('the lean transport knows what it sent', () => {
    const server = new RecordingServer();
    let origin: URL;
    before(async () => (origin = await server.listen()));
    after(() => server.close());

    it('credentials that cannot be loaded: not-sent, and nothing reached the server', async () => {
      const failing = () =>
        Promise.reject(Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' }));
      const http = new SignedHttp({ service: 'lambda', region: 'us-east-1', credentials: failing, maxSockets: 1 });
      server.seen.length = 0;
      const r = await new LambdaHttpInvoker(http, origin, 'fn').invoke('{}');
      http.destroy();
      assert.equal(!r.ok && r.error.kind, 'not-sent');
      assert.equal(!r.ok && r.error.code, 'CredentialsProviderError');
      assert.equal(server.seen.length, 0);
    });

    it('no file descriptor left for the socket (EMFILE, under a real ulimit): not-sent, and nothing reached the server', () => {
      server.seen.length = 0;
      const script = fileURLToPath(new URL('../../support/emfile-invoke.ts', import.meta.url));
      const out = execFileSync('bash', ['-c', `ulimit -n 64 && exec "${process.execPath}" "${script}" "${origin.origin}"`], {
        encoding: 'utf8',
      });
      const { held, result } = JSON.parse(out) as { held: number; result: { ok: boolean; error?: { kind: string; code: string } } };
      assert.ok(held > 0);
      assert.deepEqual([result.ok, result.error?.kind, result.error?.code], [false, 'not-sent', 'EMFILE']);
      assert.equal(server.seen.length, 0);
    });

    it('a host that does not resolve: not-sent', async () => {
      const http = new SignedHttp({
        service: 'lambda',
        region: 'us-east-1',
        credentials: () => Promise.resolve({ accessKeyId: 'a', secretAccessKey: 's' }),
        maxSockets: 1,
      });
      const r = await new LambdaHttpInvoker(http, new URL('http://lambda.does-not-exist.invalid'), 'fn').invoke(
        '{}',
        AbortSignal.timeout(10_000),
      );
      http.destroy();
      assert.equal(!r.ok && r.error.kind, 'not-sent', JSON.stringify(r));
    });

    it('a deadline that falls after the request was written (no answer): unknown', async () => {
      const http = new SignedHttp({
        service: 'lambda',
        region: 'us-east-1',
        credentials: () => Promise.resolve({ accessKeyId: 'a', secretAccessKey: 's' }),
        maxSockets: 1,
      });
      server.handler = () => {}; // reads the request, never answers
      const r = await new LambdaHttpInvoker(http, origin, 'fn').invoke('{}', AbortSignal.timeout(300));
      http.destroy();
      server.handler = (_req, res) => res.end('{}');
      assert.equal(!r.ok && r.error.kind, 'unknown', JSON.stringify(r));
    });
  });

  describe('settling retries them instead of giving up', () => {
    const logger = pino({ level: 'silent' });
    for (const [what, err] of NOT_SENT) {
      it(`DeleteMessageBatch and ChangeMessageVisibilityBatch after ${what}`, async () => {
        let deletes = 0;
        let changes = 0;
        const source: MessageSource = {
          receive: () => Promise.resolve([]),
          deleteBatch: () =>
            ++deletes === 1 ? Promise.reject(new AwsCallError('DeleteMessageBatch', classifyAwsError(err))) : Promise.resolve([]),
          changeVisibility: () =>
            ++changes === 1 ? Promise.reject(new AwsCallError('ChangeMessageVisibilityBatch', classifyAwsError(err))) : Promise.resolve([]),
        };
        const deleted = await new DeleteBatcher(source, logger).delete(queue, [{ id: 'm1', receiptHandle: 'r1' }]);
        assert.deepEqual(deleted, { done: 1, failed: [] });
        assert.equal(deletes, 2);
        assert.deepEqual(await changeVisibility(source, logger, queue, [{ id: 'm1', receiptHandle: 'r1' }], 0), { done: 1, failed: [] });
        assert.equal(changes, 2);
      });
    }
  });
});
