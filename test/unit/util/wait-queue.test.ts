// The FIFO line that worker loops wait in (slots, places, permits): O(1) per waiter, one wake per release.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { WaitQueue } from '../../../src/util/wait-queue.ts';

describe('WaitQueue', () => {
  it('wakes waiters one at a time, first come first served', async () => {
    const line = new WaitQueue();
    const woken: number[] = [];
    const waits = [0, 1, 2].map((i) => line.wait().then((w) => w && woken.push(i)));
    assert.equal(line.size, 3);
    assert.equal(line.wakeOne(), true);
    await tick();
    assert.deepEqual(woken, [0]);
    assert.equal(line.size, 2);
    line.wakeOne();
    line.wakeOne();
    await Promise.all(waits);
    assert.deepEqual(woken, [0, 1, 2]);
    assert.equal(line.wakeOne(), false, 'nobody left');
  });

  it('a waiter whose signal aborts or whose timeout passes leaves the line at once, and is never woken', async () => {
    const line = new WaitQueue();
    const stop = new AbortController();
    const aborted = line.wait(stop.signal);
    const timedOut = line.wait(undefined, 10);
    const third = line.wait();
    stop.abort();
    assert.equal(await aborted, false);
    assert.equal(line.size, 2);
    assert.equal(await timedOut, false);
    assert.equal(line.size, 1);
    assert.equal(line.wakeOne(), true);
    assert.equal(await third, true, 'the wake went to the one still waiting');
    assert.equal(await line.wait(AbortSignal.abort()), false, 'an aborted signal never joins');
    assert.equal(line.size, 0);
  });

  it('2,000 waiters rechecking every 20 ms for 10 cycles: the line never holds more than 2,000', async () => {
    const line = new WaitQueue();
    const stop = new AbortController();
    let cycles = 0;
    let most = 0;
    const loops = Array.from({ length: 2_000 }, async () => {
      for (let i = 0; i < 10; i++) {
        await line.wait(stop.signal, 20);
        most = Math.max(most, line.size);
      }
      cycles++;
    });
    await Promise.all(loops);
    assert.equal(cycles, 2_000);
    assert.ok(most <= 2_000, `at most ${most}`);
    assert.equal(line.size, 0);
  });
});
