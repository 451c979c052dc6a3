import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { SharedReceiveSource } from '../../../src/receive/shared-receive.ts';
import type { ReceiveOptions, ResolvedQueue } from '../../../src/core/queue.ts';
import { FakeSource, message, queue } from '../../support/factories.ts';

/** A FakeSource whose receives (long polls too, when `gateLongPolls`) wait until their gates open, so several loops can ask while one is in flight. */
class GatedSource extends FakeSource {
  gates: (() => void)[] = [];
  gateLongPolls = false;
  override async receive(q: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    if (options.waitSec === 0 || this.gateLongPolls) await new Promise<void>((r) => this.gates.push(r));
    // A long poll let through answers at once with what is there, as SQS does when its wait is over.
    return super.receive(q, { ...options, waitSec: 0 }, signal);
  }
  open(): void {
    const gates = this.gates;
    this.gates = [];
    for (const g of gates) g();
  }
}

const tick = () => new Promise((r) => setImmediate(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SharedReceiveSource', () => {
  it('loops that ask while a receive is in flight share the next one, and nobody gets more than asked', async () => {
    const inner = new GatedSource();
    const q = queue('q');
    inner.push('q', ...Array.from({ length: 20 }, () => message()));
    const shared = new SharedReceiveSource(inner);
    const first = shared.receive(q, { max: 1, waitSec: 0 });
    await tick();
    const others = [1, 2, 3, 4].map(() => shared.receive(q, { max: 2, waitSec: 0 }));
    await tick();
    assert.deepEqual(
      inner.receives.map((r) => r.max),
      [],
      'the first receive is still gated',
    );
    inner.open();
    assert.equal((await first).length, 1);
    await tick();
    inner.open();
    const got = await Promise.all(others);
    assert.deepEqual(
      got.map((m) => m.length),
      [2, 2, 2, 2],
    );
    assert.deepEqual(
      inner.receives.map((r) => r.max),
      [1, 8],
      'four waiting loops shared one receive of 8',
    );
    const ids = [await first, ...got].flat().map((m) => m.MessageId);
    assert.equal(new Set(ids).size, ids.length, 'no message handed out twice');
  });

  it('never asks for more than 10 per call, and splits a short result in arrival order', async () => {
    const inner = new GatedSource();
    const q = queue('q');
    inner.push('q', ...Array.from({ length: 5 }, () => message()));
    const shared = new SharedReceiveSource(inner);
    const blocker = shared.receive(q, { max: 1, waitSec: 0 });
    await tick();
    const waiting = Array.from({ length: 4 }, () => shared.receive(q, { max: 3, waitSec: 0 }));
    await tick();
    inner.open();
    await blocker;
    await tick();
    inner.open();
    await tick();
    inner.open();
    const got = await Promise.all(waiting);
    assert.deepEqual(
      inner.receives.map((r) => r.max),
      [1, 9, 3],
    );
    assert.deepEqual(
      got.map((m) => m.length),
      [3, 1, 0, 0],
    );
  });

  it('never shares a receive on a FIFO queue, so one message group is never split across loops', async () => {
    const inner = new GatedSource();
    const q = queue('orders.fifo');
    inner.push('orders.fifo', ...Array.from({ length: 6 }, () => message({ Attributes: { MessageGroupId: 'g' } })));
    const shared = new SharedReceiveSource(inner);
    const first = shared.receive(q, { max: 1, waitSec: 0 });
    const second = shared.receive(q, { max: 1, waitSec: 0 });
    await tick();
    assert.equal(inner.gates.length, 2, 'two separate receives, not one shared one');
    inner.open();
    assert.deepEqual([(await first).length, (await second).length], [1, 1]);
    assert.deepEqual(
      inner.receives.map((r) => r.max),
      [1, 1],
    );
  });

  it('sends a full call of waiting loops at once, without waiting for the call in flight', async () => {
    const inner = new GatedSource();
    const q = queue('q');
    inner.push('q', ...Array.from({ length: 30 }, () => message()));
    const shared = new SharedReceiveSource(inner);
    const first = shared.receive(q, { max: 1, waitSec: 0 });
    await tick();
    const nine = Array.from({ length: 9 }, () => shared.receive(q, { max: 1, waitSec: 0 }));
    await tick();
    assert.equal(inner.gates.length, 1, 'nine waiting loops wait for the call in flight');
    const tenth = shared.receive(q, { max: 1, waitSec: 0 });
    await tick();
    assert.equal(inner.gates.length, 2, 'the tenth makes a full call, sent at once');
    inner.open();
    const got = await Promise.all([first, ...nine, tenth]);
    assert.deepEqual(
      got.map((m) => m.length),
      Array.from({ length: 11 }, () => 1),
    );
    assert.deepEqual(
      inner.receives.map((r) => r.max),
      [1, 10],
    );
  });

  it('up to 10 long polls per queue; an empty one answers the loops beyond whose own wait is over, the others keep waiting', async () => {
    const inner = new GatedSource();
    inner.gateLongPolls = true;
    const q = queue('q');
    const shared = new SharedReceiveSource(inner);
    const early = Array.from({ length: 12 }, () => shared.receive(q, { max: 1, waitSec: 0.05 }));
    await tick();
    assert.equal(inner.gates.length, 10, 'ten idle loops poll, two wait');
    await sleep(80);
    const late = shared.receive(q, { max: 1, waitSec: 0.05 });
    inner.open();
    assert.deepEqual(
      (await Promise.all(early)).map((m) => m.length),
      Array.from({ length: 12 }, () => 0),
    );
    await tick();
    assert.equal(inner.gates.length, 1, 'the late loop, whose wait is not over, waits under a poll of its own');
    await sleep(80);
    inner.open();
    assert.deepEqual(await late, []);
    assert.equal(inner.receives.length, 11, 'eleven calls for thirteen idle loops');
  });

  it('a long poll that brought messages sends the next one for the loops waiting beyond the 10, at once', async () => {
    const inner = new GatedSource();
    inner.gateLongPolls = true;
    const q = queue('q');
    const shared = new SharedReceiveSource(inner);
    const polling = Array.from({ length: 10 }, () => shared.receive(q, { max: 1, waitSec: 20 }));
    await tick();
    const waiting = [1, 2].map(() => shared.receive(q, { max: 2, waitSec: 20 }));
    await tick();
    inner.push('q', ...Array.from({ length: 12 }, () => message()));
    inner.open();
    assert.deepEqual(
      (await Promise.all(polling)).map((m) => m.length),
      Array.from({ length: 10 }, () => 1),
    );
    await tick();
    assert.equal(inner.gates.length, 1, 'the next long poll is in flight');
    inner.open();
    assert.deepEqual(
      (await Promise.all(waiting)).map((m) => m.length),
      [2, 0],
    );
    assert.deepEqual(
      inner.receives.map((r) => r.max),
      [...Array.from({ length: 10 }, () => 1), 4],
    );
  });

  it('a loop whose stop aborts while it waits gets nothing at once, and nothing is received for it', async () => {
    const inner = new GatedSource();
    const q = queue('q');
    inner.push('q', ...Array.from({ length: 5 }, () => message()));
    const shared = new SharedReceiveSource(inner);
    const first = shared.receive(q, { max: 1, waitSec: 0 });
    await tick();
    const stop = new AbortController();
    const stopping = shared.receive(q, { max: 1, waitSec: 0, startBefore: stop.signal });
    stop.abort();
    assert.deepEqual(await stopping, [], 'answered while the receive before it is still in flight');
    inner.open();
    assert.equal((await first).length, 1);
    await tick();
    assert.deepEqual(
      inner.receives.map((r) => r.max),
      [1],
    );
  });

  it('a lone long poll goes through as asked, and a failed receive rejects every loop waiting on it', async () => {
    const inner = new FakeSource();
    const q = queue('q');
    const shared = new SharedReceiveSource(inner);
    assert.deepEqual(await shared.receive(q, { max: 1, waitSec: 1 }), []);
    assert.equal(inner.receives[0]?.waitSec, 1);
    inner.receiveError = () => Object.assign(new Error('down'), { name: 'InternalError' });
    await assert.rejects(shared.receive(q, { max: 1, waitSec: 0 }), { message: 'down' });
    const gated = new GatedSource();
    gated.gateLongPolls = true;
    gated.receiveError = () => Object.assign(new Error('down'), { name: 'InternalError' });
    const sharedGated = new SharedReceiveSource(gated);
    const polls = Array.from({ length: 12 }, () => sharedGated.receive(q, { max: 1, waitSec: 20 }));
    await tick();
    gated.open();
    for (const p of polls) await assert.rejects(p, { message: 'down' });
    assert.equal(gated.receives.length, 10, 'the two loops waiting beyond the ten polls get the failure too');
  });
});
