import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { TimerHeap, type HeapEntry } from '../../../src/util/timer-heap.ts';
import { countTimers } from '../../support/count-timers.ts';

interface Entry extends HeapEntry {
  readonly name: string;
}

const entry = (name: string): Entry => ({ name, dueAt: 0, slot: -1 });

/** A heap on the fake timers' time, with what it fired and when. */
function setup(now: () => number = () => Date.now()) {
  const fired: [string, number][] = [];
  const heap = new TimerHeap<Entry>(now, (e) => fired.push([e.name, Date.now()]));
  return { heap, fired };
}

/** Advances the fake clock 1 ms at a time: one tick() sets the fake Date to its end before any timer runs. */
function advance(ms: number): void {
  for (let i = 0; i < ms; i++) mock.timers.tick(1);
}

describe('TimerHeap', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 }));
  afterEach(() => mock.timers.reset());

  it('hands each entry over at its due time, in due order, whatever the order they were set in', () => {
    const { heap, fired } = setup();
    const [a, b, c] = [entry('a'), entry('b'), entry('c')];
    heap.set(c, 300);
    heap.set(a, 100);
    heap.set(b, 200);
    advance(99);
    assert.deepEqual(fired, []);
    mock.timers.tick(1);
    assert.deepEqual(fired, [['a', 100]]);
    advance(200);
    assert.deepEqual(fired, [
      ['a', 100],
      ['b', 200],
      ['c', 300],
    ]);
    assert.deepEqual([a.slot, b.slot, c.slot], [-1, -1, -1], 'handed over entries are no longer scheduled');
  });

  it('a removed entry is never handed over; set() again moves an entry, earlier or later', () => {
    const { heap, fired } = setup();
    const [a, b, c] = [entry('a'), entry('b'), entry('c')];
    heap.set(a, 100);
    heap.set(b, 200);
    heap.set(c, 300);
    heap.remove(a);
    heap.remove(a);
    heap.set(c, 50);
    heap.set(b, 400);
    advance(500);
    assert.deepEqual(fired, [
      ['c', 50],
      ['b', 400],
    ]);
  });

  it('one timer for many entries: entries that come and go without falling due arm no timer of their own', () => {
    const timers = countTimers();
    try {
      const { heap, fired } = setup();
      // A steady load: every 1 ms a lease is made, due 20 s later, and the one made 5 ms earlier ends.
      const open: Entry[] = [];
      for (let t = 0; t < 1_000; t++) {
        const e = entry(`e${t}`);
        heap.set(e, Date.now() + 20_000);
        open.push(e);
        if (open.length > 5) heap.remove(open.shift()!);
        mock.timers.tick(1);
      }
      assert.equal(timers.armed(), 1, 'only the first entry armed the timer');
      for (const e of open) heap.remove(e);
      advance(40_000);
      assert.deepEqual(fired, []);
      assert.ok(timers.armed() <= 2, `armed ${timers.armed()} timers`);
    } finally {
      timers.restore();
    }
  });

  it('never hands an entry over before `now` reaches its due time, even when the timer fires early', () => {
    // Node counts a timer from the event loop's cached time, which may be behind performance.now(): the timer
    // then fires before `now` reaches the due time. The entry waits for the rest instead of being cut short.
    let lag = 0;
    const { heap, fired } = setup(() => Date.now() - lag);
    heap.set(entry('a'), 100);
    lag = 3;
    advance(100);
    assert.deepEqual(fired, [], 'the timer fired at 100 while `now` read 97');
    advance(3);
    assert.deepEqual(fired, [['a', 103]]);
  });

  it('an entry already overdue is handed over at once (after the 1 ms of a zero timeout)', () => {
    const { heap, fired } = setup();
    advance(1_000);
    heap.set(entry('late'), 500);
    mock.timers.tick(1);
    assert.deepEqual(fired, [['late', 1_001]]);
  });

  it('onDue may set and remove entries (its own or others) while the heap hands over', () => {
    const fired: string[] = [];
    const [a, b, c] = [entry('a'), entry('b'), entry('c')];
    const heap: TimerHeap<Entry> = new TimerHeap<Entry>(
      () => Date.now(),
      (e) => {
        fired.push(`${e.name}@${Date.now()}`);
        if (e === a) {
          heap.remove(c);
          heap.set(a, Date.now() + 100);
        }
      },
    );
    heap.set(a, 100);
    heap.set(b, 150);
    heap.set(c, 180);
    advance(250);
    assert.deepEqual(fired, ['a@100', 'b@150', 'a@200']);
  });

  it('an entry that onDue removes or moves, due in the same fire, is not handed over (moved: at its new time)', () => {
    const fired: string[] = [];
    const [a, b, c, d] = [entry('a'), entry('b'), entry('c'), entry('d')];
    const heap: TimerHeap<Entry> = new TimerHeap<Entry>(
      () => Date.now(),
      (e) => {
        fired.push(`${e.name}@${Date.now()}`);
        if (e === a) {
          heap.remove(b);
          heap.set(c, Date.now() + 50);
        }
      },
    );
    // All four fall due in one fire: the fake clock jumps past them before the timer runs.
    heap.set(a, 10);
    heap.set(b, 11);
    heap.set(c, 12);
    heap.set(d, 13);
    mock.timers.tick(20);
    assert.deepEqual(fired, ['a@20', 'd@20']);
    advance(60);
    assert.deepEqual(fired, ['a@20', 'd@20', 'c@70']);
    heap.remove(b);
    heap.set(b, 100);
    advance(40);
    assert.deepEqual(fired, ['a@20', 'd@20', 'c@70', 'b@100'], 'a removed entry can be set again');
  });

  it('keeps the heap in order under many random moves (against a plain list)', () => {
    const { heap, fired } = setup();
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const entries = Array.from({ length: 64 }, (_, i) => entry(`e${i}`));
    const model = new Map<Entry, number>();
    for (let step = 0; step < 5_000; step++) {
      const e = entries[Math.floor(random() * entries.length)]!;
      if (random() < 0.3) {
        heap.remove(e);
        model.delete(e);
      } else {
        const dueAt = 1_000 + Math.floor(random() * 100_000);
        heap.set(e, dueAt);
        model.set(e, dueAt);
      }
    }
    advance(101_000);
    const expected = [...model].sort((x, y) => x[1] - y[1]).map(([e]) => e.name);
    assert.deepEqual(
      fired.map(([name]) => name),
      expected,
    );
  });
});

describe('TimerHeap on real timers', () => {
  const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

  it("holds the process open only while an entry is scheduled: an idle heap keeps its timer unref'd", () => {
    const before = timeouts();
    const heap = new TimerHeap<Entry>(
      () => performance.now(),
      () => undefined,
    );
    const [a, b] = [entry('a'), entry('b')];
    heap.set(a, performance.now() + 60_000);
    heap.set(b, performance.now() + 30_000);
    assert.equal(timeouts(), before + 1, 'one timer for both');
    heap.remove(b);
    assert.equal(timeouts(), before + 1);
    heap.remove(a);
    assert.equal(timeouts(), before, 'none once the last entry left');
  });

  it('with unref, never holds the process open, even with entries scheduled; they still fall due', async () => {
    const before = timeouts();
    const fired: string[] = [];
    const heap = new TimerHeap<Entry>(
      () => performance.now(),
      (e) => fired.push(e.name),
      { unref: true },
    );
    heap.set(entry('a'), performance.now() + 20);
    heap.set(entry('b'), performance.now() + 10);
    assert.equal(timeouts(), before);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(fired, ['b', 'a']);
  });
});
