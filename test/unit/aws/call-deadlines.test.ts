import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { CallDeadlines } from '../../../src/aws/signed-http.ts';

const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('CallDeadlines', () => {
  it('aborts a call still open at its deadline with a TimeoutError, and no sooner', async () => {
    const deadlines = new CallDeadlines();
    const started = performance.now();
    const late = deadlines.start(80);
    const early = deadlines.start(40);
    await sleep(20);
    assert.equal(early.signal.aborted, false);
    await new Promise((resolve) => early.signal.addEventListener('abort', resolve, { once: true }));
    assert.ok(performance.now() - started >= 39, 'not before its deadline');
    assert.equal(late.signal.aborted, false, 'the later one still runs');
    assert.equal((early.signal.reason as Error).name, 'TimeoutError');
    await new Promise((resolve) => late.signal.addEventListener('abort', resolve, { once: true }));
    assert.ok(performance.now() - started >= 79);
    assert.equal((late.signal.reason as Error).name, 'TimeoutError');
  });

  it('a cleared deadline never aborts, and leaves no listener on the parent', async () => {
    const deadlines = new CallDeadlines();
    const parent = new AbortController();
    const call = deadlines.start(30, parent.signal);
    assert.equal(getEventListeners(parent.signal, 'abort').length, 1);
    call.clear();
    assert.equal(getEventListeners(parent.signal, 'abort').length, 0);
    await sleep(60);
    parent.abort(new Error('stop'));
    assert.equal(call.signal.aborted, false);
  });

  it("follows its parent: aborted with the parent's reason, at once if the parent already is", () => {
    const deadlines = new CallDeadlines();
    const parent = new AbortController();
    const call = deadlines.start(60_000, parent.signal);
    const reason = new Error('shutting down');
    parent.abort(reason);
    assert.equal(call.signal.reason, reason);
    call.clear();
    const after = deadlines.start(60_000, parent.signal);
    assert.equal(after.signal.reason, reason);
    after.clear();
  });

  it("one timer for every open call, none holding the process once they are over (the heap's timer is unref'd)", () => {
    const before = timeouts();
    const deadlines = new CallDeadlines();
    const calls = Array.from({ length: 100 }, (_, i) => deadlines.start(5_000 + i));
    assert.equal(timeouts(), before + 1);
    for (const call of calls) call.clear();
    assert.equal(timeouts(), before);
    assert.ok(calls.every((c) => !c.signal.aborted));
  });
});
