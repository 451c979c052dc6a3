// The fleet's executor (src/fleet/fleet-member.ts) over an in-memory store that keeps DynamoDB's conditional-write
// rule (PutItem with attribute_not_exists(member) OR heartbeat = :prev), on a clock the test moves. The real
// store's calls are proven against moto and dynalite in test/integration/fleet-store.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { AwsCallError, type ClassifiedError } from '../../../src/core/errors.ts';
import type { FleetItem, FleetStore, HeartbeatResult } from '../../../src/core/fleet-store.ts';
import { FleetMember } from '../../../src/fleet/fleet-member.ts';

const HEARTBEAT = 1_000;
const QUEUES = Array.from({ length: 200 }, (_, i) => `https://sqs.us-east-1.amazonaws.com/1/q-${i}`);

class MemoryTable {
  readonly items = new Map<string, FleetItem>();
  down = false;
  /** Heartbeats and reads never answer (a table that accepts and stays silent); leaves still do. */
  hung = false;
  store(): FleetStore {
    return {
      heartbeat: (item, previous) =>
        this.hung
          ? new Promise<HeartbeatResult>(() => {})
          : this.#call((): HeartbeatResult => {
              const stored = this.items.get(item.id);
              if (stored !== undefined && stored.heartbeat !== previous) return 'conflict';
              if (stored === undefined && previous !== undefined) return 'conflict';
              this.items.set(item.id, item);
              return 'written';
            }),
      members: () => this.#call(() => [...this.items.values()]),
      leave: (id) => this.#call(() => void this.items.delete(id)),
    };
  }
  #call<T>(f: () => T): Promise<T> {
    return this.down
      ? Promise.reject(new Error('cannot reach DynamoDB at http://127.0.0.1:1 (PutItem on table t): ECONNREFUSED'))
      : Promise.resolve(f());
  }
}

function logLines(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { logger, lines };
}

function member(table: MemoryTable, self: string, clock: { now: number }, busy: () => string[] = () => []) {
  const { logger, lines } = logLines();
  let changes = 0;
  const m = new FleetMember({
    store: table.store(),
    self,
    heartbeatMs: HEARTBEAT,
    now: () => clock.now,
    wallNow: () => 1_800_000_000_000,
    queues: () => QUEUES,
    busy,
    onChange: () => changes++,
    logger,
  });
  return { m, lines, changes: () => changes };
}

async function beatAll(clock: { now: number }, ...members: FleetMember[]): Promise<void> {
  for (const m of members) await m.beat();
  clock.now += HEARTBEAT;
}

/** Two members a and b on one table, past their joining rounds: shared. */
async function sharedPair() {
  const table = new MemoryTable();
  const clock = { now: 0 };
  const a = member(table, 'a', clock);
  const b = member(table, 'b', clock);
  for (let i = 0; i < 4; i++) await beatAll(clock, a.m, b.m);
  assert.equal(a.m.mode, 'shared');
  return { table, clock, a, b };
}

const served = (m: FleetMember) => QUEUES.filter((q) => m.serves(q));

