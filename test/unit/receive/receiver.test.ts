import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { AwsCallError, type ErrorKind } from '../../../src/core/errors.ts';
import { Receiver, type Received, type ReceiverOptions } from '../../../src/receive/receiver.ts';
import type { EntryFailure, MessageSource, ReceiveOptions, ResolvedQueue } from '../../../src/core/queue.ts';
import { message, queue, recordingLogger, type LogLine } from '../../support/factories.ts';

const START = 1_000_000;
/** random() just below 1: each back-off is its ceiling minus 1 ms. */
const highest = () => 1 - 1e-9;

const FAILED_MSG = 'ReceiveMessage failed; skipping this queue while backing off';
const TIMEOUT_MSG = 'ReceiveMessage got no answer before its deadline; skipping this queue while backing off';
const RECOVERED_MSG = 'ReceiveMessage works again';

interface ReceiveCall {
  /** Milliseconds since the test started (fake clock). */
  readonly at: number;
  readonly queue: string;
  readonly waitSec: number;
  readonly max: number;
  readonly visibilityTimeoutSec: number | undefined;
  readonly signal: AbortSignal | undefined;
}

/** A MessageSource whose receives answer as `respond` says (empty by default) and are all recorded. */
class ReceiveSource implements MessageSource {
  readonly calls: ReceiveCall[] = [];
  respond: (call: ReceiveCall) => Promise<Message[]> | Message[] = () => [];

  async receive(q: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    const call = {
      at: Date.now() - START,
      queue: q.name,
      waitSec: options.waitSec,
      max: options.max,
      visibilityTimeoutSec: options.visibilityTimeoutSec,
      signal,
    };
    this.calls.push(call);
    return this.respond(call);
  }

  async deleteBatch(): Promise<EntryFailure[]> {
    throw new Error('the receiver never deletes');
  }

  async changeVisibility(): Promise<EntryFailure[]> {
    throw new Error('the receiver never changes visibility');
  }

  /** [queue, waitSec] of every call so far. */
  trail(): [string, number][] {
    return this.calls.map((c) => [c.queue, c.waitSec]);
  }
}

/** Receives whose answers the test hands out, to keep calls in flight. */
class PendingReceives {
  readonly #pending: { call: ReceiveCall; resolve: (m: Message[]) => void; reject: (e: unknown) => void }[] = [];
  readonly respond = (call: ReceiveCall): Promise<Message[]> =>
    new Promise((resolve, reject) => {
      this.#pending.push({ call, resolve, reject });
    });
  get count(): number {
    return this.#pending.length;
  }
  /** Answers the oldest pending receive (of `queueName` if given). */
  answer(result: Message[] | Error, queueName?: string): void {
    const i = this.#pending.findIndex((p) => queueName === undefined || p.call.queue === queueName);
    const [p] = this.#pending.splice(i, 1);
    assert.ok(i >= 0 && p, `a pending receive${queueName ? ` on ${queueName}` : ''}`);
    if (result instanceof Error) p.reject(result);
    else p.resolve(result);
  }
}

function callError(kind: ErrorKind, code: string): AwsCallError {
  const status = kind === 'fatal' ? 400 : 500;
  return new AwsCallError('ReceiveMessage', { kind, code, message: `${code} happened`, status });
}

const transient = () => callError('retryable', 'InternalError');
const missing = () => callError('fatal', 'QueueDoesNotExist');

function options(overrides: Partial<ReceiverOptions> = {}): ReceiverOptions {
  return {
    queues: [queue('a'), queue('b'), queue('c')],
    orderMode: 'strict',
    batchSize: 10,
    pollForSec: 20,
    sleepSec: 0,
    ...overrides,
  };
}

function setup(
  overrides: Partial<ReceiverOptions> = {},
  random: () => number = highest,
  extra: Pick<ConstructorParameters<typeof Receiver>[1], 'paused' | 'placeWanted' | 'hold'> = {},
) {
  const source = new ReceiveSource();
  const { logger, lines } = recordingLogger();
  const receiver = new Receiver(options(overrides), { source, logger, random, now: () => Date.now(), ...extra });
  return { source, lines, receiver, stop: new AbortController() };
}

/** Lets promise callbacks and anything they chain run (setImmediate is not faked). */
const flush = () => new Promise((r) => setImmediate(r));

async function advance(ms: number, stepMs = ms): Promise<void> {
  for (let done = 0; done < ms; done += stepMs) {
    mock.timers.tick(Math.min(stepMs, ms - done));
    await flush();
  }
}

/** Whether a promise has settled, without waiting for it. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await flush();
  return done;
}

/** Calls next() over and over, as a dispatcher loop does, until `stop` aborts. */
function loop(receiver: Receiver, stop: AbortController) {
  const got: Received[] = [];
  const done = (async () => {
    while (!stop.signal.aborted) {
      const r = await receiver.next(stop.signal);
      if (r) {
        got.push(r);
        // A dispatcher loop would invoke now; yielding keeps a busy receiver from starving the test.
        await flush();
      }
    }
  })();
  return { got, done };
}

