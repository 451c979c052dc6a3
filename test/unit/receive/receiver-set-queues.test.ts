// Receiver.setQueues: a route's queues change while it runs (queues found by prefix or tag).
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { Receiver, type ReceiverOptions } from '../../../src/receive/receiver.ts';
import { drawOrder } from '../../../src/receive/queue-order.ts';
import type { EntryFailure, MessageSource, ReceiveOptions, ResolvedQueue } from '../../../src/core/queue.ts';
import { message, queue, recordingLogger } from '../../support/factories.ts';

const START = 1_000_000;

/** Receives answered by the test (`pending`) or at once by `respond`; every call recorded by queue name. */
class Source implements MessageSource {
  readonly calls: { queue: string; waitSec: number }[] = [];
  readonly pending: { queue: string; resolve: (m: Message[]) => void }[] = [];
  respond: ((queue: string, waitSec: number) => Message[] | undefined) | undefined;

  receive(q: ResolvedQueue, options: ReceiveOptions): Promise<Message[]> {
    this.calls.push({ queue: q.name, waitSec: options.waitSec });
    const answer = this.respond?.(q.name, options.waitSec);
    if (answer !== undefined) return Promise.resolve(answer);
    return new Promise((resolve) => this.pending.push({ queue: q.name, resolve }));
  }
  async deleteBatch(): Promise<EntryFailure[]> {
    return [];
  }
  async changeVisibility(): Promise<EntryFailure[]> {
    return [];
  }
}

function setup(overrides: Partial<ReceiverOptions> = {}) {
  const source = new Source();
  const receiver = new Receiver(
    { queues: [], orderMode: 'weighted', batchSize: 1, pollForSec: 20, sleepSec: 0, concurrency: 2, ...overrides },
    { source, logger: recordingLogger().logger, random: () => 0.5, now: () => Date.now() },
  );
  return { source, receiver, stop: new AbortController() };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('Receiver.setQueues', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  it('starts with no queue, sends nothing, and receives from a queue once it joins', async () => {
    const { source, receiver, stop } = setup();
    const pass = receiver.next(stop.signal);
    await flush();
    assert.equal(source.calls.length, 0, 'no queue: no receive');
    assert.equal(receiver.anyHealthy, true, 'no queue is waiting, not failing: /readyz stays ready');
    mock.timers.tick(1_000);
    assert.equal(await pass, undefined, 'the loop looks again a second later');
    const m = message();
    source.respond = (name) => (name === 'a' ? [m] : []);
    receiver.setQueues([queue('a')], [undefined]);
    const got = await receiver.next(stop.signal);
    assert.equal(got?.queue.name, 'a');
    assert.deepEqual(got?.messages, [m]);
  });

  it('a queue that leaves is never received from again; the ones that stay and join are', async () => {
    const { source, receiver, stop } = setup({ queues: [queue('a'), queue('b')] });
    source.respond = () => [];
    receiver.setQueues([queue('b'), queue('c')], [undefined, undefined]);
    source.calls.length = 0;
    const pass = receiver.next(stop.signal);
    await flush();
    const names = new Set(source.calls.map((c) => c.queue));
    assert.ok(!names.has('a'), `a left the route: ${JSON.stringify(source.calls)}`);
    assert.ok(names.has('b') && names.has('c'), `b stays and c joined: ${JSON.stringify(source.calls)}`);
    stop.abort();
    await pass;
  });

  it('an idle poll on a queue that leaves ends as it would have: its messages go to the waiting loop', async () => {
    const { source, receiver, stop } = setup({ queues: [queue('a')] });
    source.respond = (_name, waitSec) => (waitSec === 0 ? [] : undefined);
    const pass = receiver.next(stop.signal);
    await flush();
    assert.deepEqual(
      source.pending.map((p) => p.queue),
      ['a'],
      'a long poll on a is in flight',
    );
    receiver.setQueues([], []);
    const m = message();
    source.pending.shift()!.resolve([m]);
    const got = await pass;
    assert.equal(got?.queue.name, 'a', 'received before a left: invoked and settled as usual');
    assert.deepEqual(got?.messages, [m]);
    receiver.settled(got.queue);
    source.calls.length = 0;
    const after = receiver.next(stop.signal);
    await flush();
    assert.equal(source.calls.length, 0, 'no receive on a once it left');
    stop.abort();
    await after;
  });

  it('a batch gathering while its queue object is replaced (a weight tag changed) is counted out: the queue gets its idle poll again', async () => {
    const before = queue('a');
    const { source, receiver, stop } = setup({ queues: [before] });
    source.respond = (_name, waitSec) => (waitSec === 0 ? [] : undefined);
    receiver.gathering(before, true);
    // Discovery re-places the queue with a new object of the same name while the batch gathers.
    receiver.setQueues([queue('a', { weight: 5 })], [undefined]);
    receiver.gathering(before, false);
    const pass = receiver.next(stop.signal);
    await flush();
    assert.deepEqual(
      source.pending.map((p) => p.queue),
      ['a'],
      'the queue is found by name, not by object: its gathering ended and its long poll is back',
    );
    stop.abort();
    source.pending.shift()!.resolve([]);
    await pass;
  });

  it("a queue's limits follow setQueues: a slot taken before it left is given back, and a queue that left reserves no loop", async () => {
    const { source, receiver, stop } = setup({ queues: [queue('a'), queue('b')], limits: [{ maxConcurrency: 1 }, undefined] });
    source.respond = (name) => (name === 'a' ? [message()] : []);
    const first = await receiver.next(stop.signal);
    assert.equal(first?.queue.name, 'a');
    // a leaves while its batch is in flight, then b gets a minimum of both loops: a's batch still holds one.
    receiver.setQueues([queue('b')], [{ minConcurrency: 2 }]);
    receiver.settled(first.queue);
    // a comes back with its limit: its slot was given back, so it admits a loop again.
    receiver.setQueues([queue('a'), queue('b')], [{ maxConcurrency: 1 }, undefined]);
    source.calls.length = 0;
    const again = await receiver.next(stop.signal);
    assert.equal(again?.queue.name, 'a', 'a took its index (and a free slot) back');
  });

  it('found queues of equal weight are drawn in a random order (O(n), where a weighted draw is O(n^2)), as in --queues', async () => {
    const { source, receiver, stop } = setup();
    source.respond = () => [];
    const many = Array.from({ length: 10_000 }, (_, i) => queue(`q-${i}`));
    receiver.setQueues(many, []);
    // The loop's pass reads every queue once; finding them all empty, it then waits with the idle polls until the stop.
    const waiting = receiver.next(stop.signal);
    const shortReceives = () => source.calls.filter((c) => c.waitSec === 0);
    for (let i = 0; i < 1_000 && shortReceives().length < 10_000; i++) await flush();
    stop.abort();
    await waiting;
    const shorts = shortReceives().map((c) => c.queue);
    assert.equal(shorts.length, 10_000, 'every queue read once with a short receive');
    const specs = many.map((q) => ({ ref: q.name, weight: 1 }));
    const random = drawOrder({ mode: 'random', queues: specs }, () => 0.5).map((i) => specs[i]!.ref);
    const weighted = drawOrder({ mode: 'weighted', queues: specs }, () => 0.5).map((i) => specs[i]!.ref);
    assert.notDeepEqual(random, weighted);
    assert.deepEqual(shorts, random);
  });
});
