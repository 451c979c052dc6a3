// IdleLoops: the idle state of a route (its modes, the loops that wait, the polls, the ready set and its release
// at a stop), through its own API over a FakeSource on a fake clock.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import type { HeldBatch } from '../../../src/receive/held-batch.ts';
import { IdleLoops } from '../../../src/receive/idle-loops.ts';
import { QueueHealth } from '../../../src/receive/queue-health.ts';
import { QueueSlots } from '../../../src/receive/queue-limits.ts';
import { Receiver } from '../../../src/receive/receiver.ts';
import type { ResolvedQueue } from '../../../src/core/queue.ts';
import { FakeSource, message, queue, recordingLogger } from '../../support/factories.ts';

const START = 1_000_000;
const POLL_SEC = 20;

/** What hold() made: one lease per batch an idle poll returned, and the releases called for each. */
class Holds {
  readonly made: { queue: string; messages: Message[]; released: number }[] = [];
  readonly hold = (q: ResolvedQueue, messages: Message[]): HeldBatch<number> => {
    const made = { queue: q.name, messages, released: 0 };
    this.made.push(made);
    return {
      lease: this.made.length,
      release: async () => void made.released++,
    };
  };
}

/** IdleLoops over `names` (strict order, batches of 10, no --sleep), their FakeSource on the fake clock. */
function setup(names: readonly string[] = ['a', 'b'], readyBound = 2) {
  const source = new FakeSource();
  source.now = () => Date.now();
  const { logger, lines } = recordingLogger();
  const holds = new Holds();
  const queues = names.map((n) => queue(n));
  const deps = { source, logger, random: () => 0.5, now: () => Date.now() };
  const idle = new IdleLoops<number>(
    {
      ...deps,
      hold: holds.hold,
      queues: () => queues,
      indexOf: (q) => queues.findIndex((each) => each.name === q.name),
      list: () => ({ mode: 'strict', queues: queues.map((q) => ({ ref: q.name, weight: q.weight })) }),
      visibilityOf: () => 30,
      batchSize: 10,
      pollForSec: POLL_SEC,
      sleepSec: 0,
      health: new QueueHealth(queues, deps),
      slots: new QueueSlots(
        queues.map(() => undefined),
        1,
        Date.now(),
      ),
    },
    { readyBound },
  );
  return { source, lines, holds, idle, stop: new AbortController() };
}

/** Lets promise callbacks and anything they chain run (setImmediate is not faked). */
const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

/** The long polls sent so far, by queue name. */
const polls = (source: FakeSource) => source.receives.filter((r) => r.waitSec > 0).map((r) => r.queue);

/** Every mode change logged, as [from, to]. */
const modes = (lines: readonly { msg: string; [k: string]: unknown }[]) =>
  lines.filter((l) => l.msg === 'idle state changes mode').map((l) => [l['from'], l['to']]);

