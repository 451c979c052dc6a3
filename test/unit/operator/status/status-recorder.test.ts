import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { MetricDatum } from '../../../../src/core/telemetry/metrics-sink.ts';
import { FUNCTION_METRICS, SQS_METRICS } from '../../../../src/core/telemetry/metric-names.ts';
import type { QueueBucket, QueueStatus } from '../../../../src/operator/status/snapshot.ts';
import { RecentErrors, StatusRecorder } from '../../../../src/operator/status/status-recorder.ts';
import { TEXT_CAP_BYTES } from '../../../../src/util/cap-text.ts';

const T0 = 1_700_000_000_000; // a multiple of 5000, so bucket starts are easy to read

/** A datum as components record it; `queue: null` leaves the Queue dimension out. */
function datum(name: string, value: number, queue: string | null = 'orders'): MetricDatum {
  return { name, unit: 'Count', value, dimensions: queue === null ? { Function: 'fn' } : { Function: 'fn', Queue: queue } };
}

/** A recorder on a hand-moved clock. */
function recorderAt(start = T0, options: { bucketMs?: number; windowMs?: number; queues?: string[] } = {}) {
  const clock = { now: start };
  const recorder = new StatusRecorder({ ...options, now: () => clock.now });
  return { recorder, clock };
}

function queue(recorder: StatusRecorder, name: string): QueueStatus {
  const q = recorder.queues().find((x) => x.name === name);
  assert.ok(q, `queue ${name} is in the snapshot`);
  return q;
}

const nonEmpty = (buckets: readonly QueueBucket[]) => buckets.filter((b) => b.polled + b.invoked + b.failed + b.throttled + b.deleted > 0);

