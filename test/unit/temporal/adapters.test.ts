import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvokeCommand, LambdaClient, ResourceNotFoundException, ServiceException, TooManyRequestsException } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import Long from 'long';
import { createTaskQueueStatsReader, toTargets, toTaskTypeStats, type StatsRpc } from '../../../src/temporal/task-queue-stats.ts';
import { createLambdaWorkerInvoker } from '../../../src/temporal/worker-invoker.ts';

describe('task queue statistics', () => {
  it('converts a DescribeTaskQueue response (Longs, durations, timestamps)', () => {
    const stats = toTaskTypeStats({
      pollers: [
        { identity: 'a', lastAccessTime: { seconds: Long.fromNumber(1_700_000_000), nanos: 250_000_000 } },
        { identity: 'b', lastAccessTime: { seconds: Long.fromNumber(1_700_000_005), nanos: 0 } },
      ],
      stats: {
        approximateBacklogCount: Long.fromNumber(42),
        approximateBacklogAge: { seconds: Long.fromNumber(3), nanos: 500_000_000 },
        tasksAddRate: 2.5,
        tasksDispatchRate: 1.25,
      },
      statsByPriorityKey: {},
    });
    assert.deepEqual(stats, {
      backlog: 42,
      backlogAgeMs: 3_500,
      addRatePerSec: 2.5,
      dispatchRatePerSec: 1.25,
      known: true,
      byPriority: new Map(),
      rateLimitPerSec: undefined,
      pollers: 2,
      lastPollAt: 1_700_000_005_000,
      pollerInfos: [
        { identity: 'a', lastAccessAt: 1_700_000_000_250, buildId: undefined },
        { identity: 'b', lastAccessAt: 1_700_000_005_000, buildId: undefined },
      ],
    });
  });

  it('reads the effective rate limit, and a zero or absent one as no limit', () => {
    const rate = (effectiveRateLimit: { requestsPerSecond?: number } | null) =>
      toTaskTypeStats({ pollers: [], stats: {}, statsByPriorityKey: {}, effectiveRateLimit }).rateLimitPerSec;
    assert.equal(rate({ requestsPerSecond: 0.5 }), 0.5);
    assert.equal(rate({ requestsPerSecond: 0 }), undefined);
    assert.equal(rate({}), undefined);
    assert.equal(rate(null), undefined);
  });

  it('reads statistics per priority key, and a response without stats as unknown', () => {
    const stats = toTaskTypeStats({
      pollers: [],
      stats: { approximateBacklogCount: Long.fromNumber(5) },
      statsByPriorityKey: {
        '1': { approximateBacklogCount: Long.fromNumber(2), approximateBacklogAge: { seconds: Long.fromNumber(4), nanos: 0 } },
        '5': { approximateBacklogCount: Long.fromNumber(3), tasksAddRate: 1.5 },
      },
    });
    assert.equal(stats.known, true);
    assert.deepEqual(
      [...stats.byPriority],
      [
        [1, { backlog: 2, backlogAgeMs: 4_000, addRatePerSec: 0, dispatchRatePerSec: 0 }],
        [5, { backlog: 3, backlogAgeMs: 0, addRatePerSec: 1.5, dispatchRatePerSec: 0 }],
      ],
    );
    // Temporal Cloud's unloaded task queue: the response carries no stats at all.
    const unloaded = toTaskTypeStats({ pollers: [], statsByPriorityKey: {} });
    assert.equal(unloaded.known, false);
    assert.equal(unloaded.backlog, 0);
  });

  it('reads an empty queue (no stats fields, no pollers) as zeros', () => {
    assert.deepEqual(toTaskTypeStats({ pollers: [], stats: { approximateBacklogAge: {} }, statsByPriorityKey: {} }), {
      backlog: 0,
      backlogAgeMs: 0,
      addRatePerSec: 0,
      dispatchRatePerSec: 0,
      known: true,
      byPriority: new Map(),
      rateLimitPerSec: undefined,
      pollers: 0,
      lastPollAt: undefined,
      pollerInfos: [],
    });
  });

  it('asks for workflow and activity tasks with stats and sums them', async () => {
    const requests: unknown[] = [];
    const describeTaskQueue: StatsRpc['describeTaskQueue'] = async (request) => {
      requests.push(request);
      const activity = Number(request.taskQueueType) === 2;
      return {
        pollers: activity ? [{ lastAccessTime: { seconds: Long.fromNumber(100), nanos: 0 } }] : [],
        stats: { approximateBacklogCount: Long.fromNumber(activity ? 3 : 4), tasksAddRate: 1, tasksDispatchRate: activity ? 0.5 : 0 },
        statsByPriorityKey: {},
      };
    };
    const reader = createTaskQueueStatsReader({ describeTaskQueue, describeVersion: () => assert.fail('unversioned') }, 'payments');
    const stats = await reader.read('orders', new AbortController().signal);
    assert.deepEqual(requests, [
      { namespace: 'payments', taskQueue: { name: 'orders', kind: 1 }, taskQueueType: 1, reportStats: true },
      { namespace: 'payments', taskQueue: { name: 'orders', kind: 1 }, taskQueueType: 2, reportStats: true },
    ]);
    assert.deepEqual(stats.versions, []);
    assert.deepEqual(toTargets(stats), [
      {
        key: '',
        version: undefined,
        observation: {
          statsKnown: true,
          backlog: 7,
          backlogAgeMs: 0,
          addRatePerSec: 2,
          dispatchRatePerSec: 0.5,
          lastPollAt: 100_000,
          pollers: [{ identity: '', lastAccessAt: 100_000 }],
          byType: [
            { backlog: 4, backlogAgeMs: 0, addRatePerSec: 1, dispatchRatePerSec: 0, rateLimitPerSec: undefined },
            { backlog: 3, backlogAgeMs: 0, addRatePerSec: 1, dispatchRatePerSec: 0.5, rateLimitPerSec: undefined },
          ],
        },
      },
    ]);
  });

  it('passes a failure through to the controller', async () => {
    const fail = async (): Promise<never> => {
      throw new Error('14 UNAVAILABLE: connection refused');
    };
    const reader = createTaskQueueStatsReader({ describeTaskQueue: fail, describeVersion: fail }, 'default');
    await assert.rejects(reader.read('orders', new AbortController().signal), /UNAVAILABLE/);
  });
});

