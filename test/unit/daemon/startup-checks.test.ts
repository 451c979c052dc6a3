// The start-up's queue checks (src/daemon/startup-checks.ts), as a running route applies them to the
// queues found after the start: the same problems, logged per queue as a warning, never thrown.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkFoundQueues, failureDestinationProblems, resolveQueues } from '../../../src/daemon/startup-checks.ts';
import type { QueueLookup } from '../../../src/core/queue.ts';
import { MISSING_LAST_RECEIVE, parseDestination, type DestinationSettings } from '../../../src/settle/failure-destination.ts';
import { queue, recordingLogger } from '../../support/factories.ts';

const DEST = parseDestination('https://sqs.us-east-1.amazonaws.com/123456789012/failures');

describe('failureDestinationProblems', () => {
  it("names each queue with a destination (its own or the route's) and neither a redrive policy nor max-attempts", () => {
    const route: DestinationSettings = {
      failureDestination: undefined,
      maxAttempts: undefined,
      queueOptions: new Map([
        ['own', { failureDestination: DEST }],
        ['own-attempts', { failureDestination: DEST, maxAttempts: 3 }],
      ]),
    };
    const queues = [queue('own'), queue('own-attempts'), queue('none')];
    assert.deepEqual(failureDestinationProblems(route, queues), [{ queue: 'own', problem: MISSING_LAST_RECEIVE }]);
    const withRouteDestination = { ...route, failureDestination: DEST };
    assert.deepEqual(
      failureDestinationProblems(withRouteDestination, [...queues, queue('redrive', { maxReceiveCount: 5 })]).map((p) => p.queue),
      ['own', 'none'],
    );
  });
});

describe('checkFoundQueues', () => {
  it('logs one warning per queue that fails, naming it and the problem, without an error or a stack; never throws', () => {
    const { logger, lines } = recordingLogger();
    const route: DestinationSettings = { failureDestination: DEST, maxAttempts: undefined, queueOptions: new Map() };
    checkFoundQueues(route, [queue('a'), queue('b', { maxReceiveCount: 4 }), queue('c')], logger);
    assert.deepEqual(
      lines.map((l) => [l['level'], l['queue'], l['problem'], 'err' in l, 'stack' in l]),
      [
        [40, 'a', MISSING_LAST_RECEIVE, false, false],
        [40, 'c', MISSING_LAST_RECEIVE, false, false],
      ],
    );
    checkFoundQueues({ ...route, maxAttempts: 3 }, [queue('d')], logger);
    assert.equal(lines.length, 2, 'with --max-attempts every queue knows its last receive');
  });
});

describe('checkFoundQueues: VisibilityTimeout 0', () => {
  it('warns about a found queue whose visibility timeout is 0, as the start-up does', () => {
    const { logger, lines } = recordingLogger();
    const route: DestinationSettings = { failureDestination: undefined, maxAttempts: undefined, queueOptions: new Map() };
    checkFoundQueues(route, [queue('zero', { visibilityTimeoutSec: 0 }), queue('thirty')], logger);
    assert.deepEqual(
      lines.map((l) => [l['level'], l['queue'], String(l['msg'])]),
      [[40, 'zero', 'queue has VisibilityTimeout 0: a message can be received again while it is processed; set --visibility-timeout']],
    );
  });
});

describe('resolveQueues', () => {
  /** A lookup that answers after a turn, counting the calls open at once. */
  function lookup(failing?: string) {
    const seen = { open: 0, peak: 0, calls: 0 };
    const answer = async <T>(value: () => T): Promise<T> => {
      seen.calls++;
      seen.open++;
      seen.peak = Math.max(seen.peak, seen.open);
      await new Promise((resolve) => setImmediate(resolve));
      seen.open--;
      return value();
    };
    const queues: QueueLookup = {
      queueUrl: (name) =>
        answer(() => {
          if (name === failing) throw Object.assign(new Error('The specified queue does not exist.'), { name: 'QueueDoesNotExist' });
          return `http://sqs.local/000000000000/${name}`;
        }),
      queueAttributes: (url) =>
        answer(() => ({ QueueArn: `arn:aws:sqs:us-east-1:000000000000:${url.slice(url.lastIndexOf('/') + 1)}`, VisibilityTimeout: '30' })),
    };
    return { queues, seen };
  }
  const specs = (n: number) => Array.from({ length: n }, (_, i) => ({ ref: `q-${i}`, weight: 1 }));

  it('resolves 1,000 queues 64 at a time, in their order (all at once, 10,000 queues outran a local SQS at start-up)', async () => {
    const { queues, seen } = lookup();
    const resolved = await resolveQueues(queues, specs(1000), undefined);
    assert.deepEqual(
      resolved.map((q) => q.name),
      specs(1000).map((s) => s.ref),
    );
    assert.equal(seen.peak, 64);
    assert.equal(seen.calls, 2000);
  });

  it('stops at the first queue that cannot be resolved, naming it', async () => {
    const { queues, seen } = lookup('q-100');
    await assert.rejects(resolveQueues(queues, specs(1000), undefined), /q-100/);
    assert.ok(seen.calls < 400, `${seen.calls} calls after the failure`);
  });
});
