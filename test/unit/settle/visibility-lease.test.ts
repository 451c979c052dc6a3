import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { AwsCallError } from '../../../src/core/errors.ts';
import type { EntryFailure, MessageSource, ReceiptEntry, ResolvedQueue } from '../../../src/core/queue.ts';
import { VisibilityLease, extensionDeadlineMs, extensionLeadMs } from '../../../src/settle/visibility-lease.ts';
import { message, queue, recordingLogger, type LogLine, deferred } from '../../support/factories.ts';
import { countTimers } from '../../support/count-timers.ts';

const START = 1_000_000;
/** random() just below 1: each back-off is its ceiling minus 1 ms (99, 199, 399, 799, 999, 999...). */
const highest = () => 1 - 1e-9;

const RETRY_MSG = 'ChangeMessageVisibilityBatch failed; retrying while visibility remains';
const GIVE_UP_MSG = 'could not extend visibility before it ran out; these messages may be delivered again';
const REFUSED_MSG = 'SQS refused to extend the visibility of some messages; no longer extending those';

function retryable(): AwsCallError {
  return new AwsCallError('ChangeMessageVisibilityBatch', {
    kind: 'retryable',
    code: 'InternalError',
    message: 'We encountered an internal error.',
    status: 500,
  });
}

interface VisibilityCall {
  /** Milliseconds since the test started (fake clock). */
  readonly at: number;
  readonly entries: readonly ReceiptEntry[];
  readonly timeoutSec: number;
  /** The MessageIds behind the receipt handles, in entry order. */
  readonly ids: string[];
}

/**
 * A MessageSource that only extends visibility: records every ChangeMessageVisibilityBatch call and answers
 * each one as `respond` says (no failures by default). Receives and deletes are not the lease's business.
 */
class LeaseSource implements MessageSource {
  readonly calls: VisibilityCall[] = [];
  readonly #idOf = new Map<string, string>();
  respond: (call: VisibilityCall, signal: AbortSignal | undefined) => Promise<EntryFailure[]> | EntryFailure[] = () => [];

  know(messages: readonly Message[]): void {
    for (const m of messages) this.#idOf.set(m.ReceiptHandle!, m.MessageId!);
  }

  async receive(): Promise<Message[]> {
    throw new Error('the lease never receives');
  }

  async deleteBatch(): Promise<EntryFailure[]> {
    throw new Error('the lease never deletes');
  }

