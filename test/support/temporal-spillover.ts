// The spillover controller run inside the test process against a Temporal fixture (test/support/temporal.ts):
// what spillover.test.ts and spillover-v2.test.ts share. A config with the tests' quick defaults, the controller
// in the background recording its metrics and logs, the endpoint's invocations of one function, and a long-lived
// worker outside Lambda for the example workflows.
import { LambdaClient } from '@aws-sdk/client-lambda';
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { pino } from 'pino';
import * as activities from '../../examples/temporal-lambda-worker/activities.ts';
import type { MetricDatum } from '../../src/core/telemetry/metrics-sink.ts';
import type { TemporalConfig } from '../../src/temporal/options.ts';
import { runTemporalSpillover } from '../../src/temporal/spillover.ts';
import { TEST_CREDENTIALS, TEST_REGION } from './aws.ts';
import type { InvocationRecord } from './lambda-endpoint/server.ts';
import { startTemporalFixture, type TemporalFixture, type TemporalFixtureOptions } from './temporal.ts';

export interface SpilloverBedOptions extends TemporalFixtureOptions {
  /** The 'temporal-worker' function's timeout, and so the worker lifetime the controller assumes. */
  workerTimeoutSec: number;
  /** The controller's workerStartTimeoutMs in every config(). */
  workerStartTimeoutMs: number;
}

export interface SpilloverRun {
  readonly metrics: MetricDatum[];
  /** The controller's log lines (debug and up), parsed. */
  readonly logs: Array<Record<string, unknown>>;
  /** Aborts the controller; resolves once it has, with how long that took in ms. */
  stop(): Promise<number>;
}

/** The Temporal fixture, with the controller's helpers; stop() stops all of it. */
export interface SpilloverBed extends TemporalFixture {
  /** A config for the fixture's server: one task queue per test, polls every 500 ms, 1.5 s cool-off, 2 tasks per worker. */
  config(overrides: Partial<TemporalConfig>): TemporalConfig;
  /** Runs the controller in the background, invoking through the fixture's Lambda endpoint. */
  run(config: TemporalConfig): SpilloverRun;
  /** The endpoint's invocations of `functionName`, of one task queue when given. */
  invocations(functionName: string, taskQueue?: string): InvocationRecord[];
  /** A long-lived worker for the example workflows and activities, outside Lambda; close() closes its connection. */
  startLongLivedWorker(taskQueue: string, options?: Partial<WorkerOptions>): Promise<{ worker: Worker; close: () => Promise<void> }>;
}

export async function startSpilloverBed(options: SpilloverBedOptions): Promise<SpilloverBed> {
  // Silence the SDK's own INFO lines; failures still surface through assertions.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const fixture = await startTemporalFixture(options);
  const { server, endpoint, bundlePath } = fixture;
  const lambda = new LambdaClient({ endpoint: endpoint.url, region: TEST_REGION, credentials: TEST_CREDENTIALS, maxAttempts: 1 });
  return {
    ...fixture,
    config: (overrides) => ({
      address: server.address,
      namespace: server.namespace,
      taskQueues: [],
      functionName: 'temporal-worker',
      maxWorkers: 2,
      maxWorkersTotal: undefined,
      workerLifetimeMs: options.workerTimeoutSec * 1000,
      workerStartTimeoutMs: options.workerStartTimeoutMs,
      pollIntervalMs: 500,
      backlogThreshold: 0,
      maxBacklogAgeMs: undefined,
      coolOffMs: 1_500,
      tasksPerWorker: 2,
      spillPriority: undefined,
      fairness: false,
      versionFunctions: {},
      workerSet: undefined,
      tls: undefined,
      apiKey: undefined,
      ...overrides,
    }),
    run(config) {
      const metrics: MetricDatum[] = [];
      const logs: Array<Record<string, unknown>> = [];
      const controller = new AbortController();
      const logger = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) });
      const running = runTemporalSpillover(config, { logger, metrics: { record: (d) => metrics.push(d) }, lambda }, controller.signal);
      return {
        metrics,
        logs,
        async stop() {
          const at = Date.now();
          controller.abort();
          await running;
          return Date.now() - at;
        },
      };
    },
    invocations: (functionName, taskQueue) =>
      endpoint.invocations.filter(
        (r) =>
          r.functionName === functionName &&
          (taskQueue === undefined || (r.payload as { taskQueue?: unknown } | null)?.taskQueue === taskQueue),
      ),
    async startLongLivedWorker(taskQueue, workerOptions = {}) {
      const workerConnection = await NativeConnection.connect({ address: server.address });
      try {
        const worker = await Worker.create({
          connection: workerConnection,
          namespace: server.namespace,
          taskQueue,
          workflowBundle: { codePath: bundlePath },
          activities,
          ...workerOptions,
        });
        return { worker, close: () => workerConnection.close() };
      } catch (err) {
        await workerConnection.close();
        throw err;
      }
    },
    async stop() {
      lambda.destroy();
      await fixture.stop();
    },
  };
}