function failureLines(lines: LogLine[]): LogLine[] {
  return lines.filter((l) => l.msg === FAILED_MSG || l.msg === TIMEOUT_MSG);
}

describe('Receiver', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  describe('order', () => {
    it('strict: short receives on every queue in order, then one long poll per queue', async () => {
      const { source, receiver, stop } = setup({ batchSize: 7, visibilityTimeoutSec: 45 });
      const pass = receiver.next(stop.signal);
      await flush();
      stop.abort();
      assert.equal(await pass, undefined);
      assert.deepEqual(source.trail(), [
        ['a', 0],
        ['b', 0],
        ['c', 0],
        ['a', 20],
        ['b', 20],
        ['c', 20],
      ]);
      assert.ok(
        source.calls.every((c) => c.max === 7 && c.visibilityTimeoutSec === 45),
        'batch size and visibility override passed on every receive',
      );
    });

    it("without --visibility-timeout every receive still states one: the queue's, as visibilityOf has it now, returned with the messages", async () => {
      const timeouts = new Map([
        ['a', 60],
        ['b', 5],
      ]);
      const { source, receiver, stop } = setup({ visibilityOf: (q) => timeouts.get(q.name) ?? 30 });
      const m = message();
      source.respond = (call) => (call.queue === 'b' ? [m] : []);
      const got = await receiver.next(stop.signal);
      assert.deepEqual(
        source.calls.map((c) => [c.queue, c.visibilityTimeoutSec]),
        [
          ['a', 60],
          ['b', 5],
        ],
      );
      assert.equal(got?.visibilityTimeoutSec, 5, 'the lease assumes what the receive stated');
      const plain = setup();
      const pass = plain.receiver.next(plain.stop.signal);
      await flush();
      plain.stop.abort();
      await pass;
      assert.ok(
        plain.source.calls.every((c) => c.visibilityTimeoutSec === 30),
        "with neither, the queue's timeout read at start-up is stated",
      );
    });

    it('strict: stops at the first queue that has messages and returns them with their queue', async () => {
      const { source, receiver, stop } = setup();
      const batch = [message(), message()];
      source.respond = (call) => (call.queue === 'b' ? batch : []);
      const got = await receiver.next(stop.signal);
      assert.equal(got?.queue.name, 'b');
      assert.equal(got?.messages, batch);
      assert.deepEqual(source.trail(), [
        ['a', 0],
        ['b', 0],
      ]);
    });

    it('a lower queue is read again only after a higher one was found empty in the same pass', async () => {
      const { source, receiver, stop } = setup();
      source.respond = (call) => (call.queue === 'a' || call.queue === 'c' ? [message()] : []);
      for (let i = 0; i < 3; i++) assert.equal((await receiver.next(stop.signal))?.queue.name, 'a');
      assert.deepEqual(
        source.calls.map((c) => c.queue),
        ['a', 'a', 'a'],
      );
    });

    it('returns what the long poll brought', async () => {
      const { source, receiver, stop } = setup();
      const batch = [message()];
      source.respond = (call) => (call.waitSec > 0 ? batch : []);
      const got = await receiver.next(stop.signal);
      assert.deepEqual([got?.queue.name, got?.messages], ['a', batch]);
    });

    it('weighted: the drawn order decides which queue is read first and which one is long-polled', async () => {
      const weighted = [queue('light', { weight: 1 }), queue('heavy', { weight: 3 })];
      for (const [random, first, second] of [
        [highest, 'heavy', 'light'],
        [() => 0, 'light', 'heavy'],
      ] as const) {
        const run = setup({ queues: weighted, orderMode: 'weighted' }, random);
        const pass = run.receiver.next(run.stop.signal);
        await flush();
        run.stop.abort();
        await pass;
        // Then both are long-polled: every queue has its poll, whatever the order.
        assert.deepEqual(run.source.trail(), [
          [first, 0],
          [second, 0],
          ['light', 20],
          ['heavy', 20],
        ]);
      }
    });

    it('without a long poll, sleeps --sleep seconds after an empty pass', async () => {
      const { source, receiver, stop } = setup({ pollForSec: 0, sleepSec: 5 });
      const pass = receiver.next(stop.signal);
      await flush();
      assert.deepEqual(source.trail(), [
        ['a', 0],
        ['b', 0],
        ['c', 0],
      ]);
      await advance(4_999);
      assert.equal(await settled(pass), false);
      await advance(1);
      assert.equal(await settled(pass), true);
      assert.equal(await pass, undefined);
    });

    it('after an empty long poll, the queue rests --sleep seconds before its next one; the loop keeps waiting', async () => {
      const { source, receiver, stop } = setup({ queues: [queue('a')], sleepSec: 3 });
      const pending = new PendingReceives();
      source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : []);
      const pass = receiver.next(stop.signal);
      await flush();
      await advance(20_000);
      pending.answer([]);
      await flush();
      await advance(2_999);
      assert.equal(pending.count, 0);
      await advance(1);
      assert.equal(pending.count, 1);
      assert.equal(await settled(pass), false);
      stop.abort();
      pending.answer([]);
      assert.equal(await pass, undefined);
    });
  });

  describe('long-poll spreading', () => {
    it('idle loops keep one long poll per queue between them, and the loop that waited longest takes what one returns', async () => {
      const { source, receiver, stop } = setup();
      const pending = new PendingReceives();
      source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : []);
      const passes: Promise<Received | undefined>[] = [];
      for (let i = 0; i < 5; i++) {
        passes.push(receiver.next(stop.signal));
        await flush();
      }
      // Before issue 24 each idle loop sent its own: a, b, c, a, b.
      assert.deepEqual(
        source.calls.filter((c) => c.waitSec > 0).map((c) => c.queue),
        ['a', 'b', 'c'],
      );
      assert.equal(receiver.idleLoops, 5);
      // The poll on a ends empty (at once: a second after it was sent at the earliest, a is polled again), and
      // every loop keeps waiting.
      pending.answer([], 'a');
      await flush();
      assert.equal(pending.count, 2);
      await advance(1_000);
      assert.equal(source.calls.at(-1)?.queue, 'a');
      assert.equal(source.calls.at(-1)?.waitSec, 20);
      assert.equal(receiver.idleLoops, 5);
      assert.deepEqual(await Promise.all(passes.map((p) => settled(p))), [false, false, false, false, false]);
      // A message on c goes to the first loop that started to wait.
      const batch = [message()];
      const answeredAt = Date.now();
      pending.answer(batch, 'c');
      // With the time the poll answered: the batch's window and age count from there, however long it waits.
      assert.deepEqual(await passes[0], { queue: queue('c'), messages: batch, visibilityTimeoutSec: 30, receivedAt: answeredAt });
      assert.equal(receiver.idleLoops, 4);
      await flush(); // c is polled again once the taker's Invoke could go out
      assert.equal(source.calls.at(-1)?.queue, 'c');
      stop.abort();
      await flush();
      assert.equal(receiver.idleLoops, 0, 'every loop leaves at once: no poll needs one');
      assert.deepEqual(await Promise.all(passes.slice(1)), [undefined, undefined, undefined, undefined]);
      const drained = receiver.drain();
      assert.equal(await settled(drained), false, 'the drain waits for the polls in flight');
      while (pending.count > 0) pending.answer([]);
      await drained;
      assert.equal(source.calls.filter((c) => c.waitSec > 0).length, 5, 'no poll after the stop');
    });

    it('a queue backing off gets no long poll', async () => {
      const { source, receiver, stop } = setup();
      source.respond = (call) => {
        if (call.queue === 'a') throw transient();
        return [];
      };
      const pass = receiver.next(stop.signal);
      await flush();
      stop.abort();
      await pass;
      assert.deepEqual(source.trail(), [
        ['a', 0],
        ['b', 0],
        ['c', 0],
        ['b', 20],
        ['c', 20],
      ]);
    });
  });

  describe('queue health', () => {
    it('skips a failing queue during its back-off while the others are served', async () => {
      const { source, receiver, stop } = setup({ pollForSec: 0 });
      source.respond = (call) => {
        if (call.queue === 'a') throw transient();
        return call.queue === 'b' ? [message()] : [];
      };
      assert.equal((await receiver.next(stop.signal))?.queue.name, 'b');
      assert.equal(receiver.anyHealthy, true);
      await advance(50);
      assert.equal((await receiver.next(stop.signal))?.queue.name, 'b');
      await advance(48); // 98 ms: a backs off for 99 ms
      assert.equal((await receiver.next(stop.signal))?.queue.name, 'b');
      assert.deepEqual(
        source.calls.map((c) => c.queue),
        ['a', 'b', 'b', 'b'],
        'a is skipped, not tried, while backing off',
      );
      await advance(1);
      assert.equal((await receiver.next(stop.signal))?.queue.name, 'b');
      assert.deepEqual(
        source.calls.slice(4).map((c) => c.queue),
        ['a', 'b'],
        'a is tried again once its back-off is over',
      );
    });

    it('when every queue is backing off, waits for the first one to recover instead of sleeping or polling', async () => {
      const { source, receiver, stop, lines } = setup({ queues: [queue('a'), queue('b')], sleepSec: 60 });
      let broken = true;
      source.respond = (call) => {
        if (broken) throw call.queue === 'a' ? missing() : transient();
        return [message()];
      };
      assert.equal(await settled(receiver.next(stop.signal)), true, 'both failed: no long poll, no --sleep');
      assert.deepEqual(source.trail(), [
        ['a', 0],
        ['b', 0],
      ]);
      assert.equal(receiver.anyHealthy, false);
      const waiting = receiver.next(stop.signal);
      await advance(98);
      assert.equal(await settled(waiting), false, 'b backs off for 99 ms (transient); a for 999 ms (fatal)');
      await advance(1);
      assert.equal(await waiting, undefined, 'the wait ends without a receive');
      assert.equal(source.calls.length, 2);
      assert.equal(receiver.anyHealthy, true);
      broken = false;
      assert.equal((await receiver.next(stop.signal))?.queue.name, 'b', 'only b is due');
      assert.deepEqual(
        lines.filter((l) => l.msg === RECOVERED_MSG).map((l) => [l['queue'], l['outageMs'], l['failures']]),
        [['b', 99, 1]],
      );
    });

    it('transient failures back off with full jitter from 100 ms, capped at 1 s', async () => {
      const { source, receiver, stop } = setup({ queues: [queue('a')] });
      source.respond = () => {
        throw transient();
      };
      const running = loop(receiver, stop);
      await flush(); // the first receive fails at 0 ms, before the clock moves
      await advance(6_000, 1);
      assert.deepEqual(
        source.calls.map((c) => c.at),
        [0, 99, 298, 697, 1496, 2495, 3494, 4493, 5492],
      );
      stop.abort();
      await running.done;
    });

    it('a missing queue (fatal) backs off from 1 s up to 20 s', async () => {
      const { source, receiver, stop } = setup({ queues: [queue('gone')] });
      source.respond = () => {
        throw missing();
      };
      const running = loop(receiver, stop);
      await flush();
      await advance(95_000, 1_000);
      assert.deepEqual(
        source.calls.map((c) => c.at),
        // 999, 1999, 3999, 7999, 15999, then 19999 each: steps of 1 s land the clock on whole seconds.
        [0, 1_000, 3_000, 7_000, 15_000, 31_000, 51_000, 71_000, 91_000],
      );
      stop.abort();
      await running.done;
    });

    it('classifies raw errors too: an SDK QueueDoesNotExist is fatal, a 503 transient', async () => {
      const { source, receiver, stop, lines } = setup({ queues: [queue('gone'), queue('flaky')], pollForSec: 0 });
      source.respond = (call) => {
        throw call.queue === 'gone'
          ? Object.assign(new Error('The specified queue does not exist.'), {
              name: 'QueueDoesNotExist',
              $metadata: { httpStatusCode: 400 },
            })
          : Object.assign(new Error('unavailable'), { name: 'ServiceUnavailable', $metadata: { httpStatusCode: 503 } });
      };
      await receiver.next(stop.signal);
      assert.deepEqual(
        failureLines(lines).map((l) => [l['queue'], l.level, l['delayMs']]),
        [
          ['gone', 50, 999],
          ['flaky', 40, 99],
        ],
      );
    });

    it('logs failures at the 1st, 2nd, 4th, 8th and 16th attempt only, as warnings for transient ones', async () => {
      const { source, receiver, stop, lines } = setup({ queues: [queue('a')] });
      source.respond = () => {
        throw transient();
      };
      const running = loop(receiver, stop);
      await flush();
      await advance(20_000, 1);
      stop.abort();
      await running.done;
      assert.ok(source.calls.length >= 17, `${source.calls.length} failures`);
      const logged = failureLines(lines);
      assert.deepEqual(
        logged.map((l) => l['attempt']),
        [1, 2, 4, 8, 16],
      );
      assert.ok(logged.every((l) => l.level === 40 && l['queue'] === 'a'));
      assert.deepEqual(
        logged.map((l) => l['delayMs']),
        [99, 199, 799, 999, 999],
        'the back-off it chose, at each logged attempt',
      );
      const err = logged[0]?.['err'] as Record<string, unknown>;
      assert.deepEqual([err['code'], err['message']], ['InternalError', 'InternalError happened']);
    });

    it('logs fatal failures as errors', async () => {
      const { source, receiver, stop, lines } = setup({ queues: [queue('gone')] });
      source.respond = () => {
        throw missing();
      };
      await receiver.next(stop.signal);
      const logged = failureLines(lines);
      assert.deepEqual(
        logged.map((l) => [l.level, l.msg, l['attempt'], l['delayMs']]),
        [[50, FAILED_MSG, 1, 999]],
      );
    });

    it('says when a receive got no answer before its deadline', async () => {
      const { source, receiver, stop, lines } = setup({ queues: [queue('a')] });
      source.respond = () => {
        throw callError('retryable', 'TimeoutError');
      };
      await receiver.next(stop.signal);
      assert.deepEqual(
        failureLines(lines).map((l) => [l.level, l.msg]),
        [[40, TIMEOUT_MSG]],
      );
    });

    it('logs "works again" once, with the failures and the outage length since the first failure', async () => {
      const { source, receiver, stop, lines } = setup({ queues: [queue('a')], pollForSec: 0 });
      let failing = 3;
      source.respond = () => {
        if (failing-- > 0) throw transient();
        return [message()];
      };
      const running = loop(receiver, stop);
      await flush();
      await advance(2_000, 1);
      stop.abort();
      await running.done;
      // Failures at 0, 99 and 298 ms; the receive at 697 ms works: the outage began with the first failure.
      const recovered = lines.filter((l) => l.msg === RECOVERED_MSG);
      assert.deepEqual(
        recovered.map((l) => [l.level, l['queue'], l['failures'], l['outageMs']]),
        [[30, 'a', 3, 697]],
      );
      assert.ok(running.got.length > 1, 'later receives work without another "works again" line');
    });

    it('a failure after recovery backs off from the start again', async () => {
      const { source, receiver, stop, lines } = setup({ queues: [queue('a')], pollForSec: 0 });
      const script = ['fail', 'fail', 'ok', 'fail'];
      source.respond = () => {
        if (script.shift() === 'fail') throw transient();
        return [message()];
      };
      await receiver.next(stop.signal); // fails at 0 (99 ms)
      await advance(99);
      await receiver.next(stop.signal); // fails at 99 (199 ms)
      await advance(199);
      assert.equal((await receiver.next(stop.signal))?.queue.name, 'a');
      await receiver.next(stop.signal); // fails at 298 ms: attempt 1 again
      assert.deepEqual(
        failureLines(lines).map((l) => [l['attempt'], l['delayMs']]),
        [
          [1, 99],
          [2, 199],
          [1, 99],
        ],
      );
      assert.equal(receiver.anyHealthy, false);
      await advance(99);
      assert.equal(receiver.anyHealthy, true);
    });

    it('loops failing on one queue at the same moment count as one failure', async () => {
      const { source, receiver, stop, lines } = setup({ queues: [queue('a'), queue('b')], pollForSec: 0 });
      const pending = new PendingReceives();
      source.respond = (call) => (call.queue === 'a' ? pending.respond(call) : []);
      const passes = [receiver.next(stop.signal), receiver.next(stop.signal), receiver.next(stop.signal)];
      await flush();
      assert.equal(pending.count, 3);
      for (let i = 0; i < 3; i++) pending.answer(transient());
      await Promise.all(passes);
      assert.deepEqual(
        failureLines(lines).map((l) => l['attempt']),
        [1],
        'one failure, one line',
      );
      await advance(99);
      assert.equal(receiver.anyHealthy, true, 'the back-off is the first one (99 ms), not the third');
    });

    it('a long poll that fails is sent again after the back-off, without --sleep on top; the loop keeps waiting', async () => {
      const { source, receiver, stop } = setup({ queues: [queue('a')], sleepSec: 60 });
      source.respond = (call) => {
        if (call.waitSec > 0) throw transient();
        return [];
      };
      const pass = receiver.next(stop.signal);
      await flush();
      assert.deepEqual(source.trail(), [
        ['a', 0],
        ['a', 20],
      ]);
      assert.equal(receiver.anyHealthy, false);
      await advance(1_000, 100);
      assert.equal(source.trail().at(-1)?.[1], 20, 'polled again within the back-off cap (1 s), not after --sleep');
      assert.ok(source.calls.length >= 3);
      assert.equal(await settled(pass), false);
      stop.abort();
      await pass;
    });
  });

  describe('idle loops (issue 24)', () => {
    /** `n` loops calling next() once each; long polls stay pending, short receives answer as `short` says. */
    async function idleLoops(n: number, receiver: Receiver, stop: AbortController) {
      const passes: Promise<Received | undefined>[] = [];
      for (let i = 0; i < n; i++) {
        passes.push(receiver.next(stop.signal));
        await flush();
      }
      return passes;
    }

    it('with more queues than polls, a pass reads at most ten queues without a poll, and the turns wait a share of --poll-for (issue 42)', async () => {
      // 30 queues, 2 polls: 28 queues wait for their turn (cold). A sweep of all 28 in every pass cost 86,446
      // receives for 200 messages with 1,000 queues on 100 polls.
      const queues = Array.from({ length: 30 }, (_, i) => queue(`q${String(i).padStart(2, '0')}`));
      const { source, receiver, stop } = setup({ queues, pollShare: { set: () => {}, max: () => 2 } });
      const pending = new PendingReceives();
      source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : []);
      const first = receiver.next(stop.signal);
      await flush();
      await flush();
      assert.equal(source.calls.filter((c) => c.waitSec === 0).length, 30, 'the start-up pass reads every queue once');
      assert.equal(pending.count, 2, 'two polls in flight');
      // 20 s * 2 polls / 30 queues: a turn of 1 s (at least one), so every queue's turn comes round within --poll-for.
      assert.deepEqual(
        source.calls.filter((c) => c.waitSec > 0).map((c) => c.waitSec),
        [1, 1],
      );
      const before = source.calls.length;
      const second = receiver.next(stop.signal);
      await flush();
      await flush();
      const read = source.calls.slice(before).filter((c) => c.waitSec === 0);
      assert.equal(read.length, 10, `a later pass read ${read.length} of the 28 queues without a poll`);
      assert.deepEqual(
        read.map((c) => c.queue),
        queues
          .slice(0, 12)
          .map((q) => q.name)
          .filter((n) => !source.calls.slice(30, before).some((c) => c.queue === n))
          .slice(0, 10),
        'the first ten in the pass order (strict) without a poll',
      );
      stop.abort();
      while (pending.count > 0) pending.answer([]);
      assert.equal(await first, undefined);
      assert.equal(await second, undefined);
    });

    it('a full poll sends two spare loops back to read the queue, and each full short receive two more', async () => {
      const { source, receiver, stop } = setup({ queues: [queue('a')], batchSize: 1 });
      const pending = new PendingReceives();
      let backlog = 0;
      source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : backlog-- > 0 ? [message()] : []);
      // Eight loops that each keep calling next() until they get a batch, and then hold it (a long invocation).
      const got: Received[] = [];
      const loops = Array.from({ length: 8 }, async () => {
        while (!stop.signal.aborted) {
          const r = await receiver.next(stop.signal);
          if (r) return got.push(r);
        }
      });
      await flush();
      assert.deepEqual([receiver.idleLoops, pending.count], [8, 1], 'one poll for eight idle loops');
      backlog = 3;
      pending.answer([message()]);
      for (let i = 0; i < 5; i++) await flush();
      // The poll's message went to the first loop; two spares woke, each took one of the backlog with a full
      // short receive and woke two more; of those four, one took the last message and three wait again.
      assert.equal(got.length, 4, 'the poll and the whole backlog taken at once');
      assert.deepEqual([receiver.idleLoops, pending.count], [4, 1], 'the rest idle again, with the poll in flight again');
      stop.abort();
      while (pending.count > 0) pending.answer([]);
      await Promise.all(loops);
    });

    it('tells its loop when it starts to wait for a message (liveness: no deadline of its own)', async () => {
      const { source, receiver, stop } = setup({ queues: [queue('a')] });
      const pending = new PendingReceives();
      source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : []);
      let idle = 0;
      const pass = receiver.next(stop.signal, () => idle++);
      await flush();
      assert.equal(idle, 1);
      stop.abort();
      pending.answer([]);
      assert.equal(await pass, undefined);
    });

    it('sends no poll while the function is paused, and polls within a second of the pause ending', async () => {
      let paused = true;
      const { source, receiver, stop } = setup({ queues: [queue('a')] }, highest, { paused: () => paused });
      const pending = new PendingReceives();
      source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : []);
      const pass = receiver.next(stop.signal);
      await flush();
      assert.equal(pending.count, 0, 'paused: no poll');
      await advance(5_000, 500);
      assert.equal(pending.count, 0);
      paused = false;
      await advance(1_000);
      assert.equal(pending.count, 1, 'the recheck found the pause over');
      stop.abort();
      pending.answer([]);
      await pass;
    });

    it('yieldIdle(): an idle loop goes back to its loop (to give up its adaptive place); a poll needs none', async () => {
      let wanted = false;
      const { source, receiver, stop } = setup({ queues: [queue('a')] }, highest, { placeWanted: () => wanted });
      const pending = new PendingReceives();
      source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : []);
      const passes = await idleLoops(3, receiver, stop);
      receiver.yieldIdle();
      await flush();
      assert.deepEqual(await Promise.all(passes.map((p) => settled(p))), [true, false, false], 'the one that waited longest went back');
      receiver.yieldIdle();
      await flush();
      assert.equal(await settled(passes[1]!), true, 'so does the next: the poll in flight needs no loop');
      // A poll that ends empty while a place is wanted sends one more back.
      wanted = true;
      pending.answer([]);
      await flush();
      assert.equal(await passes[2], undefined);
      assert.equal(receiver.idleLoops, 0);
      assert.equal(pending.count, 0, 'the queue rests a second after its empty poll');
      stop.abort();
      await advance(1_000);
      assert.equal(pending.count, 0, 'no poll after the stop');
    });
  });

  describe('stop', () => {
    it('never aborts a long poll in flight: what it returns after the stop is released at once, and the drain waits for it', async () => {
      const released: Message[] = [];
      const { source, receiver, stop } = setup({ queues: [queue('a')], sleepSec: 60 }, highest, {
        hold: (_q, messages) => ({ lease: 'lease', release: async () => void released.push(...messages) }),
      });
      const pending = new PendingReceives();
      source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : []);
      const pass = receiver.next(stop.signal);
      await flush();
      assert.equal(pending.count, 1);
      assert.ok(
        source.calls.every((c) => c.signal === undefined),
        'no signal is handed to a receive',
      );
      stop.abort();
      assert.equal(await pass, undefined, 'the loop leaves at once: the poll needs none');
      const drained = receiver.drain();
      assert.equal(await settled(drained), false, 'the long poll is still open');
      const batch = [message()];
      pending.answer(batch);
      await drained;
      assert.deepEqual(released, batch, 'made visible again at once, not left until its visibility timeout');
    });

    it('never aborts a short receive either, but starts no new one after it', async () => {
      const { source, receiver, stop } = setup();
      const pending = new PendingReceives();
      source.respond = (call) => (call.queue === 'a' && call.waitSec === 0 ? pending.respond(call) : []);
      const pass = receiver.next(stop.signal);
      await flush();
      stop.abort();
      pending.answer([]);
      assert.equal(await pass, undefined);
      assert.deepEqual(source.trail(), [['a', 0]], 'b, c and the long poll were not started');

      const { source: source2, receiver: receiver2, stop: stop2 } = setup();
      const pending2 = new PendingReceives();
      source2.respond = (call) => pending2.respond(call);
      const pass2 = receiver2.next(stop2.signal);
      await flush();
      stop2.abort();
      const batch = [message()];
      pending2.answer(batch);
      assert.equal((await pass2)?.messages, batch, 'what a short receive in flight brings is returned');
    });

    it('starts no receive at all once stopped', async () => {
      const { source, receiver, stop } = setup();
      stop.abort();
      assert.equal(await receiver.next(stop.signal), undefined);
      assert.deepEqual(source.calls, []);
    });

    it('stopping after the short receives prevents the long poll', async () => {
      const { source, receiver, stop } = setup();
      source.respond = (call) => {
        if (call.queue === 'c') stop.abort();
        return [];
      };
      assert.equal(await receiver.next(stop.signal), undefined);
      assert.deepEqual(source.trail(), [
        ['a', 0],
        ['b', 0],
        ['c', 0],
      ]);
    });

    it('cuts the --sleep after an empty pass', async () => {
      const { receiver, stop } = setup({ pollForSec: 0, sleepSec: 600 });
      const pass = receiver.next(stop.signal);
      await advance(1_000);
      assert.equal(await settled(pass), false);
      stop.abort();
      assert.equal(await settled(pass), true, 'without any timer firing');
    });

    it('cuts the wait for a queue to come out of its back-off', async () => {
      const { source, receiver, stop } = setup({ queues: [queue('gone')] });
      source.respond = () => {
        throw missing();
      };
      await receiver.next(stop.signal);
      const waiting = receiver.next(stop.signal);
      await advance(10);
      assert.equal(await settled(waiting), false, 'waiting 999 ms for the back-off');
      stop.abort();
      assert.equal(await settled(waiting), true);
      assert.equal(source.calls.length, 1);
    });
  });

  describe('more(): gathering a batch over a window', () => {
    it('asks at most 10 per receive, also for a batch size above 10', async () => {
      const { source, receiver, stop } = setup({ batchSize: 500, queues: [queue('a')] });
      source.respond = () => [message()];
      assert.equal((await receiver.next(stop.signal))?.messages.length, 1);
      assert.deepEqual(
        source.calls.map((c) => c.max),
        [10],
      );
    });

    it('receives from the queue with its visibility timeout; a failure backs the queue off and reads as undefined', async () => {
      const q = queue('a');
      const { source, lines, receiver, stop } = setup({ queues: [q, queue('b')], visibilityTimeoutSec: 45 });
      source.respond = () => [message(), message()];
      assert.equal((await receiver.more(q, 7, 3, stop.signal))?.length, 2);
      assert.deepEqual(
        source.calls.map((c) => [c.queue, c.max, c.waitSec, c.visibilityTimeoutSec]),
        [['a', 7, 3, 45]],
      );
      source.respond = () => {
        throw transient();
      };
      assert.equal(await receiver.more(q, 10, 3, stop.signal), undefined);
      assert.equal(failureLines(lines).length, 1);
      // While it backs off, neither more() nor next() sends a receive to it.
      assert.equal(await receiver.more(q, 10, 3, stop.signal), undefined);
      const pending = new PendingReceives();
      source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : []);
      const pass = receiver.next(stop.signal);
      await flush();
      assert.deepEqual(
        source.calls.slice(2).map((c) => c.queue),
        ['b', 'b'],
      );
      stop.abort();
      pending.answer([]);
      await pass;
    });
  });
});