describe('IdleLoops', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  it('sends no poll while starting; start() moves it to polling, the stop to stopping, the drain to drained, each change logged once', async () => {
    const { source, lines, idle, stop } = setup();
    idle.poll();
    await flush();
    assert.equal(idle.started, false);
    assert.deepEqual(polls(source), [], 'starting: the start-up passes read the queues, no poll is sent');
    idle.start(stop.signal);
    idle.start(stop.signal);
    idle.poll();
    await flush();
    assert.equal(idle.started, true);
    assert.deepEqual(polls(source), ['a', 'b'], 'polling: one long poll per queue');
    stop.abort();
    idle.poll();
    mock.timers.tick(POLL_SEC * 1000);
    await idle.drain();
    assert.deepEqual(polls(source), ['a', 'b'], 'stopping: no poll is sent');
    assert.deepEqual(modes(lines), [
      ['starting', 'polling'],
      ['polling', 'stopping'],
      ['stopping', 'drained'],
    ]);
    assert.ok(
      lines.filter((l) => l.msg === 'idle state changes mode').every((l) => l.level === 20),
      'at debug level',
    );
  });

  it('a waiting loop is handed what a poll returns, under the lease made at its answer', async () => {
    const { source, holds, idle, stop } = setup();
    const waited = idle.wait(stop.signal);
    await flush();
    assert.equal(idle.members, 1);
    const m = message();
    source.push('b', m);
    const end = await waited;
    assert.equal(end.kind, 'received');
    assert.ok(end.kind === 'received');
    assert.equal(end.received.queue.name, 'b');
    assert.deepEqual(end.received.messages, [m]);
    assert.equal(end.received.lease, 1, 'leased from its answer on (hold)');
    assert.deepEqual(
      holds.made.map((h) => [h.queue, h.released]),
      [['b', 0]],
    );
    assert.equal(idle.members, 0);
    stop.abort();
    mock.timers.tick(POLL_SEC * 1000);
    await idle.drain();
    assert.equal(holds.made[0]!.released, 0, 'a batch a loop took is the loop’s: the stop does not release it');
  });

  it('a loop whose stop comes while it waits goes back to its loop with nothing; an aborted stop waits not at all', async () => {
    const { idle, stop } = setup();
    const waited = idle.wait(stop.signal);
    await flush();
    stop.abort();
    assert.deepEqual(await waited, { kind: 'now' });
    assert.equal(idle.members, 0);
    assert.deepEqual(await idle.wait(stop.signal), { kind: 'now' });
    mock.timers.tick(POLL_SEC * 1000);
    await idle.drain();
  });

  it('what a poll returns while no loop waits waits in the ready set, and a pass that reaches its queue takes it', async () => {
    const { source, idle, stop } = setup();
    idle.start(stop.signal);
    idle.poll();
    await flush();
    const m = message();
    source.push('a', m);
    await flush();
    assert.equal(idle.waiting(0), true);
    assert.equal(idle.waiting(1), false);
    const got = idle.take(0);
    assert.deepEqual([got.queue.name, got.messages, got.lease], ['a', [m], 1]);
    assert.equal(idle.waiting(0), false);
    await flush();
    assert.deepEqual(polls(source), ['a', 'b', 'a'], 'taken: the queue is polled again');
    stop.abort();
    mock.timers.tick(POLL_SEC * 1000);
    await idle.drain();
  });

  it('at the stop, a waiting batch is released once; what a poll returns after it is released at once, and the drain waits for it', async () => {
    const { source, holds, idle, stop } = setup();
    idle.start(stop.signal);
    idle.poll();
    await flush();
    source.push('a', message());
    await flush();
    assert.equal(idle.waiting(0), true);
    stop.abort();
    assert.equal(idle.waiting(0), false, 'the stop empties the ready set');
    source.push('b', message());
    await idle.drain();
    assert.deepEqual(
      holds.made.map((h) => [h.queue, h.released]),
      [
        ['a', 1],
        ['b', 1],
      ],
    );
  });

  it('a queue a loop gathers a batch of gets no poll until the gathering ends', async () => {
    const { source, idle, stop } = setup();
    idle.gathering(0, true);
    idle.gathering(0, true);
    idle.start(stop.signal);
    idle.poll();
    await flush();
    assert.deepEqual(polls(source), ['b']);
    idle.gathering(0, false);
    await flush();
    assert.deepEqual(polls(source), ['b'], 'one loop still gathers');
    idle.gathering(0, false);
    await flush();
    assert.deepEqual(polls(source), ['b', 'a']);
    stop.abort();
    mock.timers.tick(POLL_SEC * 1000);
    await idle.drain();
  });

  it('a batch waiting while its queue object is replaced (Receiver.setQueues, a weight changed) is released at the stop, and its queue is polled again', async () => {
    const source = new FakeSource();
    source.now = () => Date.now();
    const holds = new Holds();
    const receiver = new Receiver<number>(
      {
        queues: [queue('a')],
        orderMode: 'weighted',
        batchSize: 10,
        pollForSec: POLL_SEC,
        sleepSec: 0,
        concurrency: 1,
        pollsFromStart: true,
      },
      { source, logger: recordingLogger().logger, random: () => 0.5, now: () => Date.now(), hold: holds.hold },
    );
    const stop = new AbortController();
    // The loop's first pass starts the polls, finds a empty and waits: a's poll hands it the first batch.
    const first = receiver.next(stop.signal);
    await flush();
    source.push('a', message());
    assert.equal((await first)?.lease, 1);
    // While that loop is busy, a's next poll answers: its batch waits in the ready set.
    await flush();
    source.push('a', message());
    await flush();
    assert.deepEqual(polls(source), ['a', 'a']);
    assert.deepEqual(
      holds.made.map((h) => h.released),
      [0, 0],
      'both leased at their answer, none released',
    );
    receiver.setQueues([queue('a', { weight: 5 })], [undefined]);
    stop.abort();
    await receiver.drain();
    assert.deepEqual(
      holds.made.map((h) => h.released),
      [0, 1],
      'the waiting batch is released once at the stop; the one its loop took is not',
    );
    // Past the stop, a new one: the queue left the ready set by its name, so it is polled again.
    const again = new AbortController();
    const pass = receiver.next(again.signal);
    await flush();
    assert.deepEqual(polls(source), ['a', 'a', 'a'], 'a is polled again, not left counted as waiting');
    again.abort();
    await pass;
    mock.timers.tick(POLL_SEC * 1000);
    await receiver.drain();
  });
});