  async changeVisibility(
    _q: ResolvedQueue,
    entries: readonly ReceiptEntry[],
    timeoutSec: number,
    signal?: AbortSignal,
  ): Promise<EntryFailure[]> {
    const call = {
      at: Date.now() - START,
      entries,
      timeoutSec,
      ids: entries.map((e) => this.#idOf.get(e.receiptHandle) ?? `?${e.receiptHandle}`),
    };
    this.calls.push(call);
    return this.respond(call, signal);
  }
}

/** The code and message of a log line's `err` (pino's serializer adds type and stack). */
function errFields(line: LogLine | undefined): [unknown, unknown] {
  const err = line?.['err'] as Record<string, unknown> | undefined;
  return [err?.['code'], err?.['message']];
}

/** Lets promise callbacks and anything they chain run (setImmediate is not faked). */
const flush = () => new Promise((r) => setImmediate(r));

/** Advances the fake clock, flushing after each step so retries chained on promises get scheduled. */
async function advance(ms: number, stepMs = ms): Promise<void> {
  for (let done = 0; done < ms; done += stepMs) {
    mock.timers.tick(Math.min(stepMs, ms - done));
    await flush();
  }
}

function setup(count: number, timeoutMs = 30_000, receivedAgoMs = 0) {
  const source = new LeaseSource();
  const { logger, lines } = recordingLogger();
  const messages = Array.from({ length: count }, () => message());
  source.know(messages);
  const lapses: string[][] = [];
  const lease = new VisibilityLease(queue('q'), messages, timeoutMs, Date.now() - receivedAgoMs, {
    source,
    logger,
    now: () => Date.now(),
    random: highest,
    onLapse: (_q, lost) => lapses.push(lost.map((m) => m.MessageId!)),
  });
  return { source, lines, messages, lease, lapses, ids: messages.map((m) => m.MessageId!) };
}

describe('VisibilityLease', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  it('extends 10 s before the visibility runs out, by a whole timeout, and again before the next expiry', async () => {
    const { source, lease, ids } = setup(2);
    await advance(19_999);
    assert.equal(source.calls.length, 0, 'nothing to do while more than 10 s remain');
    await advance(1);
    assert.deepEqual(
      source.calls.map((c) => [c.at, c.ids, c.timeoutSec]),
      [[20_000, ids, 30]],
    );
    await advance(19_999);
    assert.equal(source.calls.length, 1);
    await advance(1);
    assert.deepEqual(
      source.calls.map((c) => c.at),
      [20_000, 40_000],
      'the extension at 20 s runs out at 50 s',
    );
    assert.deepEqual(
      lease.messages.map((m) => m.MessageId),
      ids,
    );
    await lease.end();
  });

  it('add(): messages gathered later join the lease and are extended from their own receive', async () => {
    const { source, lease, ids } = setup(1, 4_000);
    await advance(1_500);
    const later = [message(), message()];
    source.know(later);
    lease.add(later, Date.now());
    // The first message is due at 2 s, the later ones at 3.5 s; each extension covers every message held.
    await advance(4_000, 250);
    assert.deepEqual(
      source.calls.map((c) => [c.at, c.ids]),
      [
        [2_000, [...ids, ...later.map((m) => m.MessageId!)]],
        [4_000, [...ids, ...later.map((m) => m.MessageId!)]],
      ],
    );
    assert.equal(lease.messages.length, 3);
    await lease.end();
    lease.add([message()], Date.now());
    assert.equal(lease.messages.length, 0, 'a no-op after end()');
  });

  it('add() while an extension is on its way sends no second call; the next extension covers the new messages', async () => {
    const { source, lease, ids } = setup(1, 4_000);
    const held = deferred<EntryFailure[]>();
    source.respond = (call) => (call.at === 2_000 ? held.promise : []);
    await advance(2_000);
    assert.equal(source.calls.length, 1, 'the extension at 2 s is on its way');
    const later = message();
    source.know([later]);
    lease.add([later], Date.now());
    await advance(500, 100);
    assert.equal(source.calls.length, 1, 'no call for the messages the first one is extending');
    held.resolve([]);
    await flush();
    // The first message now runs out at 6 s, the added one at 6.5 s: the next extension at 4 s covers both.
    await advance(2_000, 100);
    assert.deepEqual(
      source.calls.map((c) => [c.at, c.ids]),
      [
        [2_000, ids],
        [4_000, [...ids, later.MessageId!]],
      ],
    );
    await lease.end();
  });

  it('with a short timeout, extends when half of it remains', async () => {
    const { source, lease } = setup(1, 4_000);
    await advance(7_000, 500);
    assert.deepEqual(
      source.calls.map((c) => [c.at, c.timeoutSec]),
      [
        [2_000, 4],
        [4_000, 4],
        [6_000, 4],
      ],
    );
    await lease.end();
  });

  it('counts from the receive, not from the lease: a batch received long ago is extended at once', async () => {
    const { source, lease } = setup(1, 30_000, 25_000);
    await advance(1); // setTimeout(0) fires after 1 ms
    assert.deepEqual(
      source.calls.map((c) => c.at),
      [1],
      'only 5 s of visibility were left: no waiting for the usual lead',
    );
    await lease.end();
  });

  it('covers every held message on every tick, in chunks of at most 10 (25 messages -> 3 calls)', async () => {
    const { source, lease, ids } = setup(25);
    await advance(20_000);
    assert.deepEqual(
      source.calls.map((c) => c.ids),
      [ids.slice(0, 10), ids.slice(10, 20), ids.slice(20)],
    );
    await advance(20_000);
    assert.equal(source.calls.length, 6, 'the second tick covers all 25 again');
    assert.deepEqual(
      source.calls.slice(3).flatMap((c) => c.ids),
      ids,
    );
    for (const call of source.calls) {
      assert.deepEqual(
        call.entries.map((e) => e.id),
        call.entries.map((_, i) => String(i)),
        'entry ids are positions within the call',
      );
    }
    await lease.end();
  });

  it('sends two copies of one message (standard queues may return both) as distinct entries', async () => {
    const source = new LeaseSource();
    const original = message();
    const copy = message({ MessageId: original.MessageId! });
    source.know([original, copy]);
    const lease = new VisibilityLease(queue('q'), [original, copy], 30_000, Date.now(), {
      source,
      logger: recordingLogger().logger,
      now: () => Date.now(),
      random: highest,
    });
    await advance(20_000);
    assert.equal(source.calls.length, 1);
    assert.deepEqual(source.calls[0]?.entries, [
      { id: '0', receiptHandle: original.ReceiptHandle },
      { id: '1', receiptHandle: copy.ReceiptHandle },
    ]);
    await lease.end();
  });

  it('an entry refused by SQS drops that message only, with one warning naming it', async () => {
    const { source, lease, lines, ids } = setup(3);
    source.respond = (call) =>
      call.at === 20_000 ? [{ id: '1', code: 'ReceiptHandleIsInvalid', message: 'The receipt handle has expired.' }] : [];
    await advance(20_000);
    assert.deepEqual(
      lease.messages.map((m) => m.MessageId),
      [ids[0], ids[2]],
    );
    const warnings = lines.filter((l) => l.msg === REFUSED_MSG);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.level, 40);
    assert.deepEqual(warnings[0]?.['failed'], [{ id: ids[1], code: 'ReceiptHandleIsInvalid', message: 'The receipt handle has expired.' }]);
    await advance(20_000);
    assert.deepEqual(
      source.calls.map((c) => c.ids),
      [ids, [ids[0], ids[2]]],
      'the refused message is no longer extended',
    );
    await lease.end();
  });

