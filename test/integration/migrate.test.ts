// `workerless migrate` against the two servers that keep Lambda's SQS event source mappings, LocalStack (with lambda
// in its services) and moto: it reads a mapping with a filter, a batching window, MaximumConcurrency and
// ReportBatchItemFailures on a queue with a redrive policy, prints a config, and that config run by the daemon (with
// the test Lambda endpoint as Lambda) invokes what the filter lets through and deletes what it filters out, as the
// trigger does ("Lambda event filtering", Lambda developer guide: a message no filter matches is deleted). Then
// --cutover waits for the run's /readyz and disables the mapping (UpdateEventSourceMapping Enabled=false: State
// Disabling or Disabled), refuses while another mapping's queue is one the run does not read, and --rollback enables
// it again. Neither server runs the function, which these tests do not
// need: the daemon invokes the test Lambda endpoint. The mapping is created disabled, as a migration starts from an
// enabled one only in the switch: LocalStack's own poller would otherwise take the messages, fail to run the function
// and hand them back after a visibility timeout, and moto invokes its functions on SendMessage.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import {
  awsTestEnv,
  countMessages,
  createQueue,
  createQueueWithDlq,
  deleteQueue,
  sendMessages,
  sqsClient,
  TEST_CREDENTIALS,
  TEST_REGION,
} from '../support/aws.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { started, startDaemon, stopDaemon } from '../support/daemon.ts';
import { freePort } from '../support/http.ts';
import { startLambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { createFunction, createMapping, deleteMapping, ensureMappingServer, mappingServers, mappingState } from '../support/sqs-trigger.ts';

const record = fileURLToPath(new URL('../fixtures/functions/record.mjs', import.meta.url));
const FILTER = { body: { type: ['order'] } };

/** `workerless migrate ...` against the server: exit code, stdout, stderr. */
async function migrate(endpoint: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const run: CliRun = runCli(['migrate', ...args], {
    AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
    AWS_REGION: TEST_REGION,
    AWS_ENDPOINT_URL: endpoint,
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
  });
  const { code } = await run.exited;
  return { code, out: run.stdout(), err: run.stderr() };
}

for (const server of mappingServers()) {
  describe(`workerless migrate against ${server.name}`, { timeout: 90_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'wl-migrate-'));
    before(() => ensureMappingServer(server));
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('prints a config the daemon runs: what the filter lets through is invoked, the rest deleted; then cut-over and rollback', async () => {
      const sqs = sqsClient(server.endpoint);
      const { queue, dlq } = await createQueueWithDlq('migrate', 5, {}, sqs);
      const fn = await createFunction(server.endpoint, 'migrate-fn');
      const uuid = await createMapping(server.endpoint, {
        functionName: fn,
        queueArn: queue.arn,
        BatchSize: 5,
        MaximumBatchingWindowInSeconds: 1,
        FilterCriteria: { Filters: [{ Pattern: JSON.stringify(FILTER) }] },
        ScalingConfig: { MaximumConcurrency: 2 },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        Enabled: false,
      });

      const printed = await migrate(server.endpoint, ['--function', fn]);
      assert.equal(printed.code, 0, printed.err);
      assert.match(printed.err, /^workerless: \d+ differences? from the trigger, listed at the top of the config\n$/);
      const config = parse(printed.out) as Record<string, unknown>;
      assert.deepEqual(config, {
        region: TEST_REGION,
        metrics: false,
        function: fn,
        queues: queue.name,
        concurrency: 2,
        'batch-size': 5,
        'batch-window': '1s',
        'queue-options': { [queue.name]: { filters: [FILTER] } },
      });
      assert.ok(
        printed.out.includes(`queue ${queue.name}: SQS moves a message to ${dlq.name} after 5 receives`),
        `the redrive policy is named:\n${printed.out}`,
      );

      // The printed file, as is, run by the daemon: SQS on the server, Lambda at the test endpoint.
      const file = join(dir, `${fn}.yaml`);
      writeFileSync(file, printed.out);
      const endpoint = await startLambdaEndpoint({ handlerOutput: 'ignore', functions: { [fn]: { handler: record } } });
      const port = await freePort();
      const daemon = startDaemon(endpoint.url, ['--config', file, '--http-port', String(port)], {
        ...awsTestEnv({ lambdaEndpoint: endpoint.url }),
        AWS_ENDPOINT_URL_SQS: server.endpoint,
      });
      try {
        await started(daemon);
        const orders = await sendMessages(queue.url, ['{"type":"order","n":1}', '{"type":"order","n":2}', '{"type":"order","n":3}'], sqs);
        const others = await sendMessages(queue.url, ['{"type":"refund","n":4}', '{"type":"other"}', 'plain text'], sqs);
        const deadline = Date.now() + 30_000;
        while ((await countMessages(queue.url, sqs)) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
        assert.equal(await countMessages(queue.url, sqs), 0, 'every message deleted: the invoked ones and the filtered-out ones');
        const invoked = endpoint.invocations.flatMap((i) =>
          (i.payload as { Records: { messageId: string }[] }).Records.map((r) => r.messageId),
        );
        assert.deepEqual(invoked.toSorted(), orders.toSorted(), `only the orders were invoked (not ${others.join(', ')})`);
        assert.ok(
          endpoint.invocations.every((i) => (i.payload as { Records: unknown[] }).Records.length <= 5),
          'no batch over the batch size',
        );
        assert.equal(await countMessages(dlq.url, sqs), 0, 'nothing in the DLQ');

        // A ready run of another function does not take over this one's trigger.
        const other = await createFunction(server.endpoint, 'migrate-other');
        const otherQueue = await createQueue('migrate-other', {}, sqs);
        const otherUuid = await createMapping(server.endpoint, { functionName: other, queueArn: otherQueue.arn, BatchSize: 10 });
        const wrong = await migrate(server.endpoint, ['--function', other, '--cutover', '--ready-url', `http://127.0.0.1:${port}/readyz`]);
        const otherState = await mappingState(server.endpoint, otherUuid);
        await deleteMapping(server.endpoint, otherUuid).finally(() => deleteQueue(otherQueue.url, sqs));
        assert.doesNotMatch(otherState ?? '', /Disabl/, 'the other mapping was not touched');
        assert.deepEqual(wrong, {
          code: 1,
          out: '',
          err: `workerless: --ready-url http://127.0.0.1:${port}/readyz: that run invokes ${fn}, not ${other}; the mappings stay enabled\n`,
        });

        // Rollback enables the mapping; cut-over, once the run is ready, disables it again.
        const back = await migrate(server.endpoint, ['--function', fn, '--rollback']);
        assert.equal(back.code, 0, back.err);
        assert.match(back.out, new RegExp(`^mapping ${uuid} \\(queue ${queue.name}\\): Disabled -> Enabl(ing|ed)\\n$`));
        assert.match((await mappingState(server.endpoint, uuid)) ?? '', /^Enabl(ing|ed)$/);
        // Lambda refuses to update a mapping while it is Enabling (ResourceInUseException): wait until it is Enabled.
        for (let i = 0; i < 50 && (await mappingState(server.endpoint, uuid)) !== 'Enabled'; i++)
          await new Promise((r) => setTimeout(r, 200));
        const cut = await migrate(server.endpoint, ['--function', fn, '--cutover', '--ready-url', `http://127.0.0.1:${port}/readyz`]);
        assert.equal(cut.code, 0, cut.err);
        assert.match(cut.out, new RegExp(`^mapping ${uuid} \\(queue ${queue.name}\\): Enabl(ing|ed) -> Disabl(ing|ed)\\n$`));
        assert.match((await mappingState(server.endpoint, uuid)) ?? '', /^Disabl(ing|ed)$/);
        const again = await migrate(server.endpoint, ['--function', fn, '--cutover', '--ready-url', `http://127.0.0.1:${port}/readyz`]);
        assert.equal(again.code, 0, again.err);
        assert.match(again.out, /: already Disabl(ing|ed)\n$/, 'a second cut-over changes nothing');

        // A second mapping of the function, on a queue the run does not read: the cut-over refuses and names it.
        const unreadQueue = await createQueue('migrate-unread', {}, sqs);
        const unreadUuid = await createMapping(server.endpoint, { functionName: fn, queueArn: unreadQueue.arn, BatchSize: 10 });
        try {
          const refused = await migrate(server.endpoint, ['--function', fn, '--cutover', '--ready-url', `http://127.0.0.1:${port}/readyz`]);
          assert.deepEqual(refused, {
            code: 1,
            out: '',
            err: `workerless: --ready-url http://127.0.0.1:${port}/readyz: that run does not read queue ${unreadQueue.name} of ${fn}'s mappings, which would be left without a consumer; nothing was changed (run it with that queue, or give --partial to disable only the mappings of the queues it reads)\n`,
          });
          assert.doesNotMatch((await mappingState(server.endpoint, unreadUuid)) ?? '', /Disabl/, 'the unread queue keeps its trigger');
          const partial = await migrate(server.endpoint, [
            '--function',
            fn,
            '--cutover',
            '--ready-url',
            `http://127.0.0.1:${port}/readyz`,
            '--partial',
          ]);
          assert.equal(partial.code, 0, partial.err);
          assert.ok(partial.out.includes(`mapping ${unreadUuid} (queue ${unreadQueue.name}): kept `), partial.out);
          assert.doesNotMatch((await mappingState(server.endpoint, unreadUuid)) ?? '', /Disabl/, '--partial keeps it too');
        } finally {
          await deleteMapping(server.endpoint, unreadUuid).finally(() => deleteQueue(unreadQueue.url, sqs));
        }
        await deleteMapping(server.endpoint, uuid);
      } finally {
        assert.equal(await stopDaemon(daemon), 0);
        await endpoint.stop();
      }
    });

    it('--cutover leaves the mapping enabled while the run is not ready', async () => {
      const sqs = sqsClient(server.endpoint);
      const { queue } = await createQueueWithDlq('migrate-notready', 5, {}, sqs);
      const fn = await createFunction(server.endpoint, 'migrate-nr');
      const uuid = await createMapping(server.endpoint, { functionName: fn, queueArn: queue.arn, BatchSize: 10 });
      const port = await freePort();
      const cut = await migrate(server.endpoint, [
        '--function',
        fn,
        '--cutover',
        '--ready-url',
        `http://127.0.0.1:${port}/readyz`,
        '--ready-timeout',
        '2s',
      ]);
      assert.equal(cut.code, 1);
      assert.equal(cut.out, '');
      assert.equal(
        cut.err,
        `workerless: --ready-url http://127.0.0.1:${port}/readyz: not ready within 2 s (last answer: ECONNREFUSED); the mappings stay enabled\n`,
      );
      assert.equal(await mappingState(server.endpoint, uuid), 'Enabled');
      await deleteMapping(server.endpoint, uuid);
    });

    it('a mapping whose queue was deleted: one line naming the queue, exit 1', async () => {
      const sqs = sqsClient(server.endpoint);
      const queue = await createQueue('migrate-gone', {}, sqs);
      const fn = await createFunction(server.endpoint, 'migrate-gone');
      const uuid = await createMapping(server.endpoint, { functionName: fn, queueArn: queue.arn, Enabled: false });
      await deleteQueue(queue.url, sqs);
      const printed = await migrate(server.endpoint, ['--function', fn]);
      await deleteMapping(server.endpoint, uuid);
      assert.equal(printed.code, 1);
      assert.equal(printed.out, '');
      assert.match(
        printed.err,
        new RegExp(
          `^workerless: GetQueueUrl for queue ${queue.name} of ${fn}'s mappings: (AWS\\.SimpleQueueService\\.NonExistentQueue|QueueDoesNotExist): [^\\n]+\\n$`,
        ),
      );
    });

    it('a function without an SQS mapping: one line, exit 1', async () => {
      const fn = await createFunction(server.endpoint, 'migrate-none');
      const printed = await migrate(server.endpoint, ['--function', fn]);
      assert.deepEqual(printed, {
        code: 1,
        out: '',
        err: `workerless: function ${fn} has no SQS event source mapping: nothing to migrate\n`,
      });
    });
  });
}