describe('FleetMember', () => {
  it('serves every queue while joining, then splits them with its peers: each queue served by exactly one', async () => {
    const table = new MemoryTable();
    const clock = { now: 100 };
    const members = ['a', 'b', 'c'].map((id) => member(table, id, clock).m);
    await beatAll(clock, ...members);
    for (const m of members) {
      assert.equal(m.mode, 'joining');
      assert.equal(served(m).length, QUEUES.length, 'joining serves all');
    }
    for (let i = 0; i < 3; i++) await beatAll(clock, ...members);
    for (const m of members) assert.equal(m.mode, 'shared');
    const counts = members.map((m) => served(m).length);
    assert.equal(
      counts.reduce((a, b) => a + b, 0),
      QUEUES.length,
      `each queue once: ${counts.join(' ')}`,
    );
    for (const q of QUEUES) assert.equal(members.filter((m) => m.serves(q)).length, 1);
    for (const c of counts) assert.ok(c > 40 && c < 95, `a fair share of 200 over 3: ${c}`);
    assert.deepEqual(members[0]!.status().members, ['a', 'b', 'c']);
  });

  it("takes a crashed member's queues once its counter was silent for 3 heartbeats, and a leaver's at the next read", async () => {
    const table = new MemoryTable();
    const clock = { now: 0 };
    const [a, b, c] = ['a', 'b', 'c'].map((id) => member(table, id, clock).m) as [FleetMember, FleetMember, FleetMember];
    for (let i = 0; i < 4; i++) await beatAll(clock, a, b, c);
    const ofC = QUEUES.filter((q) => c.serves(q));
    // c crashes: its item stays, its counter stops.
    await beatAll(clock, a, b);
    await beatAll(clock, a, b);
    assert.ok(
      ofC.every((q) => !a.serves(q) && !b.serves(q)),
      'still c’s within the expiry',
    );
    await beatAll(clock, a, b);
    await beatAll(clock, a, b);
    assert.deepEqual(a.status().members, ['a', 'b']);
    for (const q of QUEUES) assert.equal([a, b].filter((m) => m.serves(q)).length, 1, `${q} served once`);
    // b leaves gracefully: gone from the table, a takes all at its next beat.
    await b.leave();
    assert.equal(b.mode, 'left');
    assert.equal(table.items.has('b'), false);
    await beatAll(clock, a);
    assert.equal(served(a).length, QUEUES.length);
  });

  it('serves a queue a peer advertises as busy, besides its own', async () => {
    const table = new MemoryTable();
    const clock = { now: 0 };
    let busyOfA: string[] = [];
    const a = member(table, 'a', clock, () => busyOfA).m;
    const b = member(table, 'b', clock).m;
    for (let i = 0; i < 4; i++) await beatAll(clock, a, b);
    const hot = QUEUES.find((q) => a.serves(q) && !b.serves(q))!;
    busyOfA = [hot];
    await beatAll(clock, a, b);
    assert.equal(b.serves(hot), true, 'busy: served by b too');
    busyOfA = [];
    await beatAll(clock, a, b);
    assert.equal(b.serves(hot), false, 'idle again: a’s only');
  });

  it('falls back when a round hangs for an expiry (the watchdog, not the round, decides), and leaves without waiting on it', async () => {
    const { table, clock, a } = await sharedPair();
    table.hung = true;
    void a.m.beat(); // never settles
    // The last round that succeeded was one heartbeat ago (beatAll moves the clock after its rounds).
    clock.now += HEARTBEAT;
    a.m.checkExpiry();
    assert.equal(a.m.mode, 'shared', 'within the expiry');
    clock.now += HEARTBEAT;
    a.m.checkExpiry();
    assert.equal(a.m.mode, 'fallen-back');
    assert.equal(served(a.m).length, QUEUES.length, 'every queue, never blind');
    const started = Date.now();
    await a.m.leave();
    assert.ok(Date.now() - started < 3 * HEARTBEAT, `leave waited ${Date.now() - started} ms`);
    assert.equal(table.items.has('a'), false, 'its item deleted');
  });

  it('falls back to every queue after an expiry without a heartbeat, says so once, and shares again when the table answers', async () => {
    const { table, clock, a, b } = await sharedPair();
    table.down = true;
    for (let i = 0; i < 5; i++) await beatAll(clock, a.m, b.m);
    assert.equal(a.m.mode, 'fallen-back');
    assert.equal(served(a.m).length, QUEUES.length);
    assert.equal(served(b.m).length, QUEUES.length);
    assert.equal(a.lines.filter((l) => l['to'] === 'fallen-back').length, 1);
    assert.equal(a.lines.filter((l) => l['msg'] === 'fleet heartbeat failed').length, 1, 'the same failure logged once');
    // The budget keeps the last live set while blind: the total stays a promise.
    assert.equal(a.m.share(30, 100), 15);
    table.down = false;
    await beatAll(clock, a.m, b.m);
    assert.equal(a.m.mode, 'shared');
    for (const q of QUEUES) assert.equal([a.m, b.m].filter((m) => m.serves(q)).length, 1);
  });

  it('splits a fleet budget over the live members: 30 over 3 is 10 each, capped by --concurrency', async () => {
    const table = new MemoryTable();
    const clock = { now: 0 };
    const members = ['a', 'b', 'c'].map((id) => member(table, id, clock).m);
    for (let i = 0; i < 4; i++) await beatAll(clock, ...members);
    assert.deepEqual(
      members.map((m) => m.share(30, 100)),
      [10, 10, 10],
    );
    assert.deepEqual(
      members.map((m) => m.share(31, 100)),
      [11, 10, 10],
    );
    assert.deepEqual(
      members.map((m) => m.share(30, 8)),
      [8, 8, 8],
    );
  });

  it('takes no share of the budget for 2 heartbeats from its first round, until every peer has read its item', async () => {
    const table = new MemoryTable();
    const clock = { now: 0 };
    const [a, b, c] = ['a', 'b', 'c'].map((id) => member(table, id, clock));
    for (let i = 0; i < 4; i++) await beatAll(clock, a!.m, b!.m, c!.m);
    assert.deepEqual(
      [a, b, c].map((x) => x!.m.share(30)),
      [10, 10, 10],
    );
    // d joins: it reads the three at once, they find it only at their next rounds.
    const d = member(table, 'd', clock);
    const before = d.changes();
    await d.m.beat();
    const sum = () => [a, b, c, d].reduce((n, x) => n + x!.m.share(30), 0);
    assert.equal(d.m.share(30), 0, 'none while the peers may not have seen it');
    assert.ok(sum() <= 30, `the members together within the budget: ${sum()}`);
    // A heartbeat on, the peers have read it and lowered theirs; it still waits.
    clock.now += HEARTBEAT;
    for (const x of [a, b, c]) await x!.m.beat();
    assert.equal(d.m.share(30), 0, 'one heartbeat on: still none');
    assert.ok(sum() <= 30, `within the budget: ${sum()}`);
    clock.now += HEARTBEAT;
    await d.m.beat();
    assert.ok(d.m.share(30) >= 7, `two heartbeats on: its part, ${d.m.share(30)}`);
    assert.equal(sum(), 30);
    assert.ok(d.changes() > before, 'the gate was told when the share came');
  });

  it('takes a fresh id when another process writes its item', async () => {
    const table = new MemoryTable();
    const clock = { now: 0 };
    const a = member(table, 'a', clock);
    await beatAll(clock, a.m);
    table.items.set('a', { id: 'a', heartbeat: 99 });
    await beatAll(clock, a.m);
    assert.notEqual(a.m.status().self, 'a');
    await beatAll(clock, a.m);
    assert.ok(table.items.has(a.m.status().self), 'writes under its fresh id');
    assert.ok(a.lines.some((l) => l['msg'] === 'another process writes this fleet member: joining again as a fresh member'));
  });

  it('counts a retried write that landed as its own (the conflict is its first try)', async () => {
    const table = new MemoryTable();
    const clock = { now: 0 };
    const a = member(table, 'a', clock);
    await beatAll(clock, a.m);
    // The next write lands but its answer is lost: the store holds 2, the member still thinks 1.
    table.items.set('a', { id: 'a', heartbeat: 2 });
    await beatAll(clock, a.m);
    assert.equal(a.m.status().self, 'a', 'no fresh id for its own retried write');
  });
});

