// Operations over several routes: the daemon's state is the worst of its pools', and probes name the route.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';
import type { LoopActivity } from '../../../src/dispatch/loop-activity.ts';
import { Operations, type DispatcherView } from '../../../src/operator/operations.ts';
import { silentLogger } from '../../support/factories.ts';

function operations(): Operations {
  const env = {
    AWS_REGION: 'us-east-1',
    WORKERLESS_ROUTES: JSON.stringify([
      { function: 'a-fn', queues: 'a' },
      { function: 'b-fn', queues: 'b1,b2' },
    ]),
  };
  const r = resolveConfig(collectOptions([], env, OPTIONS).raw, env);
  assert.ok(r.ok);
  return new Operations(r.config, silentLogger, '1.0.0');
}

function view(
  functionName: string,
  overrides: Partial<ReturnType<DispatcherView['status']>> = {},
  loops: (LoopActivity | undefined)[] = [],
): DispatcherView {
  return { status: () => ({ functionName, state: 'running', functionPaused: false, receivable: true, loops, ...overrides }) };
}

describe('Operations with several routes', () => {
  it('running and ready while every route runs; the snapshot lists every function and queue', () => {
    const ops = operations();
    assert.equal(ops.state(), 'starting');
    ops.running([view('a-fn'), view('b-fn')]);
    assert.equal(ops.state(), 'running');
    assert.deepEqual(ops.readiness(), { ok: true, reasons: [] });
    const snap = ops.snapshot();
    assert.deepEqual(snap.functions, ['a-fn', 'b-fn']);
    assert.deepEqual(
      snap.queues.map((q) => q.name),
      ['a', 'b1', 'b2'],
    );
  });

  it('a paused function or a route that cannot receive makes the daemon not ready, naming the function', () => {
    const ops = operations();
    ops.running([view('a-fn', { functionPaused: true }), view('b-fn')]);
    assert.equal(ops.state(), 'paused');
    assert.deepEqual(ops.readiness().reasons, ['function a-fn is paused: it cannot be invoked (see the logs)']);
    ops.running([view('a-fn'), view('b-fn', { receivable: false })]);
    assert.deepEqual(ops.readiness().reasons, ['no queue of b-fn can be received from (every ReceiveMessage is failing)']);
  });

  it('failed if any route failed, stopped only once all have stopped', () => {
    const ops = operations();
    ops.running([view('a-fn', { state: 'failed' }), view('b-fn', { state: 'draining' })]);
    assert.equal(ops.state(), 'failed');
    ops.running([view('a-fn', { state: 'stopped' }), view('b-fn', { state: 'draining' })]);
    assert.equal(ops.state(), 'draining');
    ops.running([view('a-fn', { state: 'stopped' }), view('b-fn', { state: 'stopped' })]);
    assert.equal(ops.state(), 'stopped');
  });

  it('liveness names the route of a stuck loop', () => {
    const ops = operations();
    // Liveness compares on the monotonic clock (src/util/clock.ts), as the dispatchers record their steps.
    const now = performance.now();
    const stuck: LoopActivity = { activity: 'invoke', since: now - 60_000, deadlineAt: now - 1_000 };
    ops.running([view('a-fn', {}, [undefined]), view('b-fn', {}, [undefined, stuck])]);
    const probe = ops.liveness();
    assert.equal(probe.ok, false);
    assert.match(probe.reasons[0]!, /^worker loop 2 stuck in b-fn: invoke for 6\d s, past its deadline$/);
  });
});
