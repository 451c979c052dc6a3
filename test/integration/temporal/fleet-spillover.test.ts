// Issue 40, Temporal in a fleet: two real daemons (spillover only) over one DynamoDB table (dynalite), a real
// Temporal server and the test Lambda endpoint running the example worker. Each task queue is handled by one
// replica, placed like an idle SQS queue: it alone reads the backlog and buys workers, so the fleet buys what
// one replica would (without a fleet each replica buys its own, twice the workers); when that replica leaves,
// the other takes the task queue over and completes what comes next.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TEST_CREDENTIALS, TEST_REGION } from '../../support/aws.ts';
import { createFleetTable, startDynalite, uniqueTableName, type DynamoServer } from '../../support/dynamodb.ts';
import { until } from '../../support/factories.ts';
import { startOrderWorkflows, startTemporalFixture, startWorkerless, type TemporalFixture } from '../../support/temporal.ts';

const TASK_QUEUES = ['fleet-spill-a', 'fleet-spill-b'];
const MAX_WORKERS = 2;
const HANDED = 'task queue handled by another replica of the fleet: no workers bought here while it is';
const BACK = 'task queue handled here again: its backlog is read and its workers bought by this replica';

let fixture: TemporalFixture;
let dynalite: DynamoServer;

before(async () => {
  fixture = await startTemporalFixture({ taskQueues: TASK_QUEUES, tmpPrefix: 'workerless-fleet-temporal-' });
  dynalite = await startDynalite();
});

after(async () => {
  await fixture?.stop();
  await dynalite?.close();
});

type Replica = ReturnType<typeof startWorkerless>;

/** A spillover-only replica in fleet `table`: Lambda at the test endpoint, DynamoDB at dynalite, each by its own variable. */
function startReplica(table: string): Replica {
  return startWorkerless(
    [
      ...['--temporal-address', fixture.server.address, '--temporal-task-queues', TASK_QUEUES.join(',')],
      ...['--temporal-function', 'temporal-worker', '--temporal-max-workers', String(MAX_WORKERS)],
      ...['--temporal-poll-interval', '500ms', '--temporal-cool-off', '1s', '--temporal-tasks-per-worker', '5'],
      ...['--temporal-worker-lifetime', '15s', '--metrics', 'off'],
      ...['--fleet-table', table, '--fleet-name', table, '--fleet-heartbeat', '2s'],
    ],
    {
      AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
      AWS_REGION: TEST_REGION,
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_CONFIG_FILE: '/dev/null',
      AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
      AWS_ENDPOINT_URL_LAMBDA: fixture.endpoint.url,
      AWS_ENDPOINT_URL_DYNAMODB: dynalite.endpoint,
    },
  );
}

/** Whether the replica has said `msg` about `taskQueue`. */
const said = (r: Replica, msg: string, taskQueue: string) => r.logs().some((l) => l['msg'] === msg && l['taskQueue'] === taskQueue);

const workerInvocations = (taskQueue: string, since = 0) =>
  fixture.endpoint.invocations.filter(
    (r) =>
      r.functionName === 'temporal-worker' &&
      (r.payload as { taskQueue?: unknown } | null)?.taskQueue === taskQueue &&
      r.startedAt >= since,
  );

describe('Temporal spillover in a fleet (issue 40)', { timeout: 180_000 }, () => {
  it('each task queue is handled by one replica, which buys its workers alone; at a SIGTERM the other takes it over', async () => {
    const table = uniqueTableName('wl-fleet-temporal');
    await createFleetTable(dynalite.endpoint, table);
    const replicas = [startReplica(table), startReplica(table)];
    try {
      await until(() => replicas.every((r) => r.logs().some((l) => l['to'] === 'shared')), 60_000, 'both replicas sharing', 200);
      // The members placed each task queue: one of the two stops handling it, the other keeps it.
      await until(
        () => TASK_QUEUES.every((tq) => replicas.filter((r) => said(r, HANDED, tq)).length === 1),
        10_000,
        'each task queue handed to one replica',
        200,
      );
      const owner = (tq: string) => replicas.findIndex((r) => !said(r, HANDED, tq));

      // 10 tasks a queue at 5 a worker: one replica buys 2 workers a queue; two replicas on their own would buy 4.
      const startedAt = Date.now();
      const handles = (
        await Promise.all(TASK_QUEUES.map((taskQueue) => startOrderWorkflows(fixture.client, { taskQueue, count: 10, workMs: 300 })))
      ).flat();
      const results = await Promise.all(handles.map((h) => h.result()));
      assert.equal(results.length, 20);
      const bought = TASK_QUEUES.map((tq) => workerInvocations(tq, startedAt).length);
      console.log(
        `# fleet of 2, ${TASK_QUEUES.length} task queues: owners ${TASK_QUEUES.map(owner).join(' ')}; workers bought per task queue ${bought.join(' ')} (one replica's maximum ${MAX_WORKERS}; without a fleet up to ${2 * MAX_WORKERS})`,
      );
      for (const [i, n] of bought.entries()) {
        assert.ok(n >= 1 && n <= MAX_WORKERS, `${TASK_QUEUES[i]}: ${n} workers, one replica's at most`);
      }

      // The owner of the first task queue leaves; the other says it handles it and completes what comes next.
      const leaver = owner(TASK_QUEUES[0]!);
      const stayer = replicas[1 - leaver]!;
      const leftAt = Date.now();
      const stopped = await replicas[leaver]!.stop();
      assert.equal(stopped.code, 0, replicas[leaver]!.output());
      await until(() => said(stayer, BACK, TASK_QUEUES[0]!), 10_000, 'the task queue taken over', 100);
      const takenMs = Date.now() - leftAt;
      const more = await startOrderWorkflows(fixture.client, { taskQueue: TASK_QUEUES[0]!, count: 5, workMs: 100, idPrefix: 'after' });
      assert.equal((await Promise.all(more.map((h) => h.result()))).length, 5);
      console.log(`# after the owner's SIGTERM (stopped in ${stopped.stopMs} ms), the other handled its task queue within ${takenMs} ms`);
      assert.ok(takenMs <= 5_000 + stopped.stopMs, `taken over within 5 s of the stop: ${takenMs} ms`);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
    }
  });
});
