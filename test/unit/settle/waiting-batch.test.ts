// holdWaiting: what an idle poll returned is held under a visibility lease while it waits for a loop, and
// released at a stop (the lease ended, ChangeMessageVisibility 0, the released metric, one warning).
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { VisibilityLease, type LeaseDeps } from '../../../src/settle/visibility-lease.ts';
import { holdWaiting } from '../../../src/settle/waiting-batch.ts';
import { FakeSource, message, queue, recordingLogger } from '../../support/factories.ts';

const START = 1_000_000;
const RELEASED_MSG = 'shutting down while these messages waited for a free loop; released them';

function setup() {
  const source = new FakeSource();
  const { logger, lines } = recordingLogger();
  const now = () => Date.now();
  const leaseDeps: LeaseDeps = { source, logger, now, random: () => 0.5, clock: VisibilityLease.clock(now) };
  const released: [string, number][] = [];
  let reads = 0;
  const hold = holdWaiting({
    leaseDeps: () => {
      reads++;
      return leaseDeps;
    },
    metrics: { released: (q, count) => void released.push([q, count]) },
  });
  return { source, lines, released, hold, reads: () => reads };
}

describe('holdWaiting', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  it('leases a batch from its poll’s answer on, for the visibility its receive stated, and extends it while it waits', async () => {
    const { source, hold, reads } = setup();
    const messages = [message(), message()];
    assert.equal(reads(), 0, 'the leases’ deps are read at the first hold, not when the holder is made');
    const held = hold(queue('q'), messages, 30);
    assert.equal(reads(), 1);
    assert.ok(held.lease instanceof VisibilityLease);
    assert.equal(held.lease.timeoutMs, 30_000);
    assert.equal(held.lease.expiresAt(messages), START + 30_000);
    mock.timers.tick(25_000);
    await new Promise((r) => setImmediate(r));
    assert.ok(
      source.visibilityChanges.some((c) => c.timeoutSec > 0),
      `extended before it ran out: ${JSON.stringify(source.visibilityChanges)}`,
    );
    await held.lease.end();
  });

  it('a release ends the lease, makes the batch visible at once, counts it released and warns once, naming its messages', async () => {
    const { source, lines, released, hold } = setup();
    const messages = [message(), message()];
    // Received from the fake SQS: in flight under their receipt handles.
    for (const m of messages) source.inflight.set(m.ReceiptHandle!, m);
    const held = hold(queue('q'), messages, 30);
    await held.release();
    assert.deepEqual(source.visibilityChanges, [{ queue: 'q', ids: messages.map((m) => m.MessageId!), timeoutSec: 0 }]);
    assert.deepEqual(source.visible.get('q'), messages, 'visible again at once');
    assert.deepEqual(released, [['q', 2]]);
    const warned = lines.filter((l) => l.msg === RELEASED_MSG);
    assert.equal(warned.length, 1);
    assert.equal(warned[0]!.level, 40);
    assert.equal(warned[0]!['queue'], 'q');
    assert.deepEqual(
      warned[0]!['messageIds'],
      messages.map((m) => m.MessageId),
    );
    mock.timers.tick(120_000);
    await new Promise((r) => setImmediate(r));
    assert.equal(source.visibilityChanges.length, 1, 'the lease ended: no extension after the release');
  });
});