describe('Receiver.quiet(): a drain releases only once no receive is on its way', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  it('resolves at once with no receive on its way, and only after the last open long poll has returned', async () => {
    const { source, receiver, stop } = setup({ queues: [queue('a')], pollForSec: 20 });
    assert.equal(await settled(receiver.quiet()), true, 'nothing on its way');
    const pending = new PendingReceives();
    source.respond = pending.respond;
    const { done } = loop(receiver, stop);
    await flush();
    // The short receive is on its way; answer it empty so the loop sends its long poll.
    pending.answer([]);
    await flush();
    assert.equal(pending.count, 1, 'a long poll is open');
    stop.abort();
    const quiet = receiver.quiet();
    assert.equal(await settled(quiet), false, 'the long poll open at the stop can still receive what a release hands back');
    pending.answer([message()]);
    await flush();
    assert.equal(await settled(quiet), true, 'quiet once it returned');
    await done;
  });
});

describe('Receiver: loops waiting for a queue slot (issue 20 item 4)', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  it('2,000 loops on one held slot cost 2,000 waiters however many rechecks pass, and one slot given back wakes one', async () => {
    const { source, receiver, stop } = setup({ queues: [queue('a')], pollForSec: 0, concurrency: 2_001, limits: [{ maxConcurrency: 1 }] });
    source.respond = () => [message()];
    const held = await receiver.next(stop.signal);
    assert.ok(held, 'one loop holds the only slot');
    let returns = 0;
    let received = 0;
    const loops = Array.from({ length: 2_000 }, async () => {
      while (!stop.signal.aborted) {
        const r = await receiver.next(stop.signal);
        if (r) {
          received++;
          return;
        }
        returns++;
      }
    });
    await flush();
    assert.equal(receiver.slotWaiters, 2_000);
    // Each loop looks again every LIMIT_RECHECK_MS (1 s): a recheck replaces its entry, it does not add one.
    for (let cycle = 0; cycle < 5; cycle++) {
      await advance(1_000);
      assert.equal(receiver.slotWaiters, 2_000, `after recheck ${cycle + 1}`);
    }
    assert.equal(returns, 5 * 2_000, 'every loop rechecked once a second');
    await advance(500);
    const before = returns;
    receiver.settled(held.queue);
    await flush();
    assert.equal(returns - before, 1, 'the slot given back woke one loop, not 2,000');
    assert.equal(received, 1, 'and that loop took the slot on its next look');
    assert.equal(receiver.slotWaiters, 1_999);
    stop.abort();
    await Promise.all(loops);
    assert.equal(receiver.slotWaiters, 0, 'a stop empties the line');
  });
});

