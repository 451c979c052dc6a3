// postWithSdkRetries: the lean path's stand-in for the SDK's standard retry mode, so it is held to the SDK's own
// constants (@smithy/core/retry: DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_DELAY_BASE, THROTTLING_RETRY_DELAY_BASE) and
// to what the SDK does not retry. The lean adapters' tests (lean-adapters.test.ts, lean-vs-sdk.test.ts) prove the
// same through SQS; these prove it of the policy alone, with an in-memory SignedHttp.
import assert from 'node:assert/strict';
import { afterEach, describe, it, mock } from 'node:test';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_DELAY_BASE, THROTTLING_RETRY_DELAY_BASE } from '@smithy/core/retry';
import { answerTooLarge, ANSWER_TOO_LARGE } from '../../../src/core/answer-caps.ts';
import { AwsCallError } from '../../../src/core/errors.ts';
import { postWithSdkRetries, type JsonCall } from '../../../src/aws/sdk-retry.ts';
import type { HttpAnswer, SignedHttp } from '../../../src/aws/signed-http.ts';

/** Math.random() just below 1: each back-off is at its ceiling. */
const highest = () => 1 - 1e-9;

const CALL: JsonCall = {
  origin: new URL('http://sqs.local'),
  path: '/',
  headers: { 'x-amz-target': 'AmazonSQS.DeleteMessageBatch' },
  body: '{}',
  operation: 'DeleteMessageBatch',
  maxAnswerBytes: 1024,
  sdkErrorNames: { 'AWS.SimpleQueueService.NonExistentQueue': 'QueueDoesNotExist' },
};

/** An answer with an AWS JSON error, named as SQS names it in x-amzn-query-error. */
function refusal(status: number, code: string): HttpAnswer {
  return {
    status,
    headers: { 'x-amzn-query-error': `${code};${status >= 500 ? 'Receiver' : 'Sender'}` },
    body: Buffer.from(JSON.stringify({ __type: `com.amazonaws.sqs#${code}`, message: `${code} (test)` })),
  };
}

const ok: HttpAnswer = { status: 200, headers: {}, body: Buffer.from('{"Successful":[]}') };

/** A SignedHttp whose posts answer, in turn, what `answers` holds (an Error is thrown); records when each was made. */
function fakeHttp(...answers: (HttpAnswer | Error)[]) {
  const at: number[] = [];
  const start = performance.now();
  const http: Pick<SignedHttp, 'post'> = {
    post: async () => {
      at.push(performance.now() - start);
      onPost?.();
      const next = answers[Math.min(at.length - 1, answers.length - 1)]!;
      if (next instanceof Error) throw next;
      return next;
    },
  };
  let onPost: (() => void) | undefined;
  return { http: http as SignedHttp, at, onPost: (f: () => void) => (onPost = f) };
}

/** The gaps between consecutive posts, in ms. */
const gaps = (at: readonly number[]) => at.slice(1).map((t, i) => t - at[i]!);

/** The AwsCallError a call rejected with. */
async function failure(promise: Promise<unknown>): Promise<AwsCallError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof AwsCallError, `an AwsCallError, not ${String(err)}`);
    return err;
  }
  assert.fail('the call succeeded');
}

