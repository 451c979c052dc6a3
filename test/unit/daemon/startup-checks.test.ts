// The start-up's queue checks (src/daemon/startup-checks.ts), as a running route applies them to the
// queues found after the start: the same problems, logged per queue as a warning, never thrown.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkFoundQueues, failureDestinationProblems } from '../../../src/daemon/startup-checks.ts';
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
