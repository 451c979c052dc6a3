// Issue 23, "How it is proven": a function error whose errorMessage (and errorType) is 1 MB and holds a marker past
// the first KiB, and a batchItemFailures id that echoes a body holding another marker, through the real CLI against
// LocalStack and the test Lambda endpoint. Neither marker appears in any log line, in the status page, in
// /status.json or in /metrics; every log line stays small, the function's text in it capped at 1 KiB.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import type { StatusSnapshot } from '../../src/operator/status/snapshot.ts';
import { TEXT_CAP_BYTES } from '../../src/util/cap-text.ts';
import { createQueue, sendMessages } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { freePort } from '../support/http.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';

/** Past the cap in the function's error text. */
const ERROR_MARKER = 'ERRORTEXT-4111111111111111-MARKER';
/** In the message body, which the function hands back as its itemIdentifier. */
const BODY_MARKER = 'BODY-5500005555555559-MARKER';

/**
 * "error" bodies: throws an Error whose name and message are each about 1 MB with ERROR_MARKER in the middle (Lambda
 * sends both back as errorType and errorMessage, and the stack, which repeats them, as trace).
 * Other bodies: reports the body itself as the failed itemIdentifier, which is not a message id of the batch.
 */
const LEAKY_FUNCTION = `export const handler = async (event) => {
  const record = event.Records[0];
  if (record.body === 'error') {
    const half = 'x'.repeat(512 * 1024);
    const err = new Error('failed: ' + half + '${ERROR_MARKER}' + half);
    err.name = 'HugeError' + half + '${ERROR_MARKER}';
    throw err;
  }
  return { batchItemFailures: [{ itemIdentifier: record.body }] };
};
`;

describe('surfaces leak nothing: a 1 MB errorMessage and a body echoed as itemIdentifier', { timeout: 180_000 }, () => {
  let endpoint: LambdaEndpoint;
  let workDir: string;
  let daemon: CliRun | undefined;

  before(async () => {
    await ensureLocalStack();
    workDir = await mkdtemp(join(tmpdir(), 'wl-leak-'));
    const handler = join(workDir, 'leaky.mjs');
    await writeFile(handler, LEAKY_FUNCTION);
    endpoint = await startLambdaEndpoint({ functions: { leaky: { handler } } });
  });
  after(async () => {
    await endpoint.stop();
    await rm(workDir, { recursive: true, force: true });
  });
  afterEach(() => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    daemon = undefined;
  });

  it('the markers reach no log line, page, status or metric label; log lines stay small', async () => {
    // A 2 s visibility timeout: each message comes back, so each failure is logged several times.
    const q = await createQueue('wl-leak', { VisibilityTimeout: '2' });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    daemon = startDaemon(endpoint.url, ['--function', 'leaky', '--queues', q.name, '--batch-size', '1', '--http-port', String(port)]);
    await started(daemon);
    await sendMessages(q.url, ['error', `card ${BODY_MARKER}`]);

    const run = daemon;
    const logged = (msg: string) => run.logs().filter((l) => l['msg'] === msg).length;
    await until(
      () =>
        logged('function error; messages stay on the queue') >= 2 &&
        logged('invalid batchItemFailures response; the whole batch stays on the queue') >= 2,
      60_000,
      'each failure logged twice',
      100,
    );
    // The function really sent the 1 MB text: the endpoint recorded it.
    const errored = endpoint.invocations.find((i) => i.error !== undefined);
    assert.ok(errored?.error && errored.error.errorMessage.length > 1_000_000 && errored.error.errorMessage.includes(ERROR_MARKER));

    const [page, status, metrics] = await Promise.all(
      ['/', '/status.json', '/metrics'].map(async (path) => (await fetch(`${base}${path}`)).text()),
    );
    assert.equal(await stopDaemon(run), 0, run.stderr());

    for (const [what, text] of [
      ['stdout', run.stdout()],
      ['stderr', run.stderr()],
      ['the page', page ?? ''],
      ['/status.json', status ?? ''],
      ['/metrics', metrics ?? ''],
    ] as const) {
      assert.ok(!text.includes(ERROR_MARKER), `the error text's marker leaked into ${what}`);
      assert.ok(!text.includes(BODY_MARKER), `the body's marker leaked into ${what}`);
    }

    // The log line carries the function's text, capped (1 KiB and a note of what was cut).
    const line = run.logs().find((l) => l['msg'] === 'function error; messages stay on the queue');
    assert.match(String(line?.['errorMessage']), /^failed: x+…\[\d+ bytes cut\]$/);
    assert.match(String(line?.['errorType']), /^HugeErrorx+…\[\d+ bytes cut\]$/);
    assert.ok(Buffer.byteLength(String(line?.['errorMessage'])) <= TEXT_CAP_BYTES + 32);
    const invalid = run.logs().find((l) => l['msg'] === 'invalid batchItemFailures response; the whole batch stays on the queue');
    assert.equal(invalid?.['reason'], `an itemIdentifier of ${`card ${BODY_MARKER}`.length} characters is not in the batch`);
    const lines = run
      .stdout()
      .split('\n')
      .filter((l) => l !== '');
    const longest = Math.max(...lines.map((l) => Buffer.byteLength(l)));
    assert.ok(longest < 4 * TEXT_CAP_BYTES, `the longest log line is ${longest} bytes`);

    // The status shows the error by its capped errorType, never its message; the echoed id only by its length.
    const snapshot = JSON.parse(status ?? '') as StatusSnapshot;
    const shown = snapshot.recentErrors.find((e) => e.msg === 'function error; messages stay on the queue');
    assert.match(shown?.code ?? '', /^HugeErrorx+…\[\d+ bytes cut\]$/);
    assert.equal(JSON.stringify(snapshot).includes('failed: '), false, 'no errorMessage in the status');
    const invalidShown = snapshot.recentErrors.find((e) => e.msg.startsWith('invalid batchItemFailures response'));
    assert.match(invalidShown?.detail ?? '', /^an itemIdentifier of \d+ characters is not in the batch$/);
    console.log(
      `${lines.length} log lines, the longest ${longest} bytes; the function's errorMessage was ${errored.error.errorMessage.length} bytes`,
    );
  });
});
