// Worker sets kept as an ECS service's desired count, against moto's ECS (moto in server mode keeps a service's
// desiredCount: TEST-INFRA, "Deployment tooling, event source mappings and ECS"). UpdateService's desiredCount is
// "the number of instantiations of the task to place and keep running in your service" (ECS API reference,
// UpdateService); DescribeServices reads it back. The task queue's readings are scripted (no Temporal server in
// this phase); the spillover controller, the sizing and the ECS calls are the real ones.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CreateClusterCommand,
  CreateServiceCommand,
  DescribeServicesCommand,
  ECSClient,
  RegisterTaskDefinitionCommand,
} from '@aws-sdk/client-ecs';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { pino } from 'pino';
import { runTemporalSpillover } from '../../src/temporal/spillover.ts';
import { ecsWorkerSet } from '../../src/temporal/ecs-worker-set.ts';
import type { TemporalConfig } from '../../src/temporal/options.ts';
import type { TaskQueueStats, TaskTypeStats } from '../../src/temporal/task-queue-stats.ts';
import { runCli } from '../support/cli.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';

const moto = sqsServers().find((s) => s.name === 'moto')!;
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
const ecs = new ECSClient({ region: 'us-east-1', endpoint: moto.endpoint, credentials });
const CLUSTER = `workerless-${Date.now()}`;
const SERVICE = 'temporal-workers';

async function desiredCount(service = SERVICE): Promise<number | undefined> {
  const out = await ecs.send(new DescribeServicesCommand({ cluster: CLUSTER, services: [service] }));
  return out.services?.[0]?.desiredCount;
}

function typeStats(backlog: number, addRatePerSec: number, dispatchRatePerSec: number): TaskTypeStats {
  return {
    backlog,
    backlogAgeMs: 0,
    addRatePerSec,
    dispatchRatePerSec,
    known: true,
    byPriority: new Map(),
    rateLimitPerSec: undefined,
    pollers: 1,
    lastPollAt: undefined,
    pollerInfos: [],
  };
}

before(async () => {
  await ensureSqsServer(moto);
  await ecs.send(new CreateClusterCommand({ clusterName: CLUSTER }));
  await ecs.send(
    new RegisterTaskDefinitionCommand({
      family: 'temporal-worker',
      containerDefinitions: [{ name: 'worker', image: 'example/temporal-worker', memory: 512 }],
    }),
  );
  await ecs.send(new CreateServiceCommand({ cluster: CLUSTER, serviceName: SERVICE, taskDefinition: 'temporal-worker', desiredCount: 0 }));
});

after(() => ecs.destroy());

