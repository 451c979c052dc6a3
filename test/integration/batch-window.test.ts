// The batching window (issue 10) against LocalStack and the test Lambda endpoint, through the built CLI: batch
// sizes and the wait before each invocation follow the window, the batch size and the 6 MB limit; a window longer
// than the visibility timeout hands no message out twice; a SIGTERM while a batch gathers invokes and deletes
// it. Measured figures are logged (t.diagnostic).
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { countMessages, createQueue, messageCounts, sendMessages } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { eventRecords as records, functionFixture as fixture } from '../support/functions.ts';
import {
  MAX_SYNC_PAYLOAD_BYTES,
  startLambdaEndpoint,
  type InvocationRecord,
  type LambdaEndpoint,
} from '../support/lambda-endpoint/server.ts';

const of = (fn: string) => (inv: InvocationRecord) => inv.functionName === fn;

/** The daemon's 'batch gathered' lines: why each batch was invoked, its size and how long it gathered. */
function gatheredLines(logs: Record<string, unknown>[]): { reason: string; messages: number; receives: number; gatheredMs: number }[] {
  return logs
    .filter((l) => l['msg'] === 'batch gathered')
    .map((l) => ({
      reason: l['reason'] as string,
      messages: l['messages'] as number,
      receives: l['receives'] as number,
      gatheredMs: l['gatheredMs'] as number,
    }));
}

/** Milliseconds from the batch's first message being received (SQS's own timestamp) to the invocation. */
const waitOf = (inv: InvocationRecord) =>
  inv.startedAt - Math.min(...records(inv).map((r) => Number(r.attributes['ApproximateFirstReceiveTimestamp'])));

