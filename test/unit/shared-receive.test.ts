import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { SharedReceiveSource } from '../../src/queues/shared-receive.ts';
import type { ReceiveOptions, ResolvedQueue } from '../../src/queues/sqs-source.ts';
import { FakeSource, message, queue } from '../support/factories.ts';

/** A FakeSource whose receives wait until released, so several loops can ask while one is in flight. */
class GatedSource extends FakeSource {
  gates: (() => void)[] = [];
  override async receive(q: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    if (options.waitSec === 0) await new Promise<void>((r) => this.gates.push(r));
    return super.receive(q, options, signal);
  }
  release(): void {
    const gates = this.gates;
    this.gates = [];
    for (const g of gates) g();
  }
}

const tick = () => new Promise((r) => setImmediate(r));

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
    inner.release();
    assert.equal((await first).length, 1);
    await tick();
    inner.release();
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
    inner.release();
    await blocker;
    await tick();
    inner.release();
    await tick();
    inner.release();
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
    inner.release();
    assert.deepEqual([(await first).length, (await second).length], [1, 1]);
    assert.deepEqual(
      inner.receives.map((r) => r.max),
      [1, 1],
    );
  });

  it('passes long polls through and rejects every waiter of a failed receive', async () => {
    const inner = new FakeSource();
    const q = queue('q');
    const shared = new SharedReceiveSource(inner);
    assert.deepEqual(await shared.receive(q, { max: 1, waitSec: 1 }), []);
    assert.equal(inner.receives[0]?.waitSec, 1);
    inner.receiveError = () => Object.assign(new Error('down'), { name: 'InternalError' });
    await assert.rejects(shared.receive(q, { max: 1, waitSec: 0 }), { message: 'down' });
  });
});
