// Issue 20, item 8, "How it is proven": the HTTP server of the real CLI bounds its clients. Idle connections to
// --http-port are closed within the server's timeouts while messages keep being dispatched; over the cap, the
// oldest of them are closed to make room; and under a 300-descriptor limit, 320 connections held open against the
// port no longer starve the SQS and Lambda calls of file descriptors (EMFILE), so no message runs twice.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { after, afterEach, before, describe, it } from 'node:test';
import { bodies, countMessages, createQueue, sendMessages } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { problems, startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { functionFixture } from '../support/functions.ts';
import { freePort, get } from '../support/http.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { runsByMessage } from '../support/message-runs.ts';

const LOW_LIMIT =
  'open-file limit below what the AWS sockets may need: AWS calls can fail with EMFILE; raise it (ulimit -n) or lower --concurrency';

/** A connection that sends nothing: when it was opened and when the server closed it (epoch ms, as the Lambda endpoint records). */
interface Idle {
  readonly socket: Socket;
  readonly openedAt: number;
  closedAt: number | undefined;
  received: string;
}

function openIdle(port: number): Idle {
  const socket = connect(port, '127.0.0.1');
  const idle: Idle = { socket, openedAt: Date.now(), closedAt: undefined, received: '' };
  socket.on('data', (d: Buffer) => (idle.received += d.toString()));
  // A connection dropped as it is accepted may surface as ECONNRESET: closed all the same.
  socket.on('error', () => {});
  socket.on('close', () => (idle.closedAt = Date.now()));
  return idle;
}

/** Every message of the queue ran exactly once, successfully, on its first receive. */
function ranOnce(endpoint: LambdaEndpoint, queueArn: string, ids: readonly string[]): string[] {
  const runs = runsByMessage(endpoint, queueArn);
  return ids.flatMap((id) => {
    const list = runs.get(id) ?? [];
    const ok = list.length === 1 && list[0]?.status === 'success' && list[0].receiveCount === 1;
    return ok ? [] : [`${id}: ${JSON.stringify(list.map((r) => ({ status: r.status, receiveCount: r.receiveCount })))}`];
  });
}

describe('the HTTP server of the real CLI bounds its clients', { timeout: 180_000 }, () => {
  let endpoint: LambdaEndpoint;
  let daemon: CliRun | undefined;
  let sockets: Idle[] = [];
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({ functions: { record: { handler: functionFixture('record.mjs') } } });
  });
  after(async () => {
    await endpoint.stop();
  });
  afterEach(() => {
    for (const s of sockets) s.socket.destroy();
    sockets = [];
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    daemon = undefined;
  });

  it('closes 50 idle connections within its timeout while dispatch goes on; over the cap the oldest make room at once, and a probe is answered', async () => {
    const q = await createQueue('wl-http-idle', { VisibilityTimeout: '30' });
    const port = await freePort();
    daemon = startDaemon(endpoint.url, ['--function', 'record', '--queues', q.name, '--concurrency', '4', '--http-port', String(port)]);
    await started(daemon);
    const listening = daemon.logs().find((l) => l['msg'] === 'HTTP server listening: /healthz /readyz /metrics, status page at /');
    // No probe before the idle connections: its keep-alive connection would take one of the places.
    const cap = Number(listening?.['maxConnections']);

    // 50 connections that never send a byte, opened one after the other, then messages while they are held.
    for (let i = 0; i < 50; i++) {
      const s = openIdle(port);
      sockets.push(s);
      await new Promise<void>((resolve) => s.socket.once('connect', () => resolve()).once('close', () => resolve()));
    }
    const sentAt = Date.now();
    const ids = await sendMessages(q.url, bodies(20, 'idle'));
    // Every place is taken by a silent connection: the probe takes the place of the oldest.
    const probeWhileFull = await get(`http://127.0.0.1:${port}`, '/healthz');

    await until(() => sockets.every((s) => s.closedAt !== undefined), 20_000, 'the server to close all 50 idle connections', 50);
    const closedAfter = sockets.map((s) => Math.round(s.closedAt! - s.openedAt)).sort((a, b) => a - b);
    // The headers timeout answers 408; a connection closed to make room gets nothing.
    const lifetime = (s: Idle): number => Math.round(s.closedAt! - s.openedAt);
    const timedOut = sockets
      .filter((s) => s.received.startsWith('HTTP/1.1 408 '))
      .map(lifetime)
      .sort((a, b) => a - b);
    const dropped = sockets
      .filter((s) => s.received === '')
      .map(lifetime)
      .sort((a, b) => a - b);
    // The headers timeout (5 s) plus Node's 1 s check; up to 4 s more for a loaded machine.
    assert.ok(closedAfter.at(-1)! < 10_000, `closed after ${JSON.stringify(closedAfter)} ms`);
    // Held up to the cap, less the place the probe took; the oldest closed without an answer as newcomers came.
    assert.ok(Number.isInteger(cap) && cap >= 4 && cap < 50, `maxConnections ${String(listening?.['maxConnections'])}`);
    assert.equal(timedOut.length, cap - 1, `closed after ${JSON.stringify(closedAfter)} ms`);
    assert.equal(dropped.length, 50 - cap + 1);
    assert.ok(
      dropped.every((ms) => ms < 4_500),
      'made room before the headers timeout',
    );
    assert.ok(
      timedOut.every((ms) => ms >= 4_500),
      'held ones lasted the headers timeout',
    );
    assert.ok(
      sockets.every((s) => s.received === '' || s.received.startsWith('HTTP/1.1 408 ')),
      'a 408 or nothing',
    );

    // Dispatch went on meanwhile: every message ran once and was deleted, the first while the connections were held.
    await until(async () => ranOnce(endpoint, q.arn, ids).length === 0 && (await countMessages(q.url)) === 0, 20_000, 'the messages', 100);
    const ran = endpoint.invocations.filter((i) => i.invocationType === 'RequestResponse' && i.startedAt >= sentAt);
    const firstRun = Math.min(...ran.map((i) => i.startedAt));
    const lastEnd = Math.max(...ran.map((i) => i.endedAt ?? Infinity));
    const heldUntil = Math.min(...sockets.filter((s) => s.received !== '').map((s) => s.closedAt!));
    assert.ok(firstRun < heldUntil, 'an invocation ran while the idle connections were held');
    assert.deepEqual(probeWhileFull, { status: 200, body: 'ok\n' }, 'a probe is answered while every place is taken');
    assert.deepEqual(await get(`http://127.0.0.1:${port}`, '/healthz'), { status: 200, body: 'ok\n' });
    assert.equal((await get(`http://127.0.0.1:${port}`, '/readyz'))?.status, 200);
    assert.equal(await stopDaemon(daemon), 0);
    console.log(
      `50 idle connections: ${timedOut.length} held and closed after ${timedOut[0]}-${timedOut.at(-1)} ms, ${dropped.length} closed for newcomers ` +
        `(${dropped[0]}-${dropped.at(-1)} ms); the 20 messages sent meanwhile ran once, ${firstRun - sentAt}-${lastEnd - sentAt} ms after sending`,
    );
  });

  it(
    'under a 300 file-descriptor limit, 320 connections held open against the port leave the SQS and Lambda calls their sockets: every message runs once',
    { skip: existsSync('/usr/bin/prlimit') ? false : 'needs prlimit (util-linux)' },
    async () => {
      // A 5 s visibility timeout: a delete that fails (EMFILE) shows as a second run within the test.
      const q = await createQueue('wl-http-fds', { VisibilityTimeout: '5' });
      const port = await freePort();
      // prlimit execs node with soft and hard limit 300; Node cannot raise its soft limit past that.
      daemon = startDaemon(
        endpoint.url,
        ['--function', 'record', '--queues', q.name, '--concurrency', '20', '--batch-size', '1', '--http-port', String(port)],
        {},
        ['prlimit', '--nofile=300:300'],
      );
      await started(daemon);

      // 320 connections, and whichever the server closes is opened again a second later: the pressure lasts.
      let pressing = true;
      let opened = 0;
      const hold = (): void => {
        const s = openIdle(port);
        opened++;
        sockets.push(s);
        s.socket.on('close', () => {
          if (pressing) setTimeout(hold, 1_000).unref();
        });
      };
      for (let i = 0; i < 320; i++) hold();
      // The daemon's open descriptors, sampled while the pressure lasts.
      let peakFds = 0;
      const pid = daemon.child.pid!;
      const sampler = setInterval(() => {
        try {
          peakFds = Math.max(peakFds, readdirSync(`/proc/${pid}/fd`).length);
        } catch {
          // exited: the assertions below say why
        }
      }, 100);
      await delay(2_000);
      const ids = await sendMessages(q.url, bodies(60, 'fds'));
      // Long enough for a failed delete to come back after the 5 s visibility timeout and run again.
      await until(
        async () => ranOnce(endpoint, q.arn, ids).length === 0 && (await countMessages(q.url)) === 0,
        30_000,
        'the messages',
        100,
      ).catch(() => {});
      await delay(7_000);
      pressing = false;
      clearInterval(sampler);
      const emfile = daemon
        .logs()
        .filter((l) => JSON.stringify(l).includes('EMFILE'))
        .map((l) => JSON.stringify(l));
      const notOnce = ranOnce(endpoint, q.arn, ids);
      assert.deepEqual(
        { emfile: emfile.slice(0, 2), notOnce: notOnce.slice(0, 5) },
        { emfile: [], notOnce: [] },
        `${emfile.length} lines name EMFILE; ${notOnce.length} of 60 messages did not run exactly once on their first receive`,
      );
      assert.equal(await countMessages(q.url), 0);
      assert.equal(daemon.logs().filter((l) => l['msg'] === LOW_LIMIT).length, 0, 'the limit covers --concurrency 20');
      assert.equal(await stopDaemon(daemon), 0, problems(daemon));
      assert.ok(peakFds > 0 && peakFds < 300, `peak ${peakFds} descriptors`);
      console.log(
        `under a 300-descriptor limit, ${opened} connections opened against the port; the daemon held at most ${peakFds} descriptors; 60 messages ran once each`,
      );
    },
  );

  it(
    'warns once at start-up, naming the numbers, when the open-file limit is below what the AWS sockets and the server may need',
    { skip: existsSync('/usr/bin/prlimit') ? false : 'needs prlimit (util-linux)' },
    async () => {
      const q = await createQueue('wl-http-lowfd', { VisibilityTimeout: '30' });
      // --concurrency 100 on one queue: SQS 116 + 1 idle poll, Lambda 116, + 1 AWS sockets, 64 reserved, 33 for the
      // server: 331 under a limit of 300 (src/daemon/socket-budget.ts: one poll, all the limit leaves).
      daemon = startDaemon(
        endpoint.url,
        ['--function', 'record', '--queues', q.name, '--concurrency', '100', '--http-port', String(await freePort())],
        {},
        ['prlimit', '--nofile=300:300'],
      );
      await started(daemon);
      const warnings = daemon.logs().filter((l) => l['msg'] === LOW_LIMIT);
      assert.equal(warnings.length, 1);
      assert.deepEqual(
        {
          openFileLimit: warnings[0]?.['openFileLimit'],
          awsSockets: warnings[0]?.['awsSockets'],
          reservedFds: warnings[0]?.['reservedFds'],
          httpMaxConnections: warnings[0]?.['httpMaxConnections'],
          needed: warnings[0]?.['needed'],
        },
        { openFileLimit: 300, awsSockets: 234, reservedFds: 64, httpMaxConnections: 4, needed: 331 },
      );
      assert.equal(
        daemon.logs().find((l) => String(l['msg']).startsWith('HTTP server listening'))?.['maxConnections'],
        4,
        'the server takes what is left, at least 4',
      );
      assert.equal(await stopDaemon(daemon), 0);
    },
  );
});
