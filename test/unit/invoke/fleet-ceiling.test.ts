// The fleet's share as a ceiling of the concurrency gate (src/invoke/fleet-ceiling.ts), with adaptive concurrency
// off: the gate keeps to the lower of --concurrency and the share, and a share that moves is read when told.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FixedCeiling } from '../../../src/invoke/ceiling.ts';
import { ConcurrencyGate } from '../../../src/invoke/concurrency-gate.ts';
import { FleetCeiling } from '../../../src/invoke/fleet-ceiling.ts';

const flush = () => new Promise((r) => setImmediate(r));

function gate(share: { value: number }, max = 10) {
  const moves: { from: number; to: number }[] = [];
  const g = new ConcurrencyGate([new FixedCeiling(max), new FleetCeiling(() => share.value)], {
    now: () => 0,
    onChange: (m) => moves.push({ from: m.from, to: m.to }),
  });
  return { g, moves };
}

describe('FleetCeiling', () => {
  it('holds the invocations in flight to the share, under --concurrency', async () => {
    const share = { value: 3 };
    const { g } = gate(share);
    assert.equal(g.limit, 3);
    const release: (() => void)[] = [];
    let running = 0;
    let peak = 0;
    const calls = Array.from({ length: 8 }, () =>
      g.invoke(
        () =>
          new Promise<void>((resolve) => {
            running++;
            peak = Math.max(peak, running);
            release.push(() => {
              running--;
              resolve();
            });
          }),
        () => 'accepted',
      ),
    );
    await flush();
    assert.equal(running, 3);
    // A member left: the share rises to 5, and the gate lets two more in when told.
    share.value = 5;
    g.ceilingsMoved();
    await flush();
    assert.equal(running, 5);
    while (release.length > 0) {
      release.shift()!();
      await flush();
    }
    await Promise.all(calls);
    assert.equal(peak, 5);
  });

  it('a share above --concurrency is capped by it; a share of 0 lets no loop receive', async () => {
    const share = { value: 50 };
    const { g, moves } = gate(share, 10);
    assert.equal(g.limit, 10);
    share.value = 0;
    g.ceilingsMoved();
    assert.equal(g.limit, 0);
    assert.deepEqual(moves, [{ from: 10, to: 0 }]);
    assert.equal(g.tryEnter(), false, 'no place with a share of 0');
    const halt = new AbortController();
    let entered = false;
    const waiting = g.enter(halt.signal).then((v) => (entered = v));
    share.value = 2;
    g.ceilingsMoved();
    await waiting;
    assert.equal(entered, true, 'let in once the share rose');
  });
});