describe('Lambda worker invoker', () => {
  const payload = {
    source: 'workerless.temporal-spillover',
    namespace: 'default',
    taskQueue: 'orders',
    requestedAt: 1,
    expiresAt: 2,
    startBy: 2,
  } as const;

  it('invokes asynchronously (Event) with the task queue in the payload', async () => {
    const lambda = mockClient(LambdaClient);
    lambda.on(InvokeCommand).resolves({ StatusCode: 202, $metadata: { requestId: 'req-1' } });
    const outcome = await createLambdaWorkerInvoker(new LambdaClient({ region: 'us-east-1' })).invoke(
      'worker:live',
      payload,
      new AbortController().signal,
    );
    assert.deepEqual(outcome, { kind: 'invoked', requestId: 'req-1' });
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    assert.equal(input?.FunctionName, 'worker:live');
    assert.equal(input?.InvocationType, 'Event');
    assert.deepEqual(JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array)), payload);
    lambda.restore();
  });

  it('classifies throttling, a missing function and server errors', async () => {
    const lambda = mockClient(LambdaClient);
    const invoker = createLambdaWorkerInvoker(new LambdaClient({ region: 'us-east-1' }));
    const signal = new AbortController().signal;

    lambda.on(InvokeCommand).rejects(new TooManyRequestsException({ message: 'Rate exceeded', $metadata: { httpStatusCode: 429 } }));
    assert.equal((await invoker.invoke('worker', payload, signal)).kind, 'throttled');

    lambda.on(InvokeCommand).rejects(new ResourceNotFoundException({ message: 'Function not found', $metadata: { httpStatusCode: 404 } }));
    const missing = await invoker.invoke('worker', payload, signal);
    assert.deepEqual(missing, { kind: 'refused', code: 'ResourceNotFoundException', message: 'Function not found' });

    lambda.on(InvokeCommand).rejects(new ServiceException({ message: 'boom', $metadata: { httpStatusCode: 500 } }));
    assert.equal((await invoker.invoke('worker', payload, signal)).kind, 'failed');

    lambda.on(InvokeCommand).rejects(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    assert.equal((await invoker.invoke('worker', payload, signal)).kind, 'failed');
    lambda.restore();
  });

  it('reports an abort during shutdown as aborted, not as a failure', async () => {
    const lambda = mockClient(LambdaClient);
    lambda.on(InvokeCommand).rejects(Object.assign(new Error('aborted'), { name: 'AbortError' }));
    const controller = new AbortController();
    controller.abort();
    const outcome = await createLambdaWorkerInvoker(new LambdaClient({ region: 'us-east-1' })).invoke('worker', payload, controller.signal);
    assert.deepEqual(outcome, { kind: 'interrupted' });
    lambda.restore();
  });
});
