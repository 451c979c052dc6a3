import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { AwsCallError } from '../../../src/core/errors.ts';
import { QueueVisibility } from '../../../src/dispatch/queue-visibility.ts';
import { queue, recordingLogger } from '../../support/factories.ts';

const CHANGED_MSG = "the queue's visibility timeout changed; receives from now on state it, leases already open keep theirs";
const FAILED_MSG = "could not re-read the queue's visibility timeout; receives keep stating the last one read";

/** GetQueueAttributes answering from `timeouts` by URL (or throwing `fail`), recording each call. */
function lookup(timeouts: Map<string, string>) {
  const calls: { url: string; names: readonly string[] }[] = [];
  let fail: Error | undefined;
  return {
    calls,
    failWith: (err: Error | undefined) => (fail = err),
    queueAttributes: async (url: string, names: readonly string[]) => {
      calls.push({ url, names });
      if (fail) throw fail;
      return { VisibilityTimeout: timeouts.get(url) ?? '30' };
    },
  };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('QueueVisibility', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'] }));
  afterEach(() => mock.timers.reset());

  it("re-reads each queue's timeout every period; a change applies from then on and is logged once", async () => {
    const a = queue('a', { visibilityTimeoutSec: 60 });
    const b = queue('b', { visibilityTimeoutSec: 20 });
    const timeouts = new Map([
      [a.url, '60'],
      [b.url, '20'],
    ]);
    const sqs = lookup(timeouts);
    const { logger, lines } = recordingLogger();
    const visibility = new QueueVisibility([a, b], undefined, { lookup: sqs, logger });
    const stop = new AbortController();
    const running = visibility.run(10_000, stop.signal);
    timeouts.set(a.url, '5');
    mock.timers.tick(9_999);
    await flush();
    assert.equal(sqs.calls.length, 0);
    assert.equal(visibility.timeoutSec(a), 60, 'the start-up value until the next read');
    mock.timers.tick(1);
    for (let i = 0; i < 5; i++) await flush();
    assert.deepEqual(
      sqs.calls.map((c) => [c.url, c.names]),
      [
        [a.url, ['VisibilityTimeout']],
        [b.url, ['VisibilityTimeout']],
      ],
    );
    assert.equal(visibility.timeoutSec(a), 5);
    assert.equal(visibility.timeoutSec(b), 20);
    mock.timers.tick(10_000);
    for (let i = 0; i < 5; i++) await flush();
    assert.equal(sqs.calls.length, 4);
    const changes = lines.filter((l) => l.msg === CHANGED_MSG);
    assert.deepEqual(
      changes.map((l) => [l['queue'], l['fromSec'], l['toSec']]),
      [['a', 60, 5]],
    );
    stop.abort();
    await running;
  });

  it('a failed re-read keeps the last value, with a warning', async () => {
    const a = queue('a', { visibilityTimeoutSec: 60 });
    const sqs = lookup(new Map([[a.url, '5']]));
    sqs.failWith(
      new AwsCallError('GetQueueAttributes', { kind: 'retryable', code: 'InternalError', message: 'internal error', status: 500 }),
    );
    const { logger, lines } = recordingLogger();
    const visibility = new QueueVisibility([a], undefined, { lookup: sqs, logger });
    await visibility.refresh();
    assert.equal(visibility.timeoutSec(a), 60);
    assert.equal(lines.filter((l) => l.msg === FAILED_MSG).length, 1);
  });

  it('with --visibility-timeout, that value is stated and nothing is ever re-read', async () => {
    const a = queue('a', { visibilityTimeoutSec: 45 });
    const sqs = lookup(new Map([[a.url, '5']]));
    const visibility = new QueueVisibility([a], 45, { lookup: sqs, logger: recordingLogger().logger });
    await visibility.refresh();
    const stop = new AbortController();
    const running = visibility.run(1_000, stop.signal);
    mock.timers.tick(5_000);
    await flush();
    stop.abort();
    await running;
    assert.equal(sqs.calls.length, 0);
    assert.equal(visibility.timeoutSec(a), 45);
  });

  it('one read per queue per period serves the backlog gauges too: at once, then every period, also with --visibility-timeout', async () => {
    const a = queue('a', { visibilityTimeoutSec: 30 });
    const calls: { url: string; names: readonly string[] }[] = [];
    const sqs = {
      queueAttributes: async (url: string, names: readonly string[]) => {
        calls.push({ url, names });
        return {
          VisibilityTimeout: '30',
          ApproximateNumberOfMessages: '7',
          ApproximateNumberOfMessagesNotVisible: '2',
          ApproximateNumberOfMessagesDelayed: '1',
        };
      },
    };
    const seen: unknown[] = [];
    const { logger } = recordingLogger();
    for (const override of [undefined, 30]) {
      calls.length = 0;
      seen.length = 0;
      const visibility = new QueueVisibility([a], override, {
        lookup: sqs,
        logger,
        onBacklog: (q, counts) => seen.push([q.name, counts]),
      });
      const stop = new AbortController();
      const running = visibility.run(10_000, stop.signal);
      for (let i = 0; i < 5; i++) await flush();
      assert.deepEqual(seen, [['a', { visible: 7, notVisible: 2, delayed: 1 }]], 'read at once, for the gauges');
      mock.timers.tick(10_000);
      for (let i = 0; i < 5; i++) await flush();
      assert.equal(calls.length, 2, 'one call per queue per period');
      const names = override === undefined ? ['VisibilityTimeout'] : [];
      assert.deepEqual(calls[0]?.names, [
        ...names,
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ]);
      stop.abort();
      await running;
    }
  });
});

