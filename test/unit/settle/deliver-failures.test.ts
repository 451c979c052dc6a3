// The failure destination's executor (src/settle/deliver-failures.ts), through the Dispatcher with the in-memory fakes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { answerTooLarge, INVOKE_ANSWER_MAX_BYTES } from '../../../src/core/answer-caps.ts';
import type { ResolvedQueue } from '../../../src/core/queue.ts';
import { AwsCallError, classifyAwsError } from '../../../src/core/errors.ts';
import { Dispatcher } from '../../../src/dispatch/dispatcher.ts';
import { classifyInvokeError } from '../../../src/invoke/lambda-errors.ts';
import type { DispatcherOptions } from '../../../src/dispatch/dispatcher-options.ts';
import type { DestinationSender } from '../../../src/settle/deliver-failures.ts';
import type { DestinationMessage, FailureDestination } from '../../../src/settle/failure-destination.ts';
import {
  FakeInvoker,
  FakeSource,
  RecordingMetrics,
  dispatcherOptions,
  functionError,
  message,
  ok,
  queue,
  silentLogger,
  stopAfterTests,
  until,
} from '../../support/factories.ts';

const DEST: FailureDestination = { kind: 'sqs', url: 'http://sqs.local/000000000000/failures', fifo: false };

const counted = (n: number, group?: string) =>
  message({ Attributes: { ApproximateReceiveCount: String(n), SentTimestamp: '1', ...(group ? { MessageGroupId: group } : {}) } });

/** A sender that records what it was given and refuses the messages whose body `refuse` matches. */
function sender(refuse: (body: string) => boolean = () => false) {
  const sent: { destination: FailureDestination; message: DestinationMessage; id: string }[] = [];
  const send: DestinationSender = (destination, m) => {
    const id = (JSON.parse(m.body) as { record: { messageId: string } }).record.messageId;
    if (refuse(id))
      return Promise.reject(
        new AwsCallError('SendMessage', classifyAwsError(Object.assign(new Error('down'), { name: 'QueueDoesNotExist' }))),
      );
    sent.push({ destination, message: m, id });
    return Promise.resolve();
  };
  return { sent, send };
}

function start(
  q: ResolvedQueue,
  invoker: FakeInvoker,
  send: DestinationSender,
  preload: (s: FakeSource) => void,
  options: Partial<DispatcherOptions> = {},
) {
  const source = new FakeSource();
  preload(source);
  const metrics = new RecordingMetrics();
  const dispatcher = new Dispatcher(dispatcherOptions([q], { failureDestination: DEST, batchSize: 10, ...options }), {
    source,
    invoker,
    metrics,
    logger: silentLogger,
    sendFailure: send,
  });
  const stop = stopAfterTests();
  return { source, metrics, stop, running: dispatcher.run(stop.signal) };
}