describe('StatusRecorder: buckets', () => {
  it('counts each SQS event metric into the bucket of the time it was recorded', () => {
    const { recorder, clock } = recorderAt(T0 + 1200);
    recorder.record(datum(SQS_METRICS.polled.cloudwatch, 10));
    recorder.record(datum(SQS_METRICS.invoked.cloudwatch, 10));
    recorder.record(datum(SQS_METRICS.deleted.cloudwatch, 8));
    recorder.record(datum(SQS_METRICS.failedInvoke.cloudwatch, 2));
    recorder.record(datum(SQS_METRICS.throttled.cloudwatch, 1));
    clock.now = T0 + 4999;
    recorder.record(datum(SQS_METRICS.polled.cloudwatch, 3));
    clock.now = T0 + 5000;
    recorder.record(datum(SQS_METRICS.polled.cloudwatch, 4));

    const { buckets } = queue(recorder, 'orders');
    assert.equal(buckets.length, 60, '5 minutes of 5 s buckets');
    assert.deepEqual(buckets.at(-1), { t: T0 + 5000, polled: 4, invoked: 0, failed: 0, throttled: 0, deleted: 0 });
    assert.deepEqual(buckets.at(-2), { t: T0, polled: 13, invoked: 10, failed: 2, throttled: 1, deleted: 8 });
    assert.equal(nonEmpty(buckets).length, 2);
  });

  it('returns one bucket per bucketMs, oldest first, ending with the current one, zeros where nothing happened', () => {
    const { recorder, clock } = recorderAt(T0, { bucketMs: 1000, windowMs: 10_000 });
    recorder.record(datum(SQS_METRICS.invoked.cloudwatch, 1));
    clock.now = T0 + 3500;
    recorder.record(datum(SQS_METRICS.invoked.cloudwatch, 2));
    const { buckets } = queue(recorder, 'orders');
    assert.deepEqual(
      buckets.map((b) => b.t),
      Array.from({ length: 10 }, (_, i) => T0 + 3000 - (9 - i) * 1000),
    );
    assert.deepEqual(
      buckets.map((b) => b.invoked),
      [0, 0, 0, 0, 0, 0, 1, 0, 0, 2],
    );
  });

  it('forgets buckets older than the window, including a slot that is reused one lap later', () => {
    const { recorder, clock } = recorderAt(T0, { bucketMs: 1000, windowMs: 5000 });
    recorder.record(datum(SQS_METRICS.failedInvoke.cloudwatch, 7));
    clock.now = T0 + 4999; // still in the window (5 buckets: T0 .. T0+4000)
    assert.equal(queue(recorder, 'orders').buckets[0]?.failed, 7);
    clock.now = T0 + 5000; // T0's bucket left the window; its slot is the current one now
    assert.deepEqual(nonEmpty(queue(recorder, 'orders').buckets), []);
    recorder.record(datum(SQS_METRICS.failedInvoke.cloudwatch, 1));
    assert.deepEqual(
      queue(recorder, 'orders').buckets.map((b) => b.failed),
      [0, 0, 0, 0, 1],
      'the reused slot starts from zero, not from the 7 of five seconds earlier',
    );
    clock.now = T0 + 60 * 60_000; // an hour of silence
    assert.deepEqual(nonEmpty(queue(recorder, 'orders').buckets), []);
  });

  it('keeps queues apart and shows the configured queues first, in order, before any traffic', () => {
    const { recorder } = recorderAt(T0, { queues: ['high', 'low'] });
    recorder.record(datum(SQS_METRICS.polled.cloudwatch, 5, 'extra'));
    recorder.record(datum(SQS_METRICS.polled.cloudwatch, 2, 'low'));
    assert.deepEqual(
      recorder.queues().map((q) => q.name),
      ['high', 'low', 'extra'],
    );
    assert.equal(queue(recorder, 'high').buckets.at(-1)?.polled, 0);
    assert.equal(queue(recorder, 'low').buckets.at(-1)?.polled, 2);
    assert.equal(queue(recorder, 'extra').buckets.at(-1)?.polled, 5);
  });

  it('showQueues: queues found while running are shown, with empty buckets, before any traffic, and once each', () => {
    const { recorder } = recorderAt(T0, { queues: ['listed'] });
    recorder.showQueues(['tenant-1', 'tenant-2']);
    recorder.showQueues(['tenant-2', 'tenant-3']);
    assert.deepEqual(
      recorder.queues().map((q) => q.name),
      ['listed', 'tenant-1', 'tenant-2', 'tenant-3'],
    );
    assert.deepEqual(nonEmpty(queue(recorder, 'tenant-3').buckets), []);
    assert.equal(queue(recorder, 'tenant-3').buckets.length, 60, 'five minutes of 5 s buckets');
    recorder.record(datum(SQS_METRICS.polled.cloudwatch, 4, 'tenant-3'));
    assert.equal(queue(recorder, 'tenant-3').buckets.at(-1)?.polled, 4);
    const snapshot = recorder.snapshot('running', { version: '0', functions: ['fn'], startedAt: T0 });
    assert.equal(snapshot.summary.queues, 4);
    assert.equal(snapshot.summary.active, 1);
  });

  it('keeps the latest in-flight gauge per queue', () => {
    const { recorder } = recorderAt();
    recorder.record(datum(SQS_METRICS.inFlight.cloudwatch, 10, 'a'));
    recorder.record(datum(SQS_METRICS.inFlight.cloudwatch, 3, 'a'));
    recorder.record(datum(SQS_METRICS.inFlight.cloudwatch, 4, 'b'));
    assert.equal(queue(recorder, 'a').inFlight, 3);
    assert.equal(queue(recorder, 'b').inFlight, 4);
  });

  it('ignores metrics it does not show, datums without a Queue dimension, and non-finite values, without throwing', () => {
    const { recorder } = recorderAt();
    recorder.record(datum(SQS_METRICS.invocationDuration.cloudwatch, 250));
    recorder.record(datum(SQS_METRICS.dropped.cloudwatch, 1));
    recorder.record(datum(FUNCTION_METRICS.concurrencyInUse.cloudwatch, 3, null));
    recorder.record(datum(SQS_METRICS.polled.cloudwatch, 9, null));
    recorder.record(datum('Backlog', 9, null));
    recorder.record(datum(SQS_METRICS.polled.cloudwatch, Number.NaN));
    recorder.record(datum(SQS_METRICS.polled.cloudwatch, Number.POSITIVE_INFINITY));
    assert.deepEqual(
      recorder.queues().map((q) => [q.name, nonEmpty(q.buckets).length]),
      [],
      'no queue appears from datums that are not shown',
    );
    // Old (pre-names.ts) metric names are not counted either.
    recorder.record(datum('MessagesReceived', 1));
    assert.deepEqual(recorder.queues(), []);
  });

  it('rejects a bucket width or window that cannot make a ring', () => {
    assert.throws(() => new StatusRecorder({ bucketMs: 0 }), /bucketMs/);
    assert.throws(() => new StatusRecorder({ bucketMs: 1000, windowMs: 500 }), /windowMs/);
  });

  it('rounds the window up to whole buckets', () => {
    const { recorder } = recorderAt(T0, { bucketMs: 1000, windowMs: 2500, queues: ['q'] });
    assert.equal(queue(recorder, 'q').buckets.length, 3);
  });
});

