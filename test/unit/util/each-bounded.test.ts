// eachBounded and mapBounded (src/util/each-bounded.ts): at most so many at a time, results in order, and nothing
// more started once one has failed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eachBounded, mapBounded } from '../../../src/util/each-bounded.ts';

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('eachBounded / mapBounded', () => {
  it('runs at most atOnce at a time and gives the results in the items order', async () => {
    let open = 0;
    let peak = 0;
    const items = Array.from({ length: 100 }, (_, i) => i);
    const out = await mapBounded(items, 7, async (i) => {
      open++;
      peak = Math.max(peak, open);
      await turn();
      open--;
      return i * 2;
    });
    assert.equal(peak, 7);
    assert.deepEqual(
      out,
      items.map((i) => i * 2),
    );
  });

  it('rejects with the first failure and starts no further item', async () => {
    const started: number[] = [];
    const items = Array.from({ length: 100 }, (_, i) => i);
    await assert.rejects(
      eachBounded(items, 4, async (i) => {
        started.push(i);
        await turn();
        if (i === 10) throw new Error('item 10');
      }),
      /item 10/,
    );
    await turn();
    await turn();
    assert.ok(started.length <= 14, `${started.length} started`);
  });

  it('nothing to do: resolves at once', async () => {
    assert.deepEqual(await mapBounded([], 4, () => Promise.resolve(1)), []);
  });
});
