// The demo behind `npm run demo:temporal` (scripts/demo-temporal.sh builds the Temporal CLI first): workflows
// wait on a task queue that no worker polls; workerless sees the backlog and invokes the example worker function
// (examples/temporal-lambda-worker, served by the test Lambda endpoint), which runs them to completion. The
// server, the function and the daemon come from test/support/temporal.ts, as in the Temporal integration tests.
import { spilloverOnlyArgs, startOrderWorkflows, startTemporalFixture, startWorkerless } from '../test/support/temporal.ts';

const TASK_QUEUE = 'demo-orders';
const WORKFLOWS = Number(process.env['DEMO_WORKFLOWS'] ?? 6);
const t0 = Date.now();
const log = (line: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s] ${line}`);

log('starting a Temporal dev server, bundling the example workflows and the example worker function');
const fixture = await startTemporalFixture({ taskQueues: [TASK_QUEUE], tmpPrefix: 'workerless-demo-temporal-', workerTimeoutSec: 15 });
// Read once by the fixture; startWorkerless passes this environment on, and workerless would warn about the
// WORKERLESS_-prefixed variable it does not know.
delete process.env['WORKERLESS_TEMPORAL_CLI'];
let workerless: ReturnType<typeof startWorkerless> | undefined;
let watcher: NodeJS.Timeout | undefined;
try {
  log(`Temporal at ${fixture.server.address}; Lambda endpoint at ${fixture.endpoint.url} serving "temporal-worker"`);
  const handles = await startOrderWorkflows(fixture.client, {
    taskQueue: TASK_QUEUE,
    count: WORKFLOWS,
    workMs: 300,
    idPrefix: 'demo-order',
  });
  log(`started ${WORKFLOWS} orderWorkflow runs on task queue "${TASK_QUEUE}"; no worker polls it`);

  const args = [...spilloverOnlyArgs(fixture, TASK_QUEUE), '--temporal-max-workers', '2', '--temporal-worker-lifetime', '15s'];
  log(`workerless ${args.join(' ')} --temporal-address ${fixture.server.address}`);
  const daemon = startWorkerless([...args, '--temporal-address', fixture.server.address], {
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  });
  workerless = daemon;

  // The daemon's decisions (its JSON log) and each worker invocation as the Lambda endpoint sees it.
  let linesShown = 0;
  const shown = new Map<string, string>();
  watcher = setInterval(() => {
    const lines = daemon.logs();
    for (const l of lines.slice(linesShown)) {
      if (l['msg'] === 'workers invoked' || l['msg'] === 'workerless started' || Number(l['level']) >= 40) {
        const { level: _level, time: _time, pid: _pid, hostname: _hostname, msg, ...fields } = l;
        log(`workerless: ${String(msg)} ${JSON.stringify(fields)}`);
      }
    }
    linesShown = lines.length;
    for (const inv of fixture.endpoint.invocations) {
      if (shown.get(inv.requestId) === inv.status) continue;
      shown.set(inv.requestId, inv.status);
      const took = inv.endedAt === undefined ? '' : ` after ${((inv.endedAt - inv.startedAt) / 1000).toFixed(1)} s`;
      log(`Lambda: ${inv.functionName} (${inv.invocationType}) ${inv.requestId.slice(0, 8)} ${inv.status}${took}`);
    }
  }, 100);

  await Promise.all(
    handles.map(async (h) => {
      const result: unknown = await h.result();
      log(`workflow ${h.workflowId} completed: ${JSON.stringify(result)}`);
    }),
  );
  const invoked = fixture.endpoint.invocations.filter((i) => i.functionName === 'temporal-worker').length;
  log(`all ${WORKFLOWS} workflows completed by ${invoked} Lambda worker invocation(s), with no long-lived worker`);
} finally {
  if (watcher) clearInterval(watcher);
  if (workerless) {
    const { code, stopMs } = await workerless.stop();
    log(`workerless stopped on SIGTERM in ${stopMs} ms with exit code ${String(code)}`);
  }
  await fixture.stop();
  log('stopped the Lambda endpoint and the Temporal server; demo finished');
}