describe('Dispatcher: failure destination', () => {
  it('a function error on the last receive: the record goes, then the message is deleted and counted; earlier receives stay', async () => {
    const last = counted(3);
    const earlier = counted(2);
    const { sent, send } = sender();
    const { source, metrics, stop, running } = start(
      queue('q', { maxReceiveCount: 3 }),
      new FakeInvoker(() => functionError('TypeError', 'bad')),
      send,
      (s) => s.push('q', last, earlier),
    );
    await until(() => source.deleted.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(
      sent.map((s) => s.id),
      [last.MessageId],
    );
    const body = JSON.parse(sent[0]!.message.body) as { error: unknown; attempts: number; maxAttempts: number };
    assert.deepEqual(body.error, { kind: 'function-error', errorType: 'TypeError', errorMessage: 'bad' });
    assert.equal(body.attempts, 3);
    assert.deepEqual(source.deleted, [{ queue: 'q', id: last.MessageId }]);
    assert.equal(metrics.sum('OnFailureDestinationDeliveredEventCount'), 1);
    assert.equal(metrics.sum('DeletedEventCount'), 1);
  });

  it('a refused record: nothing is deleted, the refusal is counted, the message stays', async () => {
    const m = counted(5);
    const { sent, send } = sender(() => true);
    const { source, metrics, stop, running } = start(
      queue('q', { maxReceiveCount: 5 }),
      new FakeInvoker(() => functionError()),
      send,
      (s) => s.push('q', m),
    );
    await until(() => metrics.sum('OnFailureDestinationDeliveryFailedEventCount') === 1);
    stop.abort();
    await running;
    assert.equal(sent.length, 0);
    assert.deepEqual(source.deleted, []);
    assert.equal(metrics.sum('OnFailureDestinationDeliveredEventCount'), 0);
  });

  it('batchItemFailures: only the listed message goes, the processed one is deleted as usual; --max-attempts without a redrive policy', async () => {
    const failed = counted(2);
    const fine = counted(2);
    const { sent, send } = sender();
    const invoker = new FakeInvoker(() => ok({ batchItemFailures: [{ itemIdentifier: failed.MessageId }] }));
    const { source, stop, running } = start(queue('q'), invoker, send, (s) => s.push('q', failed, fine), { maxAttempts: 2 });
    await until(() => source.deleted.length === 2);
    stop.abort();
    await running;
    assert.deepEqual(
      sent.map((s) => s.id),
      [failed.MessageId],
    );
    assert.equal((JSON.parse(sent[0]!.message.body) as { error: { kind: string } }).error.kind, 'item-failure');
  });

  it('no limit known (no redrive policy, no max-attempts): nothing is sent', async () => {
    const m = counted(50);
    const { sent, send } = sender();
    const invoker = new FakeInvoker(() => functionError());
    const { stop, running } = start(queue('q'), invoker, send, (s) => s.push('q', m));
    await until(() => invoker.payloads.length >= 1);
    stop.abort();
    await running;
    assert.equal(sent.length, 0);
  });

  it("a queue's own destination and max-attempts come before the route's", async () => {
    const own: FailureDestination = { kind: 'sns', arn: 'arn:aws:sns:us-east-1:123456789012:own', fifo: false };
    const m = counted(2);
    const { sent, send } = sender();
    const { source, stop, running } = start(queue('q'), new FakeInvoker(() => functionError()), send, (s) => s.push('q', m), {
      maxAttempts: 9,
      queueOptions: new Map([['q', { filterAction: 'delete', failureDestination: own, maxAttempts: 2 }]]),
    });
    await until(() => source.deleted.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(sent[0]?.destination, own);
  });

  it('a rejected Invoke (413) sends its messages with Lambda’s error', async () => {
    const m = counted(1);
    const { sent, send } = sender();
    const invoker = new FakeInvoker(() => ({
      ok: false,
      error: {
        kind: 'rejected',
        code: 'RequestEntityTooLargeException',
        message: 'Request must be smaller than 6291456 bytes',
        status: 413,
      },
    }));
    const { source, stop, running } = start(queue('q', { maxReceiveCount: 1 }), invoker, send, (s) => s.push('q', m));
    await until(() => source.deleted.length === 1);
    stop.abort();
    await running;
    assert.deepEqual((JSON.parse(sent[0]!.message.body) as { error: unknown }).error, {
      kind: 'invoke-rejected',
      errorType: 'RequestEntityTooLargeException',
      errorMessage: 'Request must be smaller than 6291456 bytes',
    });
  });

  it('an Invoke answer over 6 MB (the function ran) is sent as an invalid response, not as a refused Invoke', async () => {
    const m = counted(1);
    const { sent, send } = sender();
    const tooLarge = classifyInvokeError(answerTooLarge(7_000_000, INVOKE_ANSWER_MAX_BYTES, true));
    const { source, stop, running } = start(
      queue('q', { maxReceiveCount: 1 }),
      new FakeInvoker(() => ({ ok: false, error: tooLarge })),
      send,
      (s) => s.push('q', m),
    );
    await until(() => source.deleted.length === 1);
    stop.abort();
    await running;
    assert.deepEqual((JSON.parse(sent[0]!.message.body) as { error: unknown }).error, {
      kind: 'invalid-response',
      errorType: 'AnswerTooLarge',
      errorMessage: tooLarge.message,
    });
  });

  it('FIFO: once a record of a group is refused, the later ones of that group are not sent; other groups go on', async () => {
    const a1 = counted(2, 'a');
    const a2 = counted(2, 'a');
    const b1 = counted(2, 'b');
    const { sent, send } = sender((id) => id === a1.MessageId);
    const { source, metrics, stop, running } = start(
      queue('q.fifo', { maxReceiveCount: 2 }),
      new FakeInvoker(() => functionError()),
      send,
      (s) => s.push('q.fifo', a1, a2, b1),
    );
    await until(() => source.deleted.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(
      sent.map((s) => s.id),
      [b1.MessageId],
    );
    assert.deepEqual(source.deleted, [{ queue: 'q.fifo', id: b1.MessageId }]);
    assert.equal(metrics.sum('OnFailureDestinationDeliveryFailedEventCount'), 2);
  });
});