describe('QueueVisibility: the redrive policy (for a failure destination)', () => {
  const policy = (n: number) => JSON.stringify({ deadLetterTargetArn: 'arn:aws:sqs:us-east-2:123456789012:dlq', maxReceiveCount: n });

  it('re-reads the RedrivePolicy with the timeout, and with --visibility-timeout too; a change is followed and logged', async () => {
    const a = queue('a', { visibilityTimeoutSec: 45, maxReceiveCount: 5 });
    let current: string | undefined = policy(5);
    const calls: (readonly string[])[] = [];
    const sqs = {
      queueAttributes: (_url: string, names: readonly string[]): Promise<Record<string, string>> => {
        calls.push(names);
        const attrs: Record<string, string> = {};
        if (current !== undefined) attrs['RedrivePolicy'] = current;
        return Promise.resolve(attrs);
      },
    };
    const { logger, lines } = recordingLogger();
    const visibility = new QueueVisibility([a], 45, { lookup: sqs, logger, redrive: true });
    assert.equal(visibility.maxReceiveCount(a), 5);
    current = policy(2);
    await visibility.refresh();
    assert.deepEqual(calls, [['RedrivePolicy']], 'only the redrive policy: the timeout is --visibility-timeout');
    assert.equal(visibility.maxReceiveCount(a), 2);
    current = undefined;
    await visibility.refresh();
    assert.equal(visibility.maxReceiveCount(a), undefined, 'the policy was removed');
    assert.equal(visibility.timeoutSec(a), 45);
    assert.deepEqual(
      lines
        .filter((l) => l.msg.startsWith("the queue's redrive policy changed"))
        .map((l) => [l['fromMaxReceiveCount'], l['toMaxReceiveCount']]),
      [
        [5, 2],
        [2, null],
      ],
    );
  });

  it('without a failure destination the read is as before: the visibility timeout only', async () => {
    const a = queue('a', { visibilityTimeoutSec: 30 });
    const sqs = lookup(new Map([[a.url, '30']]));
    const visibility = new QueueVisibility([a], undefined, { lookup: sqs, logger: recordingLogger().logger });
    await visibility.refresh();
    assert.deepEqual(
      sqs.calls.map((c) => c.names),
      [['VisibilityTimeout']],
    );
  });
});

describe('QueueVisibility with thousands of queues', () => {
  it('a refresh has at most 16 re-reads on their way at once, and reads every queue', async () => {
    const queues = Array.from({ length: 100 }, (_, i) => queue(`q${i}`));
    let open = 0;
    let most = 0;
    const read: string[] = [];
    const sqs = {
      queueAttributes: async (url: string) => {
        open += 1;
        most = Math.max(most, open);
        await new Promise((r) => setImmediate(r));
        open -= 1;
        read.push(url);
        return { VisibilityTimeout: '30' };
      },
    };
    await new QueueVisibility(queues, undefined, { lookup: sqs, logger: recordingLogger().logger }).refresh();
    assert.equal(most, 16);
    assert.equal(read.length, 100);
  });

  it('a quiet queue (its poll came back empty) is re-read at every fifth refresh only, the first included', async () => {
    const idle = queue('idle');
    const busy = queue('busy');
    const sqs = lookup(new Map());
    const visibility = new QueueVisibility([idle, busy], undefined, {
      lookup: sqs,
      logger: recordingLogger().logger,
      quiet: (q) => q === idle,
    });
    for (let k = 0; k < 11; k++) await visibility.refresh();
    const count = (url: string) => sqs.calls.filter((c) => c.url === url).length;
    assert.equal(count(busy.url), 11);
    assert.equal(count(idle.url), 3, 'refreshes 1, 6 and 11');
  });
});
