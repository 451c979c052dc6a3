// The receiver under a fleet's view (ReceiverDeps.serves, src/fleet/fleet-member.ts): a queue another replica
// polls is neither read by a pass nor long-polled here; one that becomes served gets its poll at once; full
// receives mark a queue busy for the member to advertise.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { LIMIT_RECHECK_MS } from '../../../src/receive/idle-loops.ts';
import { Receiver } from '../../../src/receive/receiver.ts';
import type { EntryFailure, MessageSource, ReceiveOptions, ResolvedQueue } from '../../../src/core/queue.ts';
import { message, queue, silentLogger } from '../../support/factories.ts';

const START = 1_000_000;

class Source implements MessageSource {
  readonly calls: [string, number][] = [];
  respond: (queue: string, waitSec: number) => Message[] | Promise<Message[]> = (_q, waitSec) => (waitSec > 0 ? new Promise(() => {}) : []);
  async receive(q: ResolvedQueue, options: ReceiveOptions): Promise<Message[]> {
    this.calls.push([q.name, options.waitSec]);
    return this.respond(q.name, options.waitSec);
  }
  async deleteBatch(): Promise<EntryFailure[]> {
    return [];
  }
  async changeVisibility(): Promise<EntryFailure[]> {
    return [];
  }
}

const flush = () => new Promise((r) => setImmediate(r));

function setup(served: Set<string>) {
  const source = new Source();
  const receiver = new Receiver(
    { queues: ['a', 'b', 'c', 'd'].map((n) => queue(n)), orderMode: 'strict', batchSize: 10, pollForSec: 20, sleepSec: 0, concurrency: 2 },
    { source, logger: silentLogger, random: Math.random, now: () => Date.now(), serves: (q) => served.has(q.name) },
  );
  return { source, receiver, stop: new AbortController() };
}

describe('Receiver with a fleet view', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  it('reads and long-polls only the queues it serves', async () => {
    const { source, receiver, stop } = setup(new Set(['a', 'c']));
    const pass = receiver.next(stop.signal);
    await flush();
    assert.deepEqual(source.calls, [
      ['a', 0],
      ['c', 0],
      ['a', 20],
      ['c', 20],
    ]);
    stop.abort();
    await pass;
  });

  it('polls a queue at once when it becomes served, and never one that stopped being served', async () => {
    const served = new Set(['a']);
    const { source, receiver, stop } = setup(served);
    const pass = receiver.next(stop.signal);
    await flush();
    assert.deepEqual(
      source.calls.filter(([, w]) => w > 0).map(([q]) => q),
      ['a'],
    );
    served.add('d');
    receiver.servesChanged();
    await flush();
    assert.deepEqual(
      source.calls.filter(([, w]) => w > 0).map(([q]) => q),
      ['a', 'd'],
    );
    stop.abort();
    await pass;
  });

  it('serves nothing when it serves no queue: no receive at all, and looks again later', async () => {
    const { source, receiver, stop } = setup(new Set());
    const pass = receiver.next(stop.signal);
    await flush();
    assert.deepEqual(source.calls, []);
    stop.abort();
    mock.timers.tick(1_000);
    await pass;
  });

  it('a loop of a replica that serves no queue waits until the view changes or LIMIT_RECHECK_MS passes, never 0 ms', async () => {
    // Its wait was the first back-off's end minus now: in the past for a healthy queue, so each loop came straight
    // back and the replica's loops, resolving at once, starved its event loop (no heartbeat, no probe answered).
    const served = new Set<string>();
    const { source, receiver, stop } = setup(served);
    const ended: number[] = [];
    const loop = async (rounds: number) => {
      for (let i = 0; i < rounds && !stop.signal.aborted; i++) {
        await receiver.next(stop.signal);
        ended.push(Date.now());
      }
    };
    const running = loop(3);
    for (let i = 0; i < 5; i++) await flush();
    assert.deepEqual(ended, [], 'the loop waits');
    mock.timers.tick(LIMIT_RECHECK_MS);
    for (let i = 0; i < 5; i++) await flush();
    assert.deepEqual(ended, [START + LIMIT_RECHECK_MS], 'looked again once, after LIMIT_RECHECK_MS');
    served.add('b');
    receiver.servesChanged();
    for (let i = 0; i < 5; i++) await flush();
    assert.deepEqual(ended, [START + LIMIT_RECHECK_MS, START + LIMIT_RECHECK_MS], 'woken at once by the change of view');
    assert.deepEqual(
      source.calls.filter(([, w]) => w === 0).map(([q]) => q),
      ['b'],
      'then reads the queue it serves',
    );
    stop.abort();
    mock.timers.tick(LIMIT_RECHECK_MS);
    await running;
  });

  it('reports the queues whose receives came back full lately as busy', async () => {
    const { source, receiver, stop } = setup(new Set(['a', 'b']));
    source.respond = (q, waitSec) =>
      q === 'b' && waitSec === 0 ? Array.from({ length: 10 }, () => message()) : waitSec > 0 ? new Promise(() => {}) : [];
    const got = await receiver.next(stop.signal);
    assert.equal(got?.queue.name, 'b');
    assert.deepEqual(
      receiver.busyQueues(8_000).map((q) => q.name),
      ['b'],
    );
    mock.timers.tick(9_000);
    assert.deepEqual(receiver.busyQueues(8_000), [], 'busy only lately');
    stop.abort();
  });
});
