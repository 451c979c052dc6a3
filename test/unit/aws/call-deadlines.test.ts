import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { CallDeadlines } from '../../../src/aws/signed-http.ts';

const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('CallDeadlines', () => {
  it('aborts a call still open at its deadline with a TimeoutError, and no sooner', async () => {
    const deadlines = new CallDeadlines();
    // When each abort happened, read in its listener: a busy host may wake a test's own sleep late, so the
    // test does not look at a fixed moment (it once slept 20 ms, woke after 40, and saw the first one aborted).
    const abortedAt = (signal: AbortSignal) =>
      new Promise<number>((resolve) => signal.addEventListener('abort', () => resolve(performance.now()), { once: true }));
    const started = performance.now();
    const late = deadlines.start(80);
    const early = deadlines.start(40);
    let lateRunning: boolean | undefined;
    early.signal.addEventListener('abort', () => (lateRunning = !late.signal.aborted), { once: true });
    const [earlyAt, lateAt] = await Promise.all([abortedAt(early.signal), abortedAt(late.signal)]);
    assert.ok(earlyAt - started >= 39, `aborted ${earlyAt - started} ms in, deadline 40 ms`);
    assert.equal(lateRunning, true, 'the later one still runs when the earlier one is aborted');
    assert.equal((early.signal.reason as Error).name, 'TimeoutError');
    assert.ok(lateAt - started >= 79, `aborted ${lateAt - started} ms in, deadline 80 ms`);
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
