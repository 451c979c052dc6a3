// The probes of the real CLI are answered while unauthenticated peers flood its HTTP port with connections that
// send nothing: 300 at once, then 40 more every 2 s for 30 s, as a peer in the cluster could. Each probe is what
// the kubelet sends: a new connection, one GET, no keep-alive. Before the server took the place of the oldest
// silent connection for a newcomer, it refused every newcomer while full, and no probe got through.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createQueue } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { problems, startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { functionFixture } from '../support/functions.ts';
import { freePort } from '../support/http.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';

/** The server's headers timeout plus its check interval (src/operator/http/server.ts). */
const SILENT_LIMIT_MS = 5_000 + 1_000;
/** How late the test process may notice a close on a loaded 2-core machine. */
const OBSERVE_SLACK_MS = 1_000;

interface Silent {
  readonly openedAt: number;
  closedAt: number | undefined;
}

/** A connection that never sends a byte; it reads, so it sees the server close it. */
function openSilent(port: number, all: Silent[]): void {
  const silent: Silent = { openedAt: performance.now(), closedAt: undefined };
  all.push(silent);
  const socket = connect(port, '127.0.0.1');
  socket.resume();
  // A refused connection surfaces as ECONNRESET: closed all the same.
  socket.on('error', () => {});
  socket.on('close', () => (silent.closedAt = performance.now()));
}

/** One probe as the kubelet sends it: its own connection, Connection: close. The status, or the error's code. */
function probe(port: number): Promise<{ answer: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const done = (answer: string): void => resolve({ answer, ms: Math.round(performance.now() - t0) });
    const req = request(
      { host: '127.0.0.1', port, path: '/healthz', agent: false, headers: { connection: 'close' }, timeout: 5_000 },
      (res) => {
        res.resume();
        res.on('end', () => done(String(res.statusCode)));
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
    req.end();
  });
}

describe('the HTTP server of the real CLI answers probes whatever silent connections do', { timeout: 120_000 }, () => {
  let endpoint: LambdaEndpoint;
  let daemon: CliRun | undefined;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({ functions: { record: { handler: functionFixture('record.mjs') } } });
  });
  after(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await endpoint.stop();
  });

  it('300 silent connections, then 40 more every 2 s for 30 s: every probe a second is answered within 1 s, every silent connection closed within 6 s', async () => {
    const q = await createQueue('wl-http-flood', { VisibilityTimeout: '30' });
    const port = await freePort();
    daemon = startDaemon(endpoint.url, ['--function', 'record', '--queues', q.name, '--concurrency', '2', '--http-port', String(port)]);
    await started(daemon);

    const silent: Silent[] = [];
    const probes: Promise<{ answer: string; ms: number }>[] = [];
    // One clock for both, so that the probes keep their place between the bursts: 0.5 s and 1.5 s after each.
    const t0 = performance.now();
    const at = (ms: number): Promise<void> => delay(Math.max(0, t0 + ms - performance.now()));
    for (let i = 0; i < 300; i++) openSilent(port, silent);
    for (let step = 1; step <= 60; step++) {
      await at(step * 500);
      if (step % 4 === 0) for (let i = 0; i < 40; i++) openSilent(port, silent);
      else if (step % 2 === 1) probes.push(probe(port));
    }
    const answers = await Promise.all(probes);
    await until(
      () => silent.every((s) => s.closedAt !== undefined),
      SILENT_LIMIT_MS + 5_000,
      'the server to close every silent connection',
      100,
    );

    const late = answers.filter((a) => a.answer !== '200' || a.ms > 1_000);
    const lifetimes = silent.map((s) => Math.round(s.closedAt! - s.openedAt)).sort((a, b) => a - b);
    console.log(
      `${silent.length} silent connections, closed after ${lifetimes[0]}-${lifetimes.at(-1)} ms; ` +
        `${answers.length} probes, answered after ${Math.min(...answers.map((a) => a.ms))}-${Math.max(...answers.map((a) => a.ms))} ms`,
    );
    assert.deepEqual(late, [], `${late.length} of ${answers.length} probes not answered 200 within 1 s`);
    assert.equal(answers.length, 30);
    assert.equal(silent.length, 300 + 40 * 15);
    assert.ok(lifetimes.at(-1)! < SILENT_LIMIT_MS + OBSERVE_SLACK_MS, `closed after ${JSON.stringify(lifetimes.slice(-5))} ms`);
    assert.equal(await stopDaemon(daemon), 0, problems(daemon));
  });
});