describe('Receiver: the ready set (what polls return while no loop is free)', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  function held(released: Message[]) {
    return {
      hold: (_q: ResolvedQueue, messages: Message[]) => ({ lease: messages.length, release: async () => void released.push(...messages) }),
    };
  }

  it('the polls start with the first pass, which reads every queue once; the other loops read none: 1,000 queues cost 1,000 short receives and 1,000 polls, not 10,000', async () => {
    const queues = Array.from({ length: 1_000 }, (_, i) => queue(`q${i}`));
    const { source, receiver, stop } = setup({ queues, pollsFromStart: true });
    const pending = new PendingReceives();
    source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : []);
    const passes = Array.from({ length: 10 }, () => receiver.next(stop.signal));
    await flush();
    for (let i = 0; i < 5; i++) await flush();
    assert.equal(source.calls.filter((c) => c.waitSec === 0).length, 1_000, 'the first pass, in order');
    assert.equal(pending.count, 1_000, 'one poll per queue, for ten loops');
    assert.equal(receiver.idleLoops, 10);
    stop.abort();
    await Promise.all(passes);
    const drained = receiver.drain();
    while (pending.count > 0) pending.answer([]);
    await drained;
  });

  it('a busy loop takes the waiting batches in the queues’ order when it frees up, and each carries the lease made at its poll’s answer', async () => {
    const released: Message[] = [];
    const { source, receiver, stop } = setup({ pollsFromStart: true, concurrency: 1 }, highest, held(released));
    const pending = new PendingReceives();
    source.respond = (call) => (call.waitSec > 0 ? pending.respond(call) : []);
    // The loop is busy (no next() waiting): its first pass started the polls and left.
    const first = receiver.next(stop.signal);
    await flush();
    pending.answer([message()], 'a');
    assert.deepEqual((await first)?.queue.name, 'a');
    // While it invokes, c then b answer: both wait.
    const c = [message()];
    const b = [message(), message()];
    pending.answer(c, 'c');
    pending.answer(b, 'b');
    await flush();
    const next = await receiver.next(stop.signal);
    assert.deepEqual([next?.queue.name, next?.messages, next?.lease], ['b', b, 2], 'strict: b before c, whatever answered first');
    assert.equal((await receiver.next(stop.signal))?.queue.name, 'c');
    stop.abort();
    const drained = receiver.drain();
    while (pending.count > 0) pending.answer([]);
    await drained;
    assert.deepEqual(released, []);
  });

  it('no new poll while `concurrency` batches wait; at the stop every waiting batch is released at once', async () => {
    const released: Message[] = [];
    const queues = Array.from({ length: 6 }, (_, i) => queue(`q${i}`));
    const source = new ReceiveSource();
    const fresh = new AbortController();
    const loop2 = new Receiver(options({ queues, pollsFromStart: true, concurrency: 2 }), {
      source,
      logger: recordingLogger().logger,
      random: highest,
      now: Date.now,
      ...held(released),
    });
    // Two polls answer with messages while no loop waits.
    const pending2 = new PendingReceives();
    source.respond = (call) => (call.waitSec > 0 ? pending2.respond(call) : []);
    const busy = loop2.next(fresh.signal);
    await flush();
    const a = [message()];
    pending2.answer(a, 'q0');
    assert.equal((await busy)?.queue.name, 'q0', 'a loop was waiting: it took q0 at once');
    pending2.answer([message()], 'q1');
    pending2.answer([message()], 'q2');
    await flush();
    await advance(1_000);
    const polledAfter = source.calls.length;
    pending2.answer([], 'q3');
    await advance(2_000);
    assert.equal(source.calls.length, polledAfter, 'two batches wait (= concurrency): q0 and q3 are not polled again');
    fresh.abort();
    await flush();
    assert.equal(released.length, 2, 'the two waiting batches were released at the stop, not left to their timeout');
    const drained = loop2.drain();
    while (pending2.count > 0) pending2.answer([]);
    await drained;
  });
});
