// Messages received more often than allowed (src/settle/settle-exhausted.ts), through the Dispatcher with the
// in-memory fakes: not invoked again, sent to the failure destination. ApproximateReceiveCount grows with every
// receive ("Using dead-letter queues", SQS Developer Guide); on a queue without a redrive policy (--max-attempts)
// nothing else takes such a message off the queue.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { AwsCallError, classifyAwsError } from '../../../src/core/errors.ts';
import { Dispatcher } from '../../../src/dispatch/dispatcher.ts';
import type { DispatcherOptions } from '../../../src/dispatch/dispatcher-options.ts';
import type { ResolvedQueue } from '../../../src/core/queue.ts';
import type { DestinationSender } from '../../../src/settle/deliver-failures.ts';
import type { FailureDestination } from '../../../src/settle/failure-destination.ts';
import {
  FakeInvoker,
  FakeSource,
  RecordingMetrics,
  dispatcherOptions,
  functionError,
  message,
  queue,
  silentLogger,
  stopAfterTests,
  until,
} from '../../support/factories.ts';

const DEST: FailureDestination = { kind: 'sqs', url: 'http://sqs.local/000000000000/failures', fifo: false };

const counted = (n: number, group?: string) =>
  message({ Attributes: { ApproximateReceiveCount: String(n), SentTimestamp: '1', ...(group ? { MessageGroupId: group } : {}) } });
/** The same message received again: a new receipt handle, its count grown. */
const again = (m: Message, n: number): Message => ({
  ...m,
  ReceiptHandle: `${m.ReceiptHandle!}~${n}`,
  Attributes: { ...m.Attributes, ApproximateReceiveCount: String(n) },
});

interface Sent {
  id: string;
  error: { kind: string; errorType: string; errorMessage: string };
  requestId: string | null;
}

/** Records each record sent; refuses those `refuse` says (by message id and the how-manieth try for it). */
function sender(refuse: (id: string, attempt: number) => boolean = () => false) {
  const sent: Sent[] = [];
  const tries = new Map<string, number>();
  const send: DestinationSender = (_destination, m) => {
    const record = JSON.parse(m.body) as { record: { messageId: string }; error: Sent['error']; requestId: string | null };
    const id = record.record.messageId;
    const attempt = (tries.get(id) ?? 0) + 1;
    tries.set(id, attempt);
    if (refuse(id, attempt)) {
      return Promise.reject(new AwsCallError('SendMessage', classifyAwsError(Object.assign(new Error('down'), { name: 'InternalError' }))));
    }
    sent.push({ id, error: record.error, requestId: record.requestId });
    return Promise.resolve();
  };
  return { sent, send };
}

function start(q: ResolvedQueue, invoker: FakeInvoker, send: DestinationSender, options: Partial<DispatcherOptions> = {}) {
  const source = new FakeSource();
  const metrics = new RecordingMetrics();
  const dispatcher = new Dispatcher(dispatcherOptions([q], { failureDestination: DEST, batchSize: 10, maxAttempts: 2, ...options }), {
    source,
    invoker,
    metrics,
    logger: silentLogger,
    sendFailure: send,
  });
  const stop = stopAfterTests();
  return { source, metrics, stop, running: dispatcher.run(stop.signal) };
}

const invokedIds = (invoker: FakeInvoker) => invoker.payloads.flatMap((p) => p.Records.map((r) => r.messageId));

describe('Dispatcher: messages received more often than allowed', () => {
  it('are not invoked: their record says RetriesExhausted, then they are deleted; the others of the batch are invoked', async () => {
    const over = counted(3);
    const fresh = counted(1);
    const { sent, send } = sender();
    const invoker = new FakeInvoker(() => functionError());
    const { source, stop, running } = start(queue('q'), invoker, send);
    source.push('q', over, fresh);
    await until(() => source.deleted.length === 1 && invoker.payloads.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(invokedIds(invoker), [fresh.MessageId]);
    assert.deepEqual(sent, [
      {
        id: over.MessageId,
        error: {
          kind: 'retries-exhausted',
          errorType: 'RetriesExhausted',
          errorMessage: 'received 3 times, more than the 2 allowed; not invoked again',
        },
        requestId: null,
      },
    ]);
    assert.deepEqual(source.deleted, [{ queue: 'q', id: over.MessageId }]);
  });

  it('a record refused on the last allowed receive: the next receive is not invoked, and its record gives the failure seen then', async () => {
    const m = counted(2);
    // The first record is refused, the next one accepted.
    const { sent, send } = sender((_id, attempt) => attempt === 1);
    const invoker = new FakeInvoker(() => functionError('TypeError', 'bad'));
    const { source, metrics, stop, running } = start(queue('q'), invoker, send);
    source.push('q', m);
    await until(() => metrics.sum('OnFailureDestinationDeliveryFailedEventCount') === 1);
    source.push('q', again(m, 3));
    await until(() => source.deleted.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(invokedIds(invoker), [m.MessageId], 'invoked once, on its last allowed receive');
    assert.deepEqual(
      sent.map((s) => [s.id, s.error]),
      [[m.MessageId, { kind: 'function-error', errorType: 'TypeError', errorMessage: 'bad' }]],
    );
  });

  it('while the destination refuses, the message is never invoked and stays on the queue', async () => {
    const m = counted(4);
    const { send } = sender(() => true);
    const invoker = new FakeInvoker(() => functionError());
    const { source, metrics, stop, running } = start(queue('q'), invoker, send);
    source.push('q', m);
    await until(() => metrics.sum('OnFailureDestinationDeliveryFailedEventCount') === 1);
    source.push('q', again(m, 5));
    await until(() => metrics.sum('OnFailureDestinationDeliveryFailedEventCount') === 2);
    stop.abort();
    await running;
    assert.deepEqual(invoker.payloads, []);
    assert.deepEqual(source.deleted, []);
  });

  it('FIFO: a refused head keeps the later messages of its group from running; other groups run', async () => {
    const a1 = counted(3, 'a');
    const a2 = counted(1, 'a');
    const b1 = counted(1, 'b');
    const { send } = sender((id) => id === a1.MessageId);
    const invoker = new FakeInvoker(() => functionError());
    const { source, metrics, stop, running } = start(queue('q.fifo', { fifo: true }), invoker, send);
    source.push('q.fifo', a1, a2, b1);
    await until(() => metrics.sum('OnFailureDestinationDeliveryFailedEventCount') === 1 && invoker.payloads.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(invokedIds(invoker), [b1.MessageId]);
    assert.deepEqual(source.deleted, []);
  });

  it('FIFO: an accepted head is deleted and the rest of its group runs after it', async () => {
    const a1 = counted(3, 'a');
    const a2 = counted(1, 'a');
    const { sent, send } = sender();
    const invoker = new FakeInvoker(() => functionError());
    const { source, stop, running } = start(queue('q.fifo', { fifo: true }), invoker, send);
    source.push('q.fifo', a1, a2);
    await until(() => invoker.payloads.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(
      sent.map((s) => s.id),
      [a1.MessageId],
    );
    assert.deepEqual(invokedIds(invoker), [a2.MessageId]);
  });
});