describe('FleetMember.start: the first round at start-up', () => {
  /** A store over `table` whose `operation` throws what the adapters throw for `code` (fleet-call.ts). */
  function refusing(table: MemoryTable, operation: 'heartbeat' | 'members', error: ClassifiedError): FleetStore {
    const store = table.store();
    const line = `DynamoDB refused ${operation === 'heartbeat' ? 'PutItem' : 'Query'} on table t at http://127.0.0.1:1: ${error.code}`;
    const fail = () => Promise.reject(Object.assign(new AwsCallError(operation, error), { message: line }));
    return { ...store, [operation]: fail };
  }
  const start = (store: FleetStore) => {
    const { logger, lines } = logLines();
    const m = new FleetMember({
      store,
      self: 'a',
      heartbeatMs: HEARTBEAT,
      now: () => 0,
      wallNow: () => 1_800_000_000_000,
      queues: () => QUEUES,
      busy: () => [],
      onChange: () => {},
      logger,
    });
    return { m, lines };
  };
  const denied: ClassifiedError = { kind: 'fatal', code: 'AccessDeniedException', message: 'not authorized' };

  it('a refused Query: returns its line, and deletes the item its PutItem wrote', async () => {
    const table = new MemoryTable();
    const { m, lines } = start(refusing(table, 'members', denied));
    assert.equal(await m.start(), 'DynamoDB refused Query on table t at http://127.0.0.1:1: AccessDeniedException');
    assert.equal(table.items.size, 0, 'no item left for the peers to count');
    assert.ok(!lines.some((l) => l['msg'] === 'fleet heartbeat failed'), 'the start-up tells it, once');
  });

  it('a refused PutItem: returns its line; nothing was written', async () => {
    const table = new MemoryTable();
    const { m } = start(refusing(table, 'heartbeat', denied));
    assert.equal(await m.start(), 'DynamoDB refused PutItem on table t at http://127.0.0.1:1: AccessDeniedException');
    assert.equal(table.items.size, 0);
  });

  it('a table throttling or out of reach is no refusal: the member starts, and serves every queue', async () => {
    for (const error of [
      { kind: 'throttled', code: 'ProvisionedThroughputExceededException', message: 'slow down' },
      { kind: 'retryable', code: 'ECONNREFUSED', message: 'refused' },
    ] satisfies ClassifiedError[]) {
      const table = new MemoryTable();
      const { m, lines } = start(refusing(table, 'members', error));
      assert.equal(await m.start(), undefined, error.code);
      assert.ok(lines.some((l) => l['msg'] === 'fleet heartbeat failed'));
      assert.equal(served(m).length, QUEUES.length);
      await m.leave();
    }
  });
});