  it('a refused entry in one chunk leaves the other chunks alone', async () => {
    const { source, lease, ids } = setup(15);
    source.respond = (call) =>
      call.at === 20_000 && call.ids[0] === ids[10] ? [{ id: '2', code: 'ReceiptHandleIsInvalid', message: 'gone' }] : [];
    await advance(20_000);
    assert.deepEqual(
      lease.messages.map((m) => m.MessageId),
      ids.filter((id) => id !== ids[12]),
    );
    await lease.end();
  });

  it('when SQS refuses every entry the lease is empty and stops ticking', async () => {
    const { source, lease } = setup(2);
    source.respond = (call) => call.entries.map((e) => ({ id: e.id, code: 'ReceiptHandleIsInvalid', message: 'gone' }));
    await advance(20_000);
    assert.deepEqual(lease.messages, []);
    await advance(120_000, 10_000);
    assert.equal(source.calls.length, 1);
  });

  it('retries a failed call with back-off while visibility remains, then carries on as normal', async () => {
    const { source, lease, lines, ids } = setup(2);
    source.respond = (call) => {
      if (call.at < 20_200) throw retryable();
      return [];
    };
    await advance(21_000, 1);
    assert.deepEqual(
      source.calls.map((c) => c.at),
      [20_000, 20_099, 20_298],
      'full-jitter back-off: 99 ms, then 199 ms',
    );
    assert.deepEqual(
      source.calls.map((c) => c.ids),
      [ids, ids, ids],
    );
    const warnings = lines.filter((l) => l.msg === RETRY_MSG);
    assert.deepEqual(
      warnings.map((l) => [l.level, l['attempt'], l['delayMs']]),
      [
        [40, 0, 99],
        [40, 1, 199],
      ],
    );
    assert.deepEqual(errFields(warnings[0]), ['InternalError', 'We encountered an internal error.']);
    assert.deepEqual(warnings[0]?.['messageIds'], ids);
    assert.equal(lines.filter((l) => l.msg === GIVE_UP_MSG).length, 0);
    assert.deepEqual(
      lease.messages.map((m) => m.MessageId),
      ids,
    );
    // The successful call at 20.298 s bought a whole timeout from when it was sent: next tick 10 s before 50.298 s.
    await advance(19_297);
    assert.equal(source.calls.length, 3);
    await advance(1);
    assert.equal(source.calls.at(-1)?.at, 40_298);
    await lease.end();
  });