describe('worker sets on an ECS service (moto)', { timeout: 60_000 }, () => {
  it('follows the sizing up and down within min and max, by capped steps, each change one UpdateService', async () => {
    const config: TemporalConfig = {
      address: '127.0.0.1:7233',
      namespace: 'default',
      taskQueues: ['orders'],
      functionName: 'temporal-worker',
      maxWorkers: 1,
      maxWorkersTotal: undefined,
      workerLifetimeMs: 60_000,
      workerStartTimeoutMs: 60_000,
      pollIntervalMs: 1_000,
      backlogThreshold: 1_000_000,
      maxBacklogAgeMs: undefined,
      coolOffMs: 1_000,
      tasksPerWorker: 10,
      spillPriority: undefined,
      fairness: false,
      versionFunctions: {},
      workerSet: {
        min: 1,
        max: 5,
        capacityPerSec: 1,
        maxStep: 2,
        upCooldownMs: 0,
        downCooldownMs: 5_000,
        ecsService: { cluster: CLUSTER, service: SERVICE },
      },
      tls: undefined,
      apiKey: undefined,
    };
    // A burst (tasks arrive at 6/s, 60 wait) for 4 readings, then nothing: one reading a (fake) second.
    let now = 1_700_000_000_000;
    let tick = 0;
    const applied: Array<{ tick: number; desired: number; ecs: number | undefined }> = [];
    const real = ecsWorkerSet(ecs, { cluster: CLUSTER, service: SERVICE }, moto.endpoint);
    const controller = new AbortController();
    const logs: Array<Record<string, unknown>> = [];
    await runTemporalSpillover(
      config,
      {
        logger: pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) }),
        metrics: { record: () => undefined },
        lambda: new LambdaClient({ region: 'us-east-1', credentials }),
        invoker: { invoke: () => Promise.resolve({ kind: 'invoked', requestId: undefined }) },
        clock: {
          now: () => now,
          sleep: async (ms) => {
            now += ms;
            if (++tick >= 16) controller.abort();
            await new Promise((resolve) => setImmediate(resolve));
          },
        },
        workerSetActuator: {
          apply: async (desired, signal) => {
            const outcome = await real.apply(desired, signal);
            applied.push({ tick, desired, ecs: await desiredCount() });
            return outcome;
          },
        },
        connect: () =>
          Promise.resolve({
            read: (): Promise<TaskQueueStats> => {
              const burst = tick < 4;
              return Promise.resolve({
                workflow: typeStats(0, burst ? 6 : 0, burst ? 6 : 0),
                activity: typeStats(burst ? 60 : 0, burst ? 6 : 0, burst ? 3 : 0),
                versions: [],
              });
            },
            close: () => Promise.resolve(),
          }),
      },
      controller.signal,
    );
    const sizes = applied.map((a) => a.desired);
    assert.deepEqual(
      applied.map((a) => a.ecs),
      sizes,
      'moto keeps each desired count',
    );
    // From the minimum (1): up by 2 at most to the maximum (5); down by 2 at most after the 5 s cool-down, to 1.
    assert.equal(Math.max(...sizes), 5);
    assert.equal(sizes.at(-1), 1);
    assert.ok(
      sizes.every((d, i) => d >= 1 && d <= 5 && Math.abs(d - (i === 0 ? 1 : sizes[i - 1]!)) <= 2),
      sizes.join(' -> '),
    );
    console.log(`# ECS desired count over the burst: ${applied.map((a) => `t${a.tick}:${String(a.ecs)}`).join(' ')}`);
    const firstDown = applied.findIndex((a, i) => i > 0 && a.desired < applied[i - 1]!.desired);
    const lastUp = applied.findLastIndex((a, i) => i > 0 && a.desired > applied[i - 1]!.desired);
    assert.ok(applied[firstDown]!.tick - applied[lastUp]!.tick >= 5, JSON.stringify(applied));
    assert.equal(await desiredCount(), 1);
    assert.ok(!logs.some((l) => l['msg'] === 'could not set the worker set size; retrying at each reading'));
  });

  it('a service ECS does not know: one line naming the service, the endpoint and the error code', async () => {
    const missing = ecsWorkerSet(ecs, { cluster: CLUSTER, service: 'no-such-service' }, moto.endpoint);
    const outcome = await missing.apply(2, AbortSignal.timeout(10_000));
    assert.equal(outcome.ok, false);
    assert.match(
      outcome.ok ? '' : outcome.reason,
      new RegExp(`^UpdateService ${CLUSTER}/no-such-service at ${moto.endpoint.replace(/[.]/g, '\\.')}: ServiceNotFoundException: `),
    );
  });

  it('workerless check reads the service with DescribeServices: ACTIVE passes, a missing one fails its line', async () => {
    // The Temporal address answers nothing and moto has no worker function: only the ECS lines matter here.
    const check = async (service: string) => {
      const run = runCli(
        [
          'check',
          '--temporal-task-queues',
          'orders',
          '--temporal-function',
          'temporal-worker',
          '--temporal-address',
          '127.0.0.1:9',
          '--temporal-worker-set-max',
          '4',
          '--temporal-ecs-service',
          `${CLUSTER}/${service}`,
          '--endpoint-url',
          moto.endpoint,
          '--region',
          'us-east-1',
          '--metrics',
          'off',
        ],
        { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' },
      );
      const { code } = await run.exited;
      assert.equal(code, 1, run.stdout() + run.stderr());
      return run
        .stdout()
        .split('\n')
        .filter((l) => l.includes('ECS service'));
    };
    const found = await check(SERVICE);
    assert.equal(found.length, 1, found.join('\n'));
    assert.match(
      found[0]!,
      new RegExp(`^ok   ECS service ${CLUSTER}/${SERVICE} \\(ACTIVE, desired ${String(await desiredCount())}, running \\d+\\)$`),
    );
    assert.deepEqual(await check('no-such-service'), [
      `FAIL ECS service ${CLUSTER}/no-such-service: not found in cluster ${CLUSTER} (MISSING)`,
    ]);
  });
});