describe('batching window against LocalStack (issue 10)', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: {
        'window-slow': { handler: fixture('record.mjs') },
        'window-size': { handler: fixture('record.mjs') },
        'window-6mb': { handler: fixture('record.mjs') },
        'window-short': { handler: fixture('record.mjs') },
        'window-visibility': { handler: fixture('record.mjs') },
        'window-sigterm': { handler: fixture('record.mjs') },
      },
    });
  });
  after(() => endpoint.stop());

  /** Sends `count` messages one at a time, `gapMs` apart; returns their ids. */
  async function sendSpaced(url: string, prefix: string, count: number, gapMs: number): Promise<string[]> {
    const sent: string[] = [];
    for (let i = 0; i < count; i++) {
      sent.push(...(await sendMessages(url, [`${prefix}-${i}`])));
      await delay(gapMs);
    }
    return sent;
  }

  /** Waits until the queue is drained, stops the daemon (asserting exit 0), and returns the function's invocations. */
  async function drained(daemon: CliRun, url: string, fn: string, timeoutMs: number): Promise<InvocationRecord[]> {
    await until(async () => (await countMessages(url)) === 0, timeoutMs, 'queue drained', 200);
    assert.equal(await stopDaemon(daemon), 0);
    return endpoint.invocations.filter(of(fn));
  }

  it('window 2 s, 25 messages sent one every 200 ms: each invocation comes 2 s after its first message, with what arrived', async (t) => {
    const q = await createQueue('wl-window-slow');
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'window-slow',
      '--queues',
      q.name,
      '--concurrency',
      '1',
      '--batch-size',
      '100',
      '--batch-window',
      '2s',
    ]);
    await started(daemon);
    const sent = await sendSpaced(q.url, 'slow', 25, 200);
    const runs = await drained(daemon, q.url, 'window-slow', 15_000);
    const sizes = runs.map((i) => records(i).length);
    const waits = runs.map(waitOf);
    t.diagnostic(`batch sizes ${sizes.join(', ')}; waits from the first message ${waits.join(', ')} ms (window 2000 ms)`);
    t.diagnostic(`gathered: ${JSON.stringify(gatheredLines(daemon.logs()))}`);
    assert.deepEqual(runs.flatMap((i) => records(i).map((r) => r.messageId)).sort(), [...sent].sort(), 'every message once');
    // 5 s of messages (longer when the machine is busy and sends are slower) in 2 s windows.
    assert.ok(runs.length >= 2 && runs.length <= 6, `${runs.length} invocations`);
    // Slack above the window for the Invoke's own latency on a loaded CI machine.
    for (const w of waits) assert.ok(w >= 1_950 && w <= 3_000, `wait ${w} ms, window 2000 ms`);
    // A batch holds what arrived in its window. SentTimestamp and ApproximateFirstReceiveTimestamp are both
    // LocalStack's clock, so the window is judged there, from the batch's first receive (opened) to its last.
    // Messages sent before the window opened are part of it too: with --concurrency 1 they arrived while the
    // previous batch was being invoked and deleted, and the first receive takes them all.
    const windows = runs.map((inv) => {
      const rs = records(inv);
      const received = rs.map((r) => Number(r.attributes['ApproximateFirstReceiveTimestamp']));
      const sentAt = rs.map((r) => Number(r.attributes['SentTimestamp']));
      return {
        opened: Math.min(...received),
        lastReceived: Math.max(...received),
        firstSent: Math.min(...sentAt),
        lastSent: Math.max(...sentAt),
        waiting: sentAt.filter((s) => s < Math.min(...received)).length,
      };
    });
    t.diagnostic(
      `windows on LocalStack's clock: ${JSON.stringify(windows.map((w, k) => ({ received: w.lastReceived - w.opened, sentBeforeOpen: w.opened - w.firstSent, waiting: w.waiting, lastSentAfterOpen: w.lastSent - w.opened, nextSentAfterOpen: (windows[k + 1]?.firstSent ?? NaN) - w.opened })))}`,
    );
    windows.forEach((w, k) => {
      assert.ok(w.lastReceived - w.opened <= 2_500, `batch ${k} received over ${w.lastReceived - w.opened} ms, window 2000 ms`);
      const next = windows[k + 1];
      if (next)
        assert.ok(
          next.firstSent >= w.opened + 1_500,
          `batch ${k + 1} holds a message sent ${next.firstSent - w.opened} ms into batch ${k}'s window`,
        );
    });
    assert.ok(gatheredLines(daemon.logs()).every((g) => g.reason === 'window'));
  });

  it('batch size 50, window 10 s, 120 messages queued: 50 and 50 at once, then 20 when the window ends', async (t) => {
    const q = await createQueue('wl-window-size');
    await sendMessages(
      q.url,
      Array.from({ length: 120 }, (_, i) => `size-${i}`),
    );
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'window-size',
      '--queues',
      q.name,
      '--concurrency',
      '1',
      '--batch-size',
      '50',
      '--batch-window',
      '10s',
    ]);
    await started(daemon);
    const runs = await drained(daemon, q.url, 'window-size', 30_000);
    const sizes = runs.map((i) => records(i).length);
    const waits = runs.map(waitOf);
    const gathered = gatheredLines(daemon.logs());
    t.diagnostic(
      `batch sizes ${sizes.join(', ')}; waits from the first message ${waits.join(', ')} ms; gathered ${JSON.stringify(gathered)}`,
    );
    assert.deepEqual(sizes, [50, 50, 20]);
    assert.deepEqual(
      gathered.map((g) => g.reason),
      ['full', 'full', 'window'],
    );
    assert.ok(waits[0]! < 2_000 && waits[1]! < 2_000, `full batches waited ${waits[0]} and ${waits[1]} ms`);
    assert.ok(waits[2]! >= 9_950 && waits[2]! <= 11_000, `the last waited ${waits[2]} ms, window 10000 ms`);
  });

  it('batch size 1000, window 1 s (the least above 10), 300 messages queued: the first batch gathers for the whole window, one receive after another', async (t) => {
    const q = await createQueue('wl-window-short');
    await sendMessages(
      q.url,
      Array.from({ length: 300 }, (_, i) => `short-${i}`),
    );
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'window-short',
      '--queues',
      q.name,
      '--concurrency',
      '1',
      '--batch-size',
      '1000',
      '--batch-window',
      '1s',
    ]);
    await started(daemon);
    const runs = await drained(daemon, q.url, 'window-short', 30_000);
    const sizes = runs.map((i) => records(i).length);
    const waits = runs.map(waitOf);
    t.diagnostic(
      `batch sizes ${sizes.join(', ')}; waits from the first message ${waits.join(', ')} ms; gathered ${JSON.stringify(gatheredLines(daemon.logs()))}`,
    );
    assert.equal(
      sizes.reduce((a, b) => a + b, 0),
      300,
    );
    // Receives in the window follow each other while the queue answers with messages, and the batch is invoked
    // when the window ends, not before. How many fit in 1 s is the server's speed, not the daemon's: LocalStack
    // answered all 300 on a quiet host and 220 with three other test files beside it, and a receive may come back
    // with fewer than it asked for while more are queued (ReceiveMessage, Amazon SQS API Reference: "fewer
    // messages than the value of MaxNumberOfMessages" may be returned; LocalStack did, 300 in 32 receives); so the
    // count is bounded at a tenth of a second a receive.
    const first = gatheredLines(daemon.logs())[0]!;
    assert.equal(first.reason, 'window', JSON.stringify(first));
    assert.equal(first.messages, sizes[0]);
    assert.ok(first.gatheredMs >= 950, `gathered for ${first.gatheredMs} ms of a 1000 ms window`);
    assert.ok(first.receives >= 10, `only ${first.receives} receives in the window: ${JSON.stringify(first)}`);
    assert.ok(sizes[0]! >= 100, `first batch ${sizes[0]}`);
    assert.ok(waits[0]! >= 950 && waits[0]! <= 2_000, `first batch waited ${waits[0]} ms, window 1000 ms`);
  });

  it('250 kB messages, batch size 100: no payload above 6 MB, and each batch is invoked once the next message would not fit', async (t) => {
    const q = await createQueue('wl-window-6mb');
    const bodies = Array.from({ length: 100 }, (_, i) => `${String(i).padStart(3, '0')}${'x'.repeat(250_000)}`);
    // One message per call: SendMessageBatch takes 256 KiB in all.
    for (let i = 0; i < bodies.length; i += 10) await Promise.all(bodies.slice(i, i + 10).map((b) => sendMessages(q.url, [b])));
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'window-6mb',
      '--queues',
      q.name,
      '--concurrency',
      '1',
      '--batch-size',
      '100',
      '--batch-window',
      '20s',
    ]);
    await started(daemon);
    const runs = await drained(daemon, q.url, 'window-6mb', 60_000);
    const sizes = runs.map((i) => records(i).length);
    const bytes = runs.map((i) => i.payloadBytes);
    const gathered = gatheredLines(daemon.logs());
    t.diagnostic(`batch sizes ${sizes.join(', ')}; payload bytes ${bytes.join(', ')} (limit ${MAX_SYNC_PAYLOAD_BYTES})`);
    t.diagnostic(`gathered: ${JSON.stringify(gathered)}`);
    assert.equal(
      endpoint.rejected.filter((r) => r.functionName === 'window-6mb' && r.statusCode === 413).length,
      0,
      'no invocation refused by the endpoint (413 above 6 MB)',
    );
    assert.ok(
      bytes.every((b) => b <= MAX_SYNC_PAYLOAD_BYTES),
      `payloads ${bytes.join(', ')}`,
    );
    assert.equal(
      sizes.reduce((a, b) => a + b, 0),
      100,
    );
    // 24 records of ~251 kB fill 6 MiB: the batches full by size were invoked as soon as the next one would not fit.
    const bySize = gathered.filter((g) => g.reason === 'payload');
    assert.ok(bySize.length >= 3, `${bySize.length} batches cut at 6 MB`);
    for (const g of bySize) {
      assert.ok(g.messages >= 23 && g.messages <= 25, `a batch cut at 6 MB holds ${g.messages}`);
      assert.ok(g.gatheredMs < 5_000, `gathered for ${g.gatheredMs} ms, window 20000 ms`);
    }
    // One invocation per gathered batch: none had to be split.
    assert.equal(runs.length, gathered.length);
  });

  it('visibility timeout 3 s, window 8 s: no message is received twice while its batch gathers', async (t) => {
    const q = await createQueue('wl-window-visibility', { VisibilityTimeout: '3' });
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'window-visibility',
      '--queues',
      q.name,
      // A second loop long-polls the queue all along: it would take any message whose visibility ran out.
      '--concurrency',
      '2',
      '--batch-size',
      '100',
      '--batch-window',
      '8s',
    ]);
    await started(daemon);
    const sent = await sendSpaced(q.url, 'vis', 7, 1_000);
    const runs = await drained(daemon, q.url, 'window-visibility', 30_000);
    const received = runs.flatMap((i) => records(i));
    const counts = received.map((r) => r.attributes['ApproximateReceiveCount']);
    const warnings = daemon.logs().filter((l) => String(l['msg']).includes('visibility')).length;
    t.diagnostic(
      `invocations ${runs.length}, batch sizes ${runs.map((i) => records(i).length).join(', ')}, waits ${runs.map(waitOf).join(', ')} ms; receive counts ${counts.join(',')}; visibility warnings ${warnings}`,
    );
    assert.deepEqual(received.map((r) => r.messageId).sort(), [...sent].sort(), 'every message exactly once');
    assert.ok(
      counts.every((c) => c === '1'),
      `receive counts ${counts.join(',')}`,
    );
    // The first batch gathered for 8 s, longer than two visibility timeouts.
    assert.ok(waitOf(runs[0]!) >= 7_950, `first batch waited ${waitOf(runs[0]!)} ms`);
  });

  it('SIGTERM while a batch gathers: no new receive, everything gathered is invoked and deleted, exit 0', async (t) => {
    const q = await createQueue('wl-window-sigterm');
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'window-sigterm',
      '--queues',
      q.name,
      '--concurrency',
      '1',
      '--batch-size',
      '100',
      '--batch-window',
      '60s',
    ]);
    await started(daemon);
    const sent = await sendMessages(
      q.url,
      Array.from({ length: 15 }, (_, i) => `term-${i}`),
    );
    await until(async () => (await messageCounts(q.url)).notVisible === 15, 15_000, 'all 15 gathered', 100);
    const stopAt = Date.now();
    const code = await stopDaemon(daemon);
    const stopMs = Date.now() - stopAt;
    const runs = endpoint.invocations.filter(of('window-sigterm'));
    t.diagnostic(`stopped in ${stopMs} ms (--poll-for 1), invocations ${runs.map((i) => records(i).length).join(', ')}`);
    assert.equal(code, 0);
    assert.deepEqual(runs.flatMap((i) => records(i).map((r) => r.messageId)).sort(), [...sent].sort());
    assert.equal(await countMessages(q.url), 0, 'every gathered message deleted');
    assert.ok(
      gatheredLines(daemon.logs()).some((g) => g.reason === 'stopping'),
      'the gathering ended for the stop',
    );
    assert.ok(stopMs < 5_000, `stop took ${stopMs} ms`);
  });
});