  it('gives up (one error line) when the next retry would land too close to the expiry, and drops those messages', async () => {
    const { source, lease, lines, ids } = setup(2);
    source.respond = () => {
      throw retryable();
    };
    await advance(20_000);
    await advance(12_000, 1);
    // Back-off 99, 199, 399, 799, then 999 ms; the last try is the one after which 999 + 250 ms would reach 30 s.
    assert.deepEqual(
      source.calls.map((c) => c.at),
      [20_000, 20_099, 20_298, 20_697, 21_496, 22_495, 23_494, 24_493, 25_492, 26_491, 27_490, 28_489, 29_488],
    );
    assert.ok(
      source.calls.every((c) => c.at < 30_000),
      'every try was made while the messages were still invisible',
    );
    const errors = lines.filter((l) => l.msg === GIVE_UP_MSG);
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.level, 50);
    assert.deepEqual(errors[0]?.['messageIds'], ids);
    assert.equal(errors[0]?.['attempt'], 12);
    assert.deepEqual(errFields(errors[0]), ['InternalError', 'We encountered an internal error.']);
    assert.equal(lines.filter((l) => l.msg === RETRY_MSG).length, 12);
    assert.deepEqual(lease.messages, [], 'messages that could not be extended are no longer held');
    await advance(120_000, 10_000);
    assert.equal(source.calls.length, 13, 'nothing more once the lease is empty');
  });

  it('a chunk that runs out drops its own messages only; the other chunks stay leased', async () => {
    const { source, lease, ids } = setup(15);
    source.respond = (call) => {
      if (call.ids[0] === ids[10]) throw retryable();
      return [];
    };
    await advance(20_000);
    await advance(12_000, 1);
    assert.deepEqual(
      lease.messages.map((m) => m.MessageId),
      ids.slice(0, 10),
    );
    await advance(20_000, 1);
    const last = source.calls.at(-1);
    assert.deepEqual([last?.at, last?.ids], [40_000, ids.slice(0, 10)], 'the healthy chunk is still extended on time');
    await lease.end();
  });

  it('drop() waits for an extension in flight, so none lands after it', async () => {
    const { source, lease, messages, ids } = setup(3);
    const inFlight = deferred<EntryFailure[]>();
    source.respond = () => inFlight.promise;
    await advance(20_000);
    assert.equal(source.calls.length, 1);
    const events: string[] = [];
    const dropped = lease.stop([messages[0]!]).then(() => events.push('dropped'));
    await flush();
    assert.equal(events.length, 0, 'drop() still waiting for the call');
    assert.deepEqual(
      lease.messages.map((m) => m.MessageId),
      [ids[1], ids[2]],
      'no longer leased at once',
    );
    inFlight.resolve([]);
    events.push('extension landed');
    await dropped;
    assert.deepEqual(events, ['extension landed', 'dropped']);
    source.respond = () => [];
    await advance(20_000);
    assert.deepEqual(source.calls.at(-1)?.ids, [ids[1], ids[2]], 'the dropped message is not extended again');
    await lease.end();
  });

  it('a call that fails after drop() reports only the messages still held', async () => {
    // m0 is settled (deleted) while a hung extension covering it is on its way; the extension then fails too
    // close to the expiry. The error says "may be delivered again": it must not name the deleted message.
    const { source, lease, lines, messages, ids } = setup(2);
    const inFlight = deferred<EntryFailure[]>();
    source.respond = () => inFlight.promise;
    await advance(20_000);
    const dropped = lease.stop([messages[0]!]);
    await advance(9_700, 100);
    inFlight.reject(retryable());
    await dropped;
    await flush();
    const errors = lines.filter((l) => l.msg === GIVE_UP_MSG);
    assert.equal(errors.length, 1);
    assert.deepEqual(errors[0]?.['messageIds'], [ids[1]]);
    assert.deepEqual(lease.messages, []);
  });

  it('a refusal of an entry dropped meanwhile is not reported', async () => {
    // The usual race: the message is deleted while an extension naming it is on its way, so SQS refuses it.
    const { source, lease, lines, messages, ids } = setup(2);
    const inFlight = deferred<EntryFailure[]>();
    source.respond = () => inFlight.promise;
    await advance(20_000);
    const dropped = lease.stop([messages[0]!]);
    inFlight.resolve([{ id: '0', code: 'ReceiptHandleIsInvalid', message: 'The receipt handle has expired.' }]);
    await dropped;
    assert.equal(lines.filter((l) => l.msg === REFUSED_MSG).length, 0, 'nothing to warn about: the message was no longer ours');
    assert.deepEqual(
      lease.messages.map((m) => m.MessageId),
      [ids[1]],
    );
    await lease.end();
  });

  it('drop() during a retry back-off returns at once, and the retry leaves the dropped message out', async () => {
    const { source, lease, messages, ids } = setup(2);
    source.respond = (call) => {
      if (call.at === 20_000) throw retryable();
      return [];
    };
    await advance(20_000);
    assert.equal(source.calls.length, 1, 'sleeping 99 ms before the retry');
    let done = false;
    const dropping = lease.stop([messages[0]!]).then(() => (done = true));
    await flush();
    assert.equal(done, true, 'no call in flight to wait for');
    await dropping;
    await advance(99, 1);
    assert.deepEqual(
      source.calls.map((c) => c.ids),
      [ids, [ids[1]]],
    );
    await lease.end();
  });

  it('drop() of every message stops the ticks', async () => {
    const { source, lease, messages } = setup(3);
    await lease.stop(messages);
    assert.deepEqual(lease.messages, []);
    await advance(120_000, 10_000);
    assert.equal(source.calls.length, 0);
  });

  it('end() waits for the call in flight and stops everything after it', async () => {
    const { source, lease } = setup(3);
    const inFlight = deferred<EntryFailure[]>();
    source.respond = () => inFlight.promise;
    await advance(20_000);
    let ended = false;
    const ending = lease.end().then(() => (ended = true));
    await flush();
    assert.equal(ended, false, 'end() waits for the extension on its way');
    assert.deepEqual(lease.messages, []);
    inFlight.resolve([]);
    await ending;
    await advance(120_000, 10_000);
    assert.equal(source.calls.length, 1, 'no tick after end()');
  });

  it('end() cuts a retry back-off short and nothing is tried again', async () => {
    const { source, lease, lines } = setup(2);
    source.respond = () => {
      throw retryable();
    };
    await advance(20_000);
    assert.equal(source.calls.length, 1);
    await lease.end();
    await advance(60_000, 1_000);
    assert.equal(source.calls.length, 1);
    assert.equal(lines.filter((l) => l.msg === GIVE_UP_MSG).length, 0, 'ending is not a failure to extend');
  });

  it('end() while a call is on its way: its failure is neither retried nor logged', async () => {
    const { source, lease, lines } = setup(2);
    const inFlight = deferred<EntryFailure[]>();
    source.respond = () => inFlight.promise;
    await advance(20_000);
    const ending = lease.end();
    inFlight.reject(retryable());
    await ending;
    await advance(60_000, 1_000);
    assert.equal(source.calls.length, 1);
    assert.deepEqual(
      lines.filter((l) => l.msg === RETRY_MSG || l.msg === GIVE_UP_MSG),
      [],
    );
  });

  it('end() before the first tick means no call at all', async () => {
    const { source, lease } = setup(5);
    await advance(5_000);
    await lease.end();
    await advance(120_000, 10_000);
    assert.equal(source.calls.length, 0);
  });

  it('a queue with visibility timeout 0 is never extended', async () => {
    const { source, lease, ids } = setup(3, 0);
    await advance(3_600_000, 60_000);
    assert.equal(source.calls.length, 0);
    assert.deepEqual(
      lease.messages.map((m) => m.MessageId),
      ids,
      'the messages are still tracked until dropped',
    );
    await lease.stop(lease.messages);
    assert.deepEqual(lease.messages, []);
  });

  it('scales the extension lead and the call deadline to the timeout, so a short one keeps a margin', () => {
    assert.deepEqual(
      [60_000, 20_000, 10_000, 4_000, 1_000].map((t) => [extensionLeadMs(t), extensionDeadlineMs(t)]),
      [
        [10_000, 5_000],
        [10_000, 5_000],
        [5_000, 2_500],
        [2_000, 1_000],
        [500, 250],
      ],
    );
  });

  it('a hung extension call (4 s timeout) is cut at half the lead, and its retry lands before the visibility runs out', async () => {
    const { source, lease, lines, lapses } = setup(1, 4_000);
    source.respond = (call, signal) =>
      call.at === 2_000
        ? // Accepted and never answered: only the caller's deadline ends it.
          new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true }))
        : [];
    await advance(3_500, 1);
    assert.deepEqual(
      source.calls.map((c) => c.at),
      [2_000, 3_099],
      'cut at 3 s (1 s deadline), retried after 99 ms, 0.9 s before the visibility runs out',
    );
    assert.equal(lines.filter((l) => l.msg === GIVE_UP_MSG).length, 0);
    assert.deepEqual(lapses, []);
    assert.deepEqual(lease.confirm(lease.messages), [], 'extended: the lease holds');
    await lease.end();
  });

  it('confirm(): less than half the lead left with no extension confirmed lapses the messages, reported once by id', async () => {
    const { source, lease, lines, lapses, messages, ids } = setup(2, 4_000);
    source.respond = () => {
      throw retryable();
    };
    assert.deepEqual(lease.confirm(messages), [], 'just received: the lease holds');
    await advance(2_900, 1);
    assert.deepEqual(lease.confirm(messages), [], '1.1 s left: more than half the 2 s lead');
    await advance(200, 1);
    assert.deepEqual(
      lease.confirm(messages).map((m) => m.MessageId),
      ids,
      '0.9 s left, extensions failing: no attempt may start',
    );
    assert.deepEqual(lapses, [ids]);
    const error = lines.find(
      (l) => l.msg === 'visibility is about to run out with no extension confirmed; the lease of these messages lapsed',
    );
    assert.deepEqual(error?.['messageIds'], ids);
    assert.equal(error?.level, 50);
    await advance(5_000, 10);
    assert.deepEqual(lapses, [ids], 'reported once: the give-up of the retries finds nothing held');
    assert.deepEqual(
      lease.lapsedOf(messages).map((m) => m.MessageId),
      ids,
    );
    assert.deepEqual(lease.messages, []);
  });

  it('a give-up and a refused entry lapse their messages: lapsedOf names them, onLapse is told once each', async () => {
    const { source, lease, lapses, messages, ids } = setup(3);
    source.respond = (call) => {
      if (call.at === 20_000) return [{ id: '1', code: 'ReceiptHandleIsInvalid', message: 'The receipt handle has expired.' }];
      throw retryable();
    };
    await advance(20_000);
    assert.deepEqual(
      lease.lapsedOf(messages).map((m) => m.MessageId),
      [ids[1]],
    );
    await advance(45_000, 1);
    assert.deepEqual(
      lease.lapsedOf(messages).map((m) => m.MessageId),
      ids,
    );
    assert.deepEqual(lapses, [[ids[1]], [ids[0], ids[2]]]);
  });

  it('a dropped (settled) message is not lapsed, and a queue with visibility timeout 0 never lapses', async () => {
    const { lease, messages } = setup(2);
    await lease.stop([messages[0]!]);
    assert.deepEqual(lease.confirm(messages), []);
    const zero = setup(1, 0);
    await advance(60_000, 10_000);
    assert.deepEqual(zero.lease.confirm(zero.messages), []);
  });

  it('add() after every message was stopped: the lease holds and extends the new ones only', async () => {
    const { source, lease, messages } = setup(1, 4_000);
    await lease.stop(messages);
    assert.deepEqual(lease.messages, []);
    const later = message();
    source.know([later]);
    lease.add([later], Date.now());
    await advance(2_000, 100);
    assert.deepEqual(
      source.calls.map((c) => [c.at, c.ids]),
      [[2_000, [later.MessageId]]],
    );
    assert.deepEqual(lease.messages, [later]);
    const other = setup(1, 4_000);
    await other.lease.end();
    assert.deepEqual(other.lease.messages, [], 'another ended lease holds nothing of it');
    await lease.end();
  });

  it('leases given the same clock share one timer, and each is still extended on its own schedule', async () => {
    const source = new LeaseSource();
    const now = () => Date.now();
    const deps = { source, logger: recordingLogger().logger, now, random: highest, clock: VisibilityLease.clock(now) };
    const timers = countTimers();
    try {
      // Batches settled before their first extension: a thousand leases, made and ended.
      for (let i = 0; i < 1_000; i++) {
        const m = message();
        source.know([m]);
        await new VisibilityLease(queue('q'), [m], 30_000, Date.now(), deps).end();
        mock.timers.tick(1);
      }
      assert.equal(timers.armed(), 1, 'one timer for a thousand leases (the first one armed it)');
      assert.equal(source.calls.length, 0);
      const [first, second] = [message(), message()];
      source.know([first, second]);
      const a = new VisibilityLease(queue('q'), [first], 30_000, Date.now(), deps);
      await advance(5_000);
      const b = new VisibilityLease(queue('q'), [second], 30_000, Date.now(), deps);
      await advance(40_000, 1_000);
      assert.deepEqual(
        source.calls.map((c) => [c.at - 1_000, c.ids]),
        [
          [20_000, [first.MessageId]],
          [25_000, [second.MessageId]],
          [40_000, [first.MessageId]],
          [45_000, [second.MessageId]],
        ],
      );
      await Promise.all([a.end(), b.end()]);
      await advance(60_000, 10_000);
      assert.equal(source.calls.length, 4, 'ended leases are extended no more');
    } finally {
      timers.restore();
    }
  });
});
