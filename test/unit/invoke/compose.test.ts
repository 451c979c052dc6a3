import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { composeInvoke } from '../../../src/invoke/compose.ts';
import { AdaptiveCeiling } from '../../../src/invoke/adaptive-ceiling.ts';
import { FixedCeiling } from '../../../src/invoke/ceiling.ts';
import { ConcurrencyGate } from '../../../src/invoke/concurrency-gate.ts';
import { FunctionGate } from '../../../src/invoke/function-gate.ts';
import type { FunctionInvoker } from '../../../src/core/function-invoker.ts';
import { noopTracer, type DispatchTracer } from '../../../src/core/telemetry/tracer.ts';
import { ok, silentLogger } from '../../support/factories.ts';
import { invokeContext } from '../../support/invoke-context.ts';

describe('composeInvoke', () => {
  it('runs permit > lease check > span > deadline > call, in that order, once per attempt', async () => {
    const order: string[] = [];
    const invoker: FunctionInvoker = {
      invoke: (_payload, signal) => {
        order.push(`call with a deadline: ${signal instanceof AbortSignal && !signal.aborted}`);
        return Promise.resolve(ok());
      },
      dryRun: () => Promise.resolve(ok()),
    };
    const tracer: DispatchTracer = {
      ...noopTracer,
      process<T>(_q: unknown, _f: string, _m: readonly Message[], run: () => Promise<T>) {
        order.push('span');
        return run();
      },
    };
    const ctx = invokeContext();
    const { onStart: _, ...retryCtx } = ctx;
    const lease = {
      ...ctx.lease,
      confirm: () => {
        order.push('lease check');
        return [];
      },
    };
    const invoke = composeInvoke({
      invoker,
      tracer,
      budget: new ConcurrencyGate([new FixedCeiling(1), new AdaptiveCeiling({ max: 1, min: 1 }, 0)], { now: () => 0, onChange: () => {} }),
      logger: silentLogger,
      functionName: 'fn',
      now: () => 0,
      random: () => 0,
      gate: new FunctionGate({ logger: silentLogger }),
      capacity: { isAside: () => false, stepAside: () => {}, rejoin: () => Promise.resolve() },
      drainOver: new AbortController().signal,
      events: { activity: (_loop, activity) => order.push(`${activity}`), throttled: () => {}, paused: () => {} },
    });
    const outcome = await invoke('{}', { ...retryCtx, lease });
    assert.equal(outcome.kind, 'answered');
    assert.deepEqual(order, ['waiting for an Invoke permit', 'lease check', 'invoke', 'span', 'call with a deadline: true']);
  });
});
