// After a ReceiveMessage answer over its cap, the queue is received from one message at a time, so that the refused
// receive's messages (back after the visibility timeout it stated: "Amazon SQS visibility timeout", SQS Developer
// Guide, https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html)
// are not refused together again on every receive until the redrive policy moves them to the dead-letter queue.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { AwsCallError } from '../../../src/core/errors.ts';
import type { ReceiveOptions, ResolvedQueue } from '../../../src/core/queue.ts';
import { OneAtATime, OneAtATimeSource } from '../../../src/receive/one-at-a-time.ts';
import { SharedReceiveSource } from '../../../src/receive/shared-receive.ts';
import { FakeSource, message, queue, recordingLogger } from '../../support/factories.ts';

const tooLarge = () =>
  new AwsCallError('ReceiveMessage', { kind: 'retryable', code: 'AnswerTooLarge', message: 'answer announces 70000000 bytes' });

/** A queue whose messages are too large to come back ten at a time: a receive of more than one is refused. */
class LargeMessages extends FakeSource {
  override receive(q: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    if (q.name === 'big' && options.max > 1) {
      this.receives.push({
        queue: q.name,
        waitSec: options.waitSec,
        max: options.max,
        visibilityTimeoutSec: options.visibilityTimeoutSec,
        ids: [],
      });
      return Promise.reject(tooLarge());
    }
    return super.receive(q, options, signal);
  }
}

describe('OneAtATime', () => {
  it('asks for what the caller wants until a refusal, then for one message for two visibility timeouts', () => {
    const p = new OneAtATime();
    assert.equal(p.max('q', 10, 0), 10);
    assert.equal(p.refused('q', 30, 1_000), 61_000);
    assert.equal(p.max('q', 10, 1_001), 1);
    assert.equal(p.max('q', 10, 60_999), 1);
    assert.equal(p.max('other', 10, 2_000), 10, 'other queues are not touched');
    assert.equal(p.max('q', 10, 61_000), 10);
    assert.equal(p.max('q', 7, 61_001), 7);
  });

  it('a later refusal never shortens the window', () => {
    const p = new OneAtATime();
    p.refused('q', 300, 0);
    p.refused('q', 1, 1_000);
    assert.equal(p.max('q', 10, 500_000), 1);
  });
});

describe('OneAtATimeSource', () => {
  it('under shared receives: after a refused receive of 10, the calls sent ask for one and every message comes', async () => {
    let now = 0;
    const inner = new LargeMessages();
    inner.now = () => now;
    const big = queue('big', { visibilityTimeoutSec: 30 });
    inner.push('big', ...Array.from({ length: 10 }, () => message()));
    const { logger, lines } = recordingLogger();
    const source = new SharedReceiveSource(new OneAtATimeSource(inner, { logger, now: () => now }));
    await assert.rejects(source.receive(big, { max: 10, waitSec: 0, visibilityTimeoutSec: 45 }), AwsCallError);
    const warn = lines.find((l) => l.msg.startsWith('ReceiveMessage answer over its cap'));
    assert.equal(warn?.['queue'], 'big');
    assert.equal(warn?.['forMs'], 90_000, 'two of the visibility timeouts the refused receive stated');
    const got: Message[] = [];
    for (let i = 0; i < 10; i++) {
      now += 1_000;
      got.push(...(await source.receive(big, { max: 10, waitSec: 0, visibilityTimeoutSec: 45 })));
    }
    assert.equal(got.length, 10);
    assert.deepEqual(
      inner.receives.map((r) => r.max),
      [10, ...Array<number>(10).fill(1)],
    );
  });

  it('other errors, and other queues, keep asking for what the caller wants', async () => {
    const inner = new LargeMessages();
    inner.receiveError = (name) =>
      name === 'flaky' ? new AwsCallError('ReceiveMessage', { kind: 'retryable', code: 'InternalError', message: '' }) : undefined;
    const source = new OneAtATimeSource(inner, recordingLogger());
    await assert.rejects(source.receive(queue('flaky'), { max: 10, waitSec: 0 }));
    await assert.rejects(source.receive(queue('big'), { max: 10, waitSec: 0 }));
    await source.receive(queue('flaky'), { max: 10, waitSec: 0 }).catch(() => undefined);
    await source.receive(queue('small'), { max: 10, waitSec: 0 });
    assert.deepEqual(
      inner.receives.map((r) => [r.queue, r.max]),
      [
        ['flaky', 10],
        ['big', 10],
        ['flaky', 10],
        ['small', 10],
      ],
    );
  });
});
