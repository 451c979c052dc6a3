// A Temporal worker hosted in AWS Lambda, started by workerless (or any Event invocation) when its task queue
// has a backlog. Each invocation connects afresh, polls until the deadline minus the shutdown buffer, then
// stops polling, lets in-flight tasks finish within the stop timeout, and returns.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type NativeConnectionOptions } from '@temporalio/worker';
import * as activities from './activities.ts';
import { pollingWindowMs, workerSettingsFromEnv, type WorkerSettings } from './settings.ts';

/** The part of the Lambda context the worker uses. */
export interface LambdaContext {
  readonly awsRequestId: string;
  readonly functionName: string;
  readonly invokedFunctionArn: string;
  getRemainingTimeInMillis(): number;
}

export interface WorkerRunSummary {
  readonly requestId: string;
  readonly taskQueue: string;
  /** How long the worker polled; 0 when too little time was left. */
  readonly polledMs: number;
  /** From the start of the handler to the end of the drain. */
  readonly durationMs: number;
}

export async function handler(event: unknown, context: LambdaContext): Promise<WorkerRunSummary> {
  const startedAt = Date.now();
  const settings = workerSettingsFromEnv(process.env, event);
  const base = { requestId: context.awsRequestId, taskQueue: settings.taskQueue };
  const window = (): number =>
    pollingWindowMs(
      context.getRemainingTimeInMillis(),
      settings.shutdownBufferMs,
      settings.expiresAt !== undefined ? settings.expiresAt - Date.now() : undefined,
    );
  if (settings.versionMismatch !== undefined) {
    log('warn', 'wrong version for this code; not polling', { ...base, problem: settings.versionMismatch });
    return { ...base, polledMs: 0, durationMs: Date.now() - startedAt };
  }
  const tooLate = (): boolean => settings.startBy !== undefined && Date.now() > settings.startBy;
  if (window() === 0 || tooLate()) {
    // The function timeout is too short for the buffer, or Lambda started a queued Event too late: workerless
    // has stopped counting this worker (startBy, expiresAt), so polling now would exceed its worker limits.
    log('warn', 'not enough time left to poll', {
      ...base,
      shutdownBufferMs: settings.shutdownBufferMs,
      expiresAt: settings.expiresAt,
      startBy: settings.startBy,
    });
    return { ...base, polledMs: 0, durationMs: Date.now() - startedAt };
  }

  const connection = await NativeConnection.connect(await connectionOptions(settings));
  try {
    const worker = await Worker.create({
      connection,
      namespace: settings.namespace,
      taskQueue: settings.taskQueue,
      ...(settings.workflowBundlePath !== undefined
        ? { workflowBundle: { codePath: settings.workflowBundlePath } }
        : { workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)) }),
      activities,
      // Shows up in DescribeTaskQueue pollers and workflow histories. The same form as @temporalio/lambda-worker's
      // runWorker: workerless finds the request id of its Invoke in it and so knows this worker is alive.
      identity: `${context.awsRequestId}@${context.invokedFunctionArn}`,
      shutdownGraceTime: settings.stopTimeoutMs,
      maxConcurrentActivityTaskExecutions: settings.maxConcurrentActivities,
      ...(settings.deployment !== undefined
        ? {
            workerDeploymentOptions: {
              useWorkerVersioning: true,
              version: { deploymentName: settings.deployment.deploymentName, buildId: settings.deployment.buildId },
              defaultVersioningBehavior: settings.deployment.behavior,
            },
          }
        : {}),
    });
    // Connecting and creating the worker can take seconds on a cold start: check the start deadline again.
    if (tooLate()) {
      log('warn', 'started too late to poll', { ...base, startBy: settings.startBy });
      return { ...base, polledMs: 0, durationMs: Date.now() - startedAt };
    }
    // Measured after connecting and creating the worker: cold-start time comes out of the polling window.
    const polledMs = window();
    log('info', 'worker polling', {
      ...base,
      polledMs,
      shutdownBufferMs: settings.shutdownBufferMs,
      buildId: settings.deployment?.buildId,
    });
    // runUntil stops polling when the timer fires, then waits for in-flight tasks (up to shutdownGraceTime).
    await worker.runUntil(sleep(polledMs));
    const durationMs = Date.now() - startedAt;
    log('info', 'worker drained', { ...base, polledMs, durationMs });
    return { ...base, polledMs, durationMs };
  } finally {
    await connection.close();
  }
}

async function connectionOptions(settings: WorkerSettings): Promise<NativeConnectionOptions> {
  const options: NativeConnectionOptions = { address: settings.address };
  if (settings.tls !== undefined) {
    const { clientCertPath, clientKeyPath, serverCaCertPath, serverName } = settings.tls;
    options.tls = {
      ...(serverName !== undefined ? { serverNameOverride: serverName } : {}),
      ...(serverCaCertPath !== undefined ? { serverRootCACertificate: await readFile(serverCaCertPath) } : {}),
      ...(clientCertPath !== undefined && clientKeyPath !== undefined
        ? { clientCertPair: { crt: await readFile(clientCertPath), key: await readFile(clientKeyPath) } }
        : {}),
    };
  }
  if (settings.apiKey !== undefined) {
    options.apiKey = settings.apiKey;
    options.metadata = { 'temporal-namespace': settings.namespace };
  }
  return options;
}

function log(level: 'info' | 'warn', msg: string, fields: Record<string, unknown>): void {
  // One JSON line per event: CloudWatch Logs Insights can query the fields.
  console.log(JSON.stringify({ level, msg, ...fields }));
}
