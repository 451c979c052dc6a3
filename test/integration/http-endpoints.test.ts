// Issue 9, "How it is proven": the endpoints of --http-port, read while the real CLI runs against LocalStack
// and the test Lambda endpoint. Readiness flips during start-up (slowed by the fault proxy), drain and a pause
// of the function; liveness stays up through an AWS outage that keeps a loop retrying past its step's
// deadline (restarting would cure nothing); and /metrics and /status.json count exactly
// the messages sent, failed and throttled.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, afterEach, before, describe, it } from 'node:test';
import type { StatusSnapshot } from '../../src/operator/status/snapshot.ts';
import { bodies, countMessages, createQueue, localstackEndpoint, sendMessages } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { functionFixture } from '../support/functions.ts';
import { freePort, get, sample, type Answer } from '../support/http.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { runsByMessage } from '../support/message-runs.ts';

/** Fails the messages whose body starts with "fail" (a function error: Unhandled), succeeds for the rest. */
const FAIL_BY_BODY = `export const handler = async (event) => {
  for (const r of event.Records ?? []) if (r.body.startsWith('fail')) throw new Error('failed by body');
};
`;

describe('the HTTP endpoints of the real CLI', { timeout: 300_000 }, () => {
  let endpoint: LambdaEndpoint;
  let workDir: string;
  let daemon: CliRun | undefined;
  let proxies: FaultProxy[] = [];
  before(async () => {
    await ensureLocalStack();
    workDir = await mkdtemp(join(tmpdir(), 'wl-http-'));
    const byBody = join(workDir, 'fail-by-body.mjs');
    await writeFile(byBody, FAIL_BY_BODY);
    endpoint = await startLambdaEndpoint({
      functions: {
        record: { handler: functionFixture('record.mjs') },
        slow: { handler: functionFixture('slow.mjs'), timeoutSec: 20 },
        'by-body': { handler: byBody },
      },
    });
  });
  after(async () => {
    await endpoint.stop();
    await rm(workDir, { recursive: true, force: true });
  });
  afterEach(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    daemon = undefined;
    for (const p of proxies) await p.close();
    proxies = [];
  });

  const proxy = async (upstream: string): Promise<FaultProxy> => {
    const p = await startFaultProxy({ upstream });
    proxies.push(p);
    return p;
  };

  /** Starts the CLI with --http-port on a free port; returns it and the server's base URL. */
  const start = async (args: string[], env: Record<string, string> = {}, lambdaUrl = endpoint.url) => {
    const port = await freePort();
    daemon = startDaemon(lambdaUrl, [...args, '--http-port', String(port)], env);
    return { run: daemon, base: `http://127.0.0.1:${port}` };
  };

  it('readiness: 503 "starting" during the start-up checks, 200 once running, 503 "draining" after SIGTERM; liveness 200 throughout', async () => {
    const q = await createQueue('wl-http-ready', { VisibilityTimeout: '30' });
    const sqs = await proxy(localstackEndpoint());
    // The start-up checks read the queue's attributes: hold that answer for 3 s, so "starting" lasts that long.
    const slowStart = sqs.inject({ operation: 'GetQueueAttributes', fault: { kind: 'delay', ms: 3_000 }, count: 1 });
    const { run, base } = await start(['--function', 'slow', '--queues', q.name, '--concurrency', '1'], { AWS_ENDPOINT_URL_SQS: sqs.url });

    let first: Answer | undefined;
    await until(async () => (first = await get(base, '/readyz')) !== undefined, 10_000, 'the HTTP server to listen', 20);
    await sqs.waitForCall((c) => c.operation === 'GetQueueAttributes' && c.fault === 'delay');
    const whileChecking = await get(base, '/readyz');
    assert.equal(slowStart.hits, 1);
    assert.equal(
      run.logs().some((l) => l['msg'] === 'workerless started'),
      false,
      'still in the start-up checks',
    );
    assert.deepEqual(whileChecking, { status: 503, body: 'starting: resolving queues and checking the function\n' });
    assert.equal(first?.status, 503);
    assert.equal((await get(base, '/healthz'))?.status, 200, 'alive while starting');
    assert.equal((JSON.parse((await get(base, '/status.json'))!.body) as StatusSnapshot).state, 'starting');

    await started(run);
    assert.deepEqual(await get(base, '/readyz'), { status: 200, body: 'ok\n' });
    assert.deepEqual(await get(base, '/healthz'), { status: 200, body: 'ok\n' });

    // A 5 s invocation in flight keeps the drain going; /readyz is read between SIGTERM and the exit.
    const [id] = await sendMessages(q.url, [JSON.stringify({ sleepMs: 5_000 })]);
    await until(() => endpoint.inFlight('slow') === 1, 10_000, 'the slow invocation running', 20);
    run.child.kill('SIGTERM');
    // The signal is delivered asynchronously: read from the moment the daemon says it is shutting down.
    await run.waitForLog((l) => typeof l['msg'] === 'string' && l['msg'].startsWith('shutting down'), 5_000);
    const during: Answer[] = [];
    while (run.child.exitCode === null) {
      const a = await get(base, '/readyz');
      if (a) during.push(a);
      await delay(100);
    }
    const { code } = await run.exited;
    assert.equal(code, 0, run.stderr());
    assert.ok(during.length >= 10, `read /readyz ${during.length} times during the drain`);
    // Draining until the invocation settled; "stopped" at most in the moment between the drain and the exit.
    const kinds = JSON.stringify([...new Set(during.map((a) => `${a.status} ${a.body.trim()}`))]);
    assert.ok(
      during.every((a) => a.status === 503 && /^(draining|stopped): not taking new messages\n$/.test(a.body)),
      kinds,
    );
    assert.ok(during.filter((a) => a.body.startsWith('draining')).length >= 10, kinds);
    // The drain really waited for the invocation, which then settled.
    assert.deepEqual(
      runsByMessage(endpoint, q.arn)
        .get(id!)
        ?.map((r) => r.status),
      ['success'],
    );
    assert.equal(await countMessages(q.url), 0);
    assert.equal(await get(base, '/readyz'), undefined, 'the server is closed once the daemon has stopped');
  });

  it('readiness: 503 while the function is paused as unusable (403 on Invoke), 200 again once it can be invoked', async () => {
    const q = await createQueue('wl-http-paused', { VisibilityTimeout: '30' });
    const lambda = await proxy(endpoint.url);
    const { run, base } = await start(['--function', 'record', '--queues', q.name, '--concurrency', '2'], {}, lambda.url);
    await started(run);
    assert.equal((await get(base, '/readyz'))?.status, 200);

    const rule = lambda.inject({
      operation: 'Invoke',
      invocationType: 'RequestResponse',
      fault: { kind: 'status', status: 403, errorType: 'AccessDeniedException' },
      forMs: 4_000,
    });
    const ids = await sendMessages(q.url, ['a', 'b', 'c']);
    const seen: Answer[] = [];
    let pausedMetric: number | undefined;
    let pausedState: string | undefined;
    while (rule.active) {
      const a = await get(base, '/readyz');
      if (a) seen.push(a);
      if (a?.status === 503 && pausedMetric === undefined) {
        pausedMetric = sample((await get(base, '/metrics'))!.body, 'workerless_function_paused', { function: 'record' });
        pausedState = (JSON.parse((await get(base, '/status.json'))!.body) as StatusSnapshot).state;
      }
      await delay(50);
    }
    assert.ok(
      lambda.calls('Invoke').some((c) => c.fault === 'status'),
      'the window was really met',
    );
    const paused = seen.filter((a) => a.status === 503);
    assert.ok(paused.length > 0, `not ready at some point of the window: ${JSON.stringify(seen.slice(0, 5))}`);
    assert.ok(
      paused.every((a) => a.body === 'function record is paused: it cannot be invoked (see the logs)\n'),
      JSON.stringify(paused[0]),
    );
    assert.equal(pausedMetric, 1, 'workerless_function_paused is 1 while paused');
    assert.equal(pausedState, 'paused');

    await until(
      () =>
        ids.every((id) =>
          runsByMessage(endpoint, q.arn)
            .get(id)
            ?.some((r) => r.status === 'success'),
        ),
      20_000,
      'the messages processed after the window',
      50,
    );
    await until(async () => (await get(base, '/readyz'))?.status === 200, 10_000, 'ready again', 50);
    assert.equal(sample((await get(base, '/metrics'))!.body, 'workerless_function_paused', { function: 'record' }), 0);
    assert.equal((await get(base, '/healthz'))?.status, 200, 'a paused function is not a dead process');
    assert.equal(await stopDaemon(run), 0);
  });

  it(
    "liveness: 200 through a DeleteMessageBatch outage longer than the delete step's deadline (a loop retrying AWS is waiting, not stuck); the message runs once",
    { timeout: 140_000 },
    async () => {
      // The delete of a processed message retries as long as the lease keeps it invisible, so an outage of
      // DeleteMessageBatch alone holds the loop in its delete step. The step's deadline is 48 s plus 10 s of grace,
      // but every retry renews it: restarting the pod would cure nothing (the message would run again), so
      // liveness must not fail. A stuck loop (no progress past its deadline) is proven in test/unit/observability.
      const q = await createQueue('wl-http-stuck', { VisibilityTimeout: '20' });
      const sqs = await proxy(localstackEndpoint());
      const { run, base } = await start(['--function', 'record', '--queues', q.name, '--concurrency', '1'], {
        AWS_ENDPOINT_URL_SQS: sqs.url,
      });
      await started(run);
      const outage = sqs.inject({ operation: 'DeleteMessageBatch', fault: { kind: 'status', status: 500, errorType: 'InternalError' } });
      const [id] = await sendMessages(q.url, ['stuck']);
      const firstDelete = await sqs.waitForCall((c) => c.operation === 'DeleteMessageBatch' && c.fault === 'status', 15_000);

      const answers: { at: number; status: number; body: string }[] = [];
      while (Date.now() - firstDelete.at < 65_000) {
        const a = await get(base, '/healthz');
        if (a) answers.push({ at: Date.now() - firstDelete.at, ...a });
        await delay(1_000);
      }
      assert.ok(answers.length >= 50, `only ${answers.length} answers`);
      assert.deepEqual(
        answers.filter((a) => a.status !== 200),
        [],
        'liveness stayed 200 past the step deadline',
      );
      assert.equal((await get(base, '/readyz'))?.status, 200, 'readiness does not depend on the delete');

      outage.clear();
      await until(async () => (await countMessages(q.url)) === 0, 15_000, 'the message deleted', 100);
      // The lease kept it invisible all along: it ran once.
      assert.deepEqual(
        runsByMessage(endpoint, q.arn)
          .get(id!)
          ?.map((r) => r.receiveCount),
        [1],
      );
      assert.equal(await stopDaemon(run), 0);
      console.log(`liveness stayed 200 through a ${answers.at(-1)?.at} ms DeleteMessageBatch outage (${outage.hits} refused calls)`);
    },
  );

  it('every counter of /metrics and /status.json matches the messages sent, failed and throttled, by value', async () => {
    const q = await createQueue('wl-http-counts', { VisibilityTimeout: '120' });
    const { run, base } = await start(['--function', 'by-body', '--queues', q.name, '--concurrency', '2', '--batch-size', '1']);
    await started(run);
    // Throttled at first (reserved concurrency 0), then free; failed messages stay invisible for the rest of the test.
    endpoint.setReservedConcurrency('by-body', 0);
    await sendMessages(q.url, [...bodies(8, 'ok'), ...bodies(4, 'fail')]);
    const throttles = () => endpoint.rejected.filter((r) => r.functionName === 'by-body' && r.statusCode === 429).length;
    await until(() => throttles() >= 3, 10_000, 'a few throttled invocations', 20);
    endpoint.setReservedConcurrency('by-body', undefined);

    const fn = () => endpoint.invocations.filter((i) => i.functionName === 'by-body');
    await until(() => fn().length === 12 && fn().every((i) => i.status !== 'running'), 20_000, 'all 12 messages invoked', 50);
    const labels = { function: 'by-body', queue: q.name };
    let metrics = '';
    await until(
      async () => {
        metrics = (await get(base, '/metrics'))?.body ?? '';
        return (
          sample(metrics, 'workerless_in_flight_messages', labels) === 0 &&
          sample(metrics, 'workerless_receive_to_settle_seconds_count', labels) === 12
        );
      },
      10_000,
      'every message settled',
      50,
    );

    const throttled = throttles();
    const expected = {
      workerless_polled_events_total: 12,
      workerless_invoked_events_total: 12,
      workerless_failed_invoke_events_total: 4,
      workerless_deleted_events_total: 8,
      workerless_throttled_invocations_total: throttled,
      workerless_in_flight_messages: 0,
      workerless_receive_to_settle_seconds_count: 12,
      workerless_invocation_duration_seconds_count: 12,
    };
    const actual = Object.fromEntries(Object.keys(expected).map((name) => [name, sample(metrics, name, labels)]));
    assert.deepEqual(actual, expected);
    assert.equal(fn().filter((i) => i.status === 'error').length, 4, 'the function failed exactly the "fail" bodies');
    assert.ok((sample(metrics, 'workerless_aws_api_calls_total', { service: 'sqs', operation: 'ReceiveMessage', outcome: 'ok' }) ?? 0) > 0);
    // Each Invoke is one call (the Lambda client does not retry): 12 answered, the DryRun, and every 429.
    assert.equal(sample(metrics, 'workerless_aws_api_calls_total', { service: 'lambda', operation: 'Invoke', outcome: 'ok' }), 13);
    assert.equal(
      sample(metrics, 'workerless_aws_api_calls_total', { service: 'lambda', operation: 'Invoke', outcome: 'throttled' }),
      throttled,
    );
    assert.equal(sample(metrics, 'workerless_concurrency_limit', { function: 'by-body' }), 2);
    assert.ok(sample(metrics, 'workerless_process_resident_memory_bytes') !== undefined, "prom-client's process metrics");

    // /status.json: the same totals over its buckets, for the same queue.
    const status = JSON.parse((await get(base, '/status.json'))!.body) as StatusSnapshot;
    assert.equal(status.state, 'running');
    assert.deepEqual(status.functions, ['by-body']);
    const row = status.queues.find((s) => s.name === q.name);
    assert.ok(row, JSON.stringify(status.queues.map((s) => s.name)));
    const sum = (k: 'polled' | 'invoked' | 'failed' | 'throttled' | 'deleted') => row.buckets.reduce((n, b) => n + b[k], 0);
    assert.deepEqual(
      {
        polled: sum('polled'),
        invoked: sum('invoked'),
        failed: sum('failed'),
        throttled: sum('throttled'),
        deleted: sum('deleted'),
        inFlight: row.inFlight,
      },
      { polled: 12, invoked: 12, failed: 4, throttled, deleted: 8, inFlight: 0 },
    );
    assert.ok(
      status.recentErrors.some((e) => e.msg === 'function error; messages stay on the queue' && e.code === 'Error' && e.queue === q.name),
    );
    assert.equal(await countMessages(q.url), 4, 'the failed messages stay on the queue');
    assert.equal(await stopDaemon(run), 0);
    console.log(`counted 12 polled, 12 invoked, 4 failed, 8 deleted, ${throttled} throttled`);
  });
});