describe('StatusRecorder: snapshot', () => {
  it('carries the state, meta, clock, bucket width, queues and the recent errors, newest first', () => {
    const clock = { now: T0 + 42 };
    const recentErrors = new RecentErrors({ now: () => clock.now });
    const recorder = new StatusRecorder({ now: () => clock.now, recentErrors, queues: ['orders'] });
    recorder.record(datum(SQS_METRICS.inFlight.cloudwatch, 2));
    recentErrors.write(`${JSON.stringify({ level: 50, time: T0 - 2, msg: 'first' })}\n`);
    recentErrors.write(`${JSON.stringify({ level: 40, time: T0 - 1, msg: 'second' })}\n`);

    const snap = recorder.snapshot('draining', { version: '1.2.3', functions: ['fn'], startedAt: T0 - 1000 });
    assert.equal(snap.state, 'draining');
    assert.equal(snap.version, '1.2.3');
    assert.deepEqual(snap.functions, ['fn']);
    assert.equal(snap.startedAt, T0 - 1000);
    assert.equal(snap.now, T0 + 42);
    assert.equal(snap.bucketMs, 5000);
    assert.deepEqual(
      snap.queues.map((q) => [q.name, q.inFlight, q.buckets.length]),
      [['orders', 2, 60]],
    );
    assert.deepEqual(
      snap.recentErrors.map((e) => e.msg),
      ['second', 'first'],
    );
    // It is what /status.json serves: plain JSON, unchanged by a round trip.
    assert.deepEqual(JSON.parse(JSON.stringify(snap)), snap);
  });

  it('has no recent errors when no RecentErrors is given', () => {
    const { recorder } = recorderAt();
    assert.deepEqual(recorder.snapshot('running', { version: '0', functions: [], startedAt: T0 }).recentErrors, []);
  });
});