describe('postWithSdkRetries', () => {
  afterEach(() => mock.restoreAll());

  it("makes the SDK's standard number of attempts (3) on a 500, then throws it classified retryable, counted once", async () => {
    assert.equal(DEFAULT_MAX_ATTEMPTS, 3);
    mock.method(Math, 'random', () => 0);
    const s = fakeHttp(refusal(500, 'InternalError'));
    const counted: [string, unknown][] = [];
    const err = await failure(postWithSdkRetries(s.http, CALL, undefined, (op, e) => counted.push([op, e])));
    assert.equal(s.at.length, DEFAULT_MAX_ATTEMPTS);
    assert.equal(err.operation, 'DeleteMessageBatch');
    assert.deepEqual([err.error.kind, err.error.code, err.error.status], ['retryable', 'InternalError', 500]);
    assert.equal(counted.length, 1, 'a call is counted once by its outcome, not per attempt');
    assert.equal(counted[0]![0], 'DeleteMessageBatch');
    assert.ok(counted[0]![1] instanceof Error);
  });

  it('returns the body of the first answer that succeeds, counted once as a success', async () => {
    mock.method(Math, 'random', () => 0);
    const s = fakeHttp(refusal(503, 'ServiceUnavailable'), ok);
    const counted: unknown[] = [];
    const body = await postWithSdkRetries(s.http, CALL, undefined, (_op, e) => counted.push(e));
    assert.equal(body.toString(), '{"Successful":[]}');
    assert.equal(s.at.length, 2);
    assert.deepEqual(counted, [undefined]);
  });

  it("backs off with full jitter from the SDK's base of 100 ms, doubling per attempt", async () => {
    assert.equal(DEFAULT_RETRY_DELAY_BASE, 100);
    mock.method(Math, 'random', highest);
    // A plain 500 and a throttled call side by side: at the highest draw their retries are due at 100 and 300 ms,
    // and at 500 and 1500 ms. Timers fire in the order they fall due, so the order of the posts shows the base
    // was not the throttling one, however slow the machine.
    const posts: string[] = [];
    const plain = fakeHttp(refusal(500, 'InternalError'));
    const throttled = fakeHttp(refusal(400, 'RequestThrottled'));
    plain.onPost(() => posts.push('500'));
    throttled.onPost(() => posts.push('throttled'));
    await Promise.all([
      failure(postWithSdkRetries(plain.http, CALL, undefined)),
      failure(postWithSdkRetries(throttled.http, CALL, undefined)),
    ]);
    assert.deepEqual(posts, ['500', 'throttled', '500', '500', 'throttled', 'throttled']);
    // Timers fire no earlier than due, give or take the event loop's millisecond: 100 then 200 ms.
    const [first, second] = gaps(plain.at);
    assert.ok(first! >= 98 && second! >= 198, `waits ${first} and ${second} ms`);
  });

  it("backs off from the SDK's throttling base of 500 ms when throttled", async () => {
    assert.equal(THROTTLING_RETRY_DELAY_BASE, 500);
    mock.method(Math, 'random', highest);
    const s = fakeHttp(refusal(400, 'RequestThrottled'), refusal(400, 'RequestThrottled'), ok);
    await postWithSdkRetries(s.http, CALL, undefined);
    const [first, second] = gaps(s.at);
    assert.ok(first! >= 498 && second! >= 998, `waits ${first} and ${second} ms`);
  });

  it("does not retry a fatal error, and names it as the SDK's client does", async () => {
    const s = fakeHttp(refusal(400, 'AWS.SimpleQueueService.NonExistentQueue'));
    const err = await failure(postWithSdkRetries(s.http, CALL, undefined));
    assert.equal(s.at.length, 1);
    assert.deepEqual([err.error.kind, err.error.code], ['fatal', 'QueueDoesNotExist']);
  });

  it('does not retry an answer over its cap (nor does the SDK: it is no transient error)', async () => {
    const s = fakeHttp(answerTooLarge(5_000, 1_024, true));
    const err = await failure(postWithSdkRetries(s.http, CALL, undefined));
    assert.equal(s.at.length, 1);
    assert.equal(err.error.code, ANSWER_TOO_LARGE);
  });

  it('stops waiting at once when the signal aborts during a back-off, without another attempt, counted once', async () => {
    mock.method(Math, 'random', highest);
    // Throttled: a 500 ms back-off, long enough to tell an abort that ended it from one that did not.
    const s = fakeHttp(refusal(400, 'RequestThrottled'));
    const stop = new AbortController();
    const counted: unknown[] = [];
    const call = failure(postWithSdkRetries(s.http, CALL, stop.signal, (_op, e) => counted.push(e)));
    // The first attempt failed and its back-off has begun.
    await new Promise((resolve) => setTimeout(resolve, 20));
    // A timer set now falls due before the back-off's (due at 500 ms): the call must end before it does.
    const backOffWouldEnd = new Promise((resolve) => setTimeout(() => resolve('back-off ran out'), 480 - 20));
    stop.abort();
    assert.equal(await Promise.race([call.then(() => 'stopped'), backOffWouldEnd]), 'stopped');
    assert.equal(s.at.length, 1);
    assert.equal(counted.length, 1);
  });

  it('makes no further attempt once the signal has aborted, whatever the error', async () => {
    const stop = new AbortController();
    const s = fakeHttp(refusal(500, 'InternalError'));
    const http: Pick<SignedHttp, 'post'> = {
      post: (...args) => {
        stop.abort();
        return s.http.post(...args);
      },
    };
    const err = await failure(postWithSdkRetries(http as SignedHttp, CALL, stop.signal));
    assert.equal(s.at.length, 1);
    assert.equal(err.error.code, 'InternalError', "the call's own error, not the abort");
  });
});
