import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { CallPacer } from '../../../src/aws/call-pacer.ts';
import { RecordingServer } from '../../support/recording-server.ts';

/** A pacer whose turns advance only when the test says so. */
function manualPacer(perTurn: number) {
  const scheduled: (() => void)[] = [];
  const pacer = new CallPacer(perTurn, (next) => scheduled.push(next));
  return {
    pacer,
    /** Runs the turn scheduled last (there is at most one) and lets the released callers go on. */
    nextTurn: async (): Promise<void> => {
      const next = scheduled.shift();
      assert.ok(next, 'a next turn is scheduled');
      assert.equal(scheduled.length, 0, 'one turn scheduled at a time');
      next();
      await Promise.resolve();
    },
    scheduled,
  };
}

describe('CallPacer', () => {
  it('lets perTurn calls start at once in a turn and the rest in later turns, in order', async () => {
    const { pacer, nextTurn, scheduled } = manualPacer(3);
    const started: number[] = [];
    const calls = Array.from({ length: 8 }, (_, i) => {
      const wait = pacer.turn();
      if (wait === undefined) {
        started.push(i);
        return Promise.resolve();
      }
      return wait.then(() => {
        started.push(i);
      });
    });
    assert.deepEqual(started, [0, 1, 2]);
    assert.equal(pacer.waiting, 5);
    await nextTurn();
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5]);
    await nextTurn();
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.equal(pacer.waiting, 0);
    await Promise.all(calls);
    // The turn that released the last two still counts them; the next one resets the count and schedules no more.
    await nextTurn();
    assert.equal(scheduled.length, 0);
  });

  it('counts calls that arrive in a turn that released waiting ones, and never lets a newcomer pass a waiting call', async () => {
    const { pacer, nextTurn } = manualPacer(2);
    const order: string[] = [];
    const start = (name: string) => {
      const wait = pacer.turn();
      if (wait === undefined) order.push(name);
      else void wait.then(() => order.push(name));
    };
    start('a');
    start('b');
    start('c');
    await nextTurn(); // releases c: one of this turn's two starts
    start('d'); // the second
    start('e'); // waits
    assert.deepEqual(order, ['a', 'b', 'c', 'd']);
    await nextTurn();
    assert.deepEqual(order, ['a', 'b', 'c', 'd', 'e']);
    // A caller while others wait queues behind them even if this turn has room.
    const { pacer: p2 } = manualPacer(5);
    for (let i = 0; i < 5; i++) assert.equal(p2.turn(), undefined);
    assert.ok(p2.turn());
    assert.equal(p2.waiting, 1);
  });

  it('starts at once without waiting under the limit, turn after turn', async () => {
    const pacer = new CallPacer(4);
    for (let turn = 0; turn < 5; turn++) {
      for (let i = 0; i < 4; i++) assert.equal(pacer.turn(), undefined);
      // The next turn: the immediate the first start scheduled has reset the count.
      await new Promise((resolve) => setImmediate(resolve));
    }
  });

  it('rejects a limit below 1', () => {
    assert.throws(() => new CallPacer(0), /perTurn must be at least 1, got 0/);
    assert.throws(() => new CallPacer(Number.NaN), RangeError);
  });

  it('lets the event loop read answers between the turns of a burst (real sockets)', async () => {
    // A burst of 400 "calls", each of which does 1 ms of synchronous work and then sends a request. Paced at
    // 20 per turn, answers to the first requests are read while later ones are still being built; unpaced,
    // every request is built before the first answer can be read.
    const server = new RecordingServer();
    const { port } = await server.listen();
    const busy = (ms: number) => {
      const end = performance.now() + ms;
      while (performance.now() < end);
    };
    async function burst(pacer: CallPacer | undefined): Promise<{ builtBeforeFirstAnswer: number }> {
      let built = 0;
      let builtBeforeFirstAnswer = -1;
      const call = async () => {
        const wait = pacer?.turn();
        if (wait) await wait;
        busy(1);
        built += 1;
        await new Promise<void>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, method: 'GET', path: '/' }, (res) => {
            if (builtBeforeFirstAnswer < 0) builtBeforeFirstAnswer = built;
            res.resume().on('end', resolve);
          });
          req.on('error', reject);
          req.end();
        });
      };
      await Promise.all(Array.from({ length: 400 }, () => Promise.resolve().then(call)));
      return { builtBeforeFirstAnswer };
    }
    try {
      const unpaced = await burst(undefined);
      const paced = await burst(new CallPacer(20));
      assert.equal(unpaced.builtBeforeFirstAnswer, 400);
      assert.ok(paced.builtBeforeFirstAnswer < 200, `paced: first answer after ${paced.builtBeforeFirstAnswer} of 400 were built`);
    } finally {
      server.close();
    }
  });
});