describe('RecentErrors', () => {
  it('keeps only the allow-listed fields of a log line, never the body or anything else', () => {
    const errors = new RecentErrors();
    errors.write(
      `${JSON.stringify({
        level: 50,
        time: T0,
        pid: 1,
        hostname: 'h',
        msg: 'Invoke failed; messages stay on the queue',
        queue: 'orders',
        function: 'fn',
        messageIds: ['m-1', 'm-2'],
        err: { kind: 'fatal', code: 'ResourceNotFoundException', message: 'secret detail', stack: 'Error: at x' },
        body: '{"card":"4111 1111 1111 1111"}',
        errorMessage: 'body was {"card":"4111"}',
        payload: 'PAYLOAD',
      })}\n`,
    );
    assert.deepEqual(errors.list(), [
      {
        at: T0,
        msg: 'Invoke failed; messages stay on the queue',
        queue: 'orders',
        code: 'ResourceNotFoundException',
        messageIds: ['m-1', 'm-2'],
      },
    ]);
    assert.doesNotMatch(JSON.stringify(errors.list()), /4111|secret|PAYLOAD|stack/);
  });

  it('takes errorType as the code and reason as the detail', () => {
    const errors = new RecentErrors();
    errors.write(
      `${JSON.stringify({ level: 50, time: T0, msg: 'function error; messages stay on the queue', queue: 'q', errorType: 'TypeError', errorMessage: 'x' })}\n`,
    );
    errors.write(
      `${JSON.stringify({ level: 50, time: T0 + 1, msg: 'invalid batchItemFailures response', queue: 'q', reason: 'batchItemFailures is not a list' })}\n`,
    );
    assert.deepEqual(errors.list(), [
      { at: T0 + 1, msg: 'invalid batchItemFailures response', queue: 'q', detail: 'batchItemFailures is not a list' },
      { at: T0, msg: 'function error; messages stay on the queue', queue: 'q', code: 'TypeError' },
    ]);
  });

  it('is bounded: keeps the newest `capacity` entries, newest first', () => {
    const errors = new RecentErrors({ capacity: 3 });
    for (let i = 1; i <= 7; i++) errors.write(`${JSON.stringify({ level: 50, time: T0 + i, msg: `e${i}` })}\n`);
    assert.deepEqual(
      errors.list().map((e) => e.msg),
      ['e7', 'e6', 'e5'],
    );
    const fifty = new RecentErrors();
    for (let i = 0; i < 120; i++) fifty.write(`${JSON.stringify({ level: 40, time: T0 + i, msg: `e${i}` })}\n`);
    assert.equal(fifty.list().length, 50);
    assert.equal(fifty.list()[0]?.msg, 'e119');
    assert.equal(fifty.list()[49]?.msg, 'e70');
  });

  it('ignores lines below warn and lines that are not JSON objects, and never throws', () => {
    const errors = new RecentErrors();
    errors.write(`${JSON.stringify({ level: 30, time: T0, msg: 'info' })}\n`);
    errors.write(`${JSON.stringify({ level: 'info', time: T0, msg: 'info label' })}\n`);
    errors.write('not json\n');
    errors.write('[1,2]\n');
    errors.write('null\n');
    errors.write('');
    assert.deepEqual(errors.list(), []);
    errors.write(`${JSON.stringify({ level: 'error', msg: 'error label' })}\n`);
    assert.equal(errors.list()[0]?.msg, 'error label');
  });

  it('splits a chunk holding several lines, and takes the clock for a line without a time', () => {
    const errors = new RecentErrors({ now: () => 123 });
    errors.write(
      `${JSON.stringify({ level: 50, msg: 'a' })}\n${JSON.stringify({ level: 50, time: '2026-01-01T00:00:00.000Z', msg: 'b' })}\n`,
    );
    assert.deepEqual(
      errors.list().map((e) => [e.msg, e.at]),
      [
        ['b', Date.parse('2026-01-01T00:00:00.000Z')],
        ['a', 123],
      ],
    );
  });

  it('bounds long strings and the number of message ids, and drops ids that are not strings', () => {
    const errors = new RecentErrors();
    const ids = Array.from({ length: 15 }, (_, i) => `id-${i}`);
    errors.write(
      `${JSON.stringify({ level: 50, time: T0, msg: 'x'.repeat(10_000), queue: 'q', messageIds: [{ nested: true }, null, 7, ...ids] })}\n`,
    );
    const [entry] = errors.list();
    assert.ok(entry);
    // The one cap for text (src/util/cap-text.ts): 1 KiB and a note of what was cut.
    assert.equal(entry.msg, `${'x'.repeat(TEXT_CAP_BYTES)}…[${10_000 - TEXT_CAP_BYTES} bytes cut]`);
    assert.deepEqual(entry.messageIds, ['7', 'id-0', 'id-1', 'id-2', 'id-3', 'id-4', 'id-5', 'id-6', 'id-7', 'id-8']);
  });

  it('works as a pino multistream destination at level warn, next to stdout', () => {
    const errors = new RecentErrors();
    const out: string[] = [];
    const stdout = new Writable({
      write(chunk: Buffer, _enc, cb) {
        out.push(chunk.toString());
        cb();
      },
    });
    const logger = pino({ level: 'info' }, pino.multistream([{ stream: stdout }, { level: 'warn', stream: errors.stream }]));
    const child = logger.child({ component: 'dispatcher' });
    child.info({ queue: 'orders' }, 'batch invoked');
    child.warn({ queue: 'orders', messageIds: ['m-1'] }, 'FIFO batch stopped at a failure; later messages stay on the queue');
    child.error({ queue: 'orders', err: { code: 'TooManyRequestsException', message: 'Rate exceeded' } }, 'function throttled');
    assert.equal(out.length, 3, 'stdout gets every line');
    assert.deepEqual(
      errors.list().map((e) => [e.msg, e.queue, e.code, e.messageIds]),
      [
        ['function throttled', 'orders', 'TooManyRequestsException', undefined],
        ['FIFO batch stopped at a failure; later messages stay on the queue', 'orders', undefined, ['m-1']],
      ],
    );
  });

  it('rejects a capacity that cannot make a ring', () => {
    assert.throws(() => new RecentErrors({ capacity: 0 }), /capacity/);
  });
});

describe('StatusRecorder: clock', () => {
  it('a 600 s backward step of the wall clock does not hide the last buckets (issue 20 item 6)', (t) => {
    const wall = Date.now.bind(Date);
    let offsetMs = 0;
    t.mock.method(Date, 'now', () => wall() + offsetMs);
    const recorder = new StatusRecorder();
    recorder.record(datum(SQS_METRICS.invoked.cloudwatch, 7));
    offsetMs = -600_000;
    const buckets = queue(recorder, 'orders').buckets;
    assert.equal(
      buckets.reduce((sum, b) => sum + b.invoked, 0),
      7,
      'the invocation recorded a moment ago is still in the window',
    );
  });
});
