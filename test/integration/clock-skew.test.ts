// Issue 19, item 3: a machine whose clock is 15 minutes off AWS's. AWS refuses every request signed more than
// 5 minutes from its own clock (InvalidSignatureException, "Signature expired"; the IAM user guide's
// signature-v4-troubleshooting page), and the SDK corrects its clock offset from the Date header of the refusal
// and retries. Before the fix, workerless exited 1 at start-up: with `lean`, "cannot read queue ...:
// InvalidSignatureException: Signature expired"; with `sdk`, the Lambda DryRun failed (one attempt only).
// Here proxies whose clock is 15 minutes ahead sit in front of LocalStack (SQS) and the test Lambda endpoint,
// refusing with AWS's own error shapes (test/support/skewed-clock.ts); start-up and dispatch must recover with
// both clients, and each service's correction is logged once.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { countMessages, createQueue, localstackEndpoint, sendMessages } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { problems, startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { runsByMessage } from '../support/message-runs.ts';
import { startSkewProxy, type SkewProxy } from '../support/skewed-clock.ts';

const SKEW_MS = 15 * 60_000;

describe('clock skew: 15 minutes between workerless and AWS', () => {
  let endpoint: LambdaEndpoint;
  let sqsProxy: SkewProxy;
  let lambdaProxy: SkewProxy;
  let daemon: CliRun | undefined;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({ functions: { record: { handler: functionFixture('record.mjs'), timeoutSec: 30 } } });
  });
  after(() => endpoint.stop());
  afterEach(() => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    daemon = undefined;
    sqsProxy.close();
    lambdaProxy.close();
  });

  for (const kind of ['lean', 'sdk'] as const) {
    it(`--aws-client ${kind}: start-up and dispatch recover, every message is invoked once and deleted, and each correction is logged once`, async () => {
      sqsProxy = await startSkewProxy(localstackEndpoint(), SKEW_MS);
      lambdaProxy = await startSkewProxy(endpoint.url, SKEW_MS);
      const q = await createQueue(`wl-skew-${kind}`, { VisibilityTimeout: '30' });
      const ids = await sendMessages(q.url, ['a', 'b', 'c', 'd', 'e']);
      const run = startDaemon(lambdaProxy.url, ['--aws-client', kind, '--function', 'record', '--queues', q.name, '--concurrency', '4'], {
        AWS_ENDPOINT_URL_SQS: sqsProxy.url,
      });
      daemon = run;
      await Promise.race([started(run), run.exited.then(({ code }) => assert.fail(`exited ${code} at start-up:\n${problems(run)}`))]);
      await until(() => ids.every((id) => runsByMessage(endpoint, q.arn).get(id)?.length === 1), 20_000, 'every message invoked', 50);
      await until(async () => (await countMessages(q.url)) === 0, 20_000, 'every message deleted', 100);
      assert.equal(await stopDaemon(run), 0);

      for (const id of ids) assert.equal(runsByMessage(endpoint, q.arn).get(id)?.length, 1, `message ${id} ran once`);
      assert.ok(sqsProxy.refused >= 1 && lambdaProxy.refused >= 1, `refused: sqs ${sqsProxy.refused}, lambda ${lambdaProxy.refused}`);
      const corrections = run.logs().filter((l) => typeof l['offsetMs'] === 'number');
      assert.deepEqual(corrections.map((l) => l['service']).sort(), ['lambda', 'sqs'], JSON.stringify(corrections));
      for (const l of corrections) {
        assert.equal(l['level'], 40);
        assert.ok(Math.abs(Number(l['offsetMs']) - SKEW_MS) < 2_000, `offsetMs ${String(l['offsetMs'])}`);
      }
    });
  }
});
