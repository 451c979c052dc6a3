// The chaos run: the built daemon against LocalStack SQS and the test Lambda endpoint, each behind a fault
// proxy, while function errors, throttles, SQS 5xx bursts, hung SQS calls, lost Invoke answers and SIGTERM /
// kill -9 restarts come and go. Afterwards every message is checked by id:
//   - none lost: each had a successful invocation and is gone from the queue;
//   - none deleted before its function succeeded (checked per receipt handle, which is stricter);
//   - none invoked twice at the same time;
//   - the DLQ (maxReceiveCount 3) is empty: faults, throttles and restarts must not count as attempts;
//   - 0 overlapping invocations of any message id, counted a second time by the Lambda endpoint itself.
//
// A second queue (a fifth of the messages) tests the visibility lease (issue 20): its visibility timeout is
// lowered from 20 s to 2 s mid-run, which the daemons must pick up (--visibility-refresh 2s) without ever
// running a message twice at once, and its ChangeMessageVisibilityBatch calls fail for longer than 2 s at a
// time, so leases of batches held by throttles lapse and those batches must not be invoked. The daemons run
// with --adaptive-concurrency on and a per-queue maximum on that queue.
//
//   node test/chaos/chaos.ts --messages 20000          (scripts/chaos.sh builds first and starts LocalStack)
// test/integration/chaos.test.ts runs the same code with fewer messages in CI.
//
// Why the numbers are what they are:
// - VisibilityTimeout 5 s: an unknown Invoke outcome holds its messages for one visibility timeout, and a
//   kill -9 strands messages for one, so a short timeout keeps the run short. The handler works far below it
//   (5-80 ms), so a message stranded by kill -9 cannot come back while its killed invocation still runs.
// - Each message is failed by the function at most once (on its first receive), so with maxReceiveCount 3 one
//   more receive is left for a restart that strands it; a message in the DLQ needed a third wasted receive.
// - The lease queue's maxReceiveCount is 10: a lapsed lease hands its messages back to SQS by design, and
//   each lapse is one more receive.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  awsTestEnv,
  countMessages,
  createQueueWithDlq,
  deleteQueue,
  drainQueue,
  localstackEndpoint,
  messageCounts,
  sendMessages,
  sqsClient,
  type TestQueue,
} from '../support/aws.ts';
import { SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { CLI } from '../support/cli.ts';
import { startFaultProxy, type Operation, type RequestFault } from '../support/fault-proxy.ts';
import { startLambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { overlappingRuns, runsByMessage } from '../support/message-runs.ts';
import type { ChaosBody, InvocationLine } from './recording-handler.ts';
import { seeded } from '../support/seeded.ts';

export interface ChaosOptions {
  /** Messages to send; default 5000. */
  messages?: number;
  /** --concurrency of the daemon; default 10. */
  concurrency?: number;
  /**
   * Reserved concurrency of the function, well below concurrency so that throttles are real; default 2 (the
   * run is bound by receives, so the function is rarely busier than that).
   */
  reservedConcurrency?: number;
  /** --batch-size of the daemon; default 10. */
  batchSize?: number;
  /**
   * Share of messages the function fails on their first receive; default 0.1. A quarter of them by a function
   * error, which fails their whole batch, the rest by batchItemFailures.
   */
  failShare?: number;
  /** Share of messages sent to the lease queue (see above); default 0.2. */
  leaseShare?: number;
  /** Seconds after the first start at which the lease queue's timeout is lowered from 20 s to 2 s; default 4 (before the first restart). */
  lowerVisibilityAtSec?: number;
  /** Episodes of failed extensions on the lease queue while Lambda throttles everything (see below); default 3. */
  lapseEpisodes?: number;
  /** Seconds between restarts, drawn from [min, max]; default [8, 15]. */
  restartEverySec?: readonly [number, number];
  /** Every how many restarts one is a kill -9 (the others are SIGTERM); default 2. */
  killEvery?: number;
  /** Give up waiting for the queue to empty after this long; default 120 s + 40 ms per message. */
  deadlineSec?: number;
  /**
   * Seed for the messages (work, which fail) and the fault draws; default random. The messages replay exactly;
   * the faults only roughly, since which request meets a draw depends on timing.
   */
  seed?: number;
  /** Where records, daemon logs and the report go; default a new temporary directory. */
  outDir?: string;
  /** The built CLI; default dist/src/main.js (WORKERLESS_CLI overrides it). */
  cli?: string;
  /** Progress lines; default none. */
  progress?: (line: string) => void;
}

export type ViolationKind =
  | 'lost'
  | 'left-on-queue'
  | 'deleted-before-success'
  | 'concurrent-invocations'
  | 'overlapping-runs'
  | 'in-dlq'
  | 'unfinished-invocation'
  | 'unclean-stop'
  | 'daemon-died';

export interface Violation {
  kind: ViolationKind;
  /** Message ids from the bodies (m-000123), where the violation is about messages. */
  ids: string[];
  detail: string;
}

export interface ChaosReport {
  seed: number;
  messages: number;
  /** From the first daemon start until every message was deleted (or the deadline). */
  durationSec: number;
  messagesPerSec: number;
  /** Invocations the function ran (a batch is one invocation). */
  invocations: number;
  /** Message-invocations: how many times a message was handed to the function. */
  messageInvocations: number;
  functionFailures: number;
  throttles: number;
  /** DeleteMessageBatch entries the daemon sent, each checked against the function's records. */
  deleteEntries: number;
  /** Messages that ran again after a successful invocation (allowed: at-least-once). */
  duplicatesAfterSuccess: number;
  /** Pairs of invocations of one message id that ran at the same time, as the Lambda endpoint counted them. */
  overlappingRuns: number;
  /** Batches the daemons did not invoke because their visibility lease had lapsed (from their logs). */
  lapsedBatches: number;
  /** When the lease queue's visibility timeout was lowered (s after the first start), and the daemons that read it. */
  visibilityLowered: { atSec: number; daemonsThatReadIt: number };
  /** Faults the proxies applied, by "Operation fault". */
  faults: Record<string, number>;
  restarts: { sigterm: number; kill9: number };
  /** Warn and error lines of every daemon, by message. */
  daemonWarnings: Record<string, number>;
  queueEmpty: boolean;
  dlqCount: number;
  violations: Violation[];
  outDir: string;
}

const HANDLER = fileURLToPath(new URL('./recording-handler.ts', import.meta.url));
const FUNCTION = 'chaos';
const VISIBILITY_TIMEOUT_SEC = 5;
const MAX_RECEIVE_COUNT = 3;
/** The lease queue: its timeout at creation, the one it is lowered to, and its redrive (see above). */
const LEASE_QUEUE_START_SEC = 20;
const LEASE_QUEUE_LOWERED_SEC = 2;
const LEASE_MAX_RECEIVE_COUNT = 10;
/** The most loops that may hold the lease queue at once (--queue-max-concurrency). */
const LEASE_QUEUE_MAX = 3;
const LAPSED_MSG = 'the visibility lease lapsed before the invocation; not invoking these messages, SQS delivers them again';
const CHANGED_MSG = "the queue's visibility timeout changed; receives from now on state it, leases already open keep theirs";
/** SQS operations the fault episodes hit. Start-up calls are left alone: a daemon that cannot start proves nothing. */
const SQS_RUNTIME_OPS: readonly Operation[] = ['ReceiveMessage', 'DeleteMessageBatch', 'ChangeMessageVisibilityBatch'];

interface Daemon {
  child: ChildProcess;
  index: number;
  started: Promise<boolean>;
  exited: Promise<number | null>;
  /** Set when we stop it, so an exit we did not ask for stands out. */
  stopping: boolean;
}

export async function runChaos(options: ChaosOptions = {}): Promise<ChaosReport> {
  const n = options.messages ?? 5000;
  const concurrency = options.concurrency ?? 10;
  const reserved = options.reservedConcurrency ?? 2;
  const batchSize = options.batchSize ?? 10;
  const failShare = options.failShare ?? 0.1;
  const leaseShare = options.leaseShare ?? 0.2;
  const lowerAtMs = (options.lowerVisibilityAtSec ?? 4) * 1000;
  const lapseEpisodes = options.lapseEpisodes ?? 3;
  const [restartMin, restartMax] = options.restartEverySec ?? [8, 15];
  const killEvery = options.killEvery ?? 2;
  const deadlineMs = (options.deadlineSec ?? 120 + n * 0.04) * 1000;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const cli = options.cli ?? process.env['WORKERLESS_CLI'] ?? CLI;
  const outDir = options.outDir ?? mkdtempSync(join(tmpdir(), 'wl-chaos-'));
  const recordDir = join(outDir, 'invocations');
  mkdirSync(recordDir, { recursive: true });
  const progress = options.progress ?? (() => {});
  const random = seeded(seed);
  const violations: Violation[] = [];

  await ensureLocalStack();
  const sqs = sqsClient();
  const { queue, dlq } = await createQueueWithDlq(
    'wl-chaos',
    MAX_RECEIVE_COUNT,
    { VisibilityTimeout: String(VISIBILITY_TIMEOUT_SEC) },
    sqs,
  );
  const { queue: leaseQueue, dlq: leaseDlq } = await createQueueWithDlq(
    'wl-chaos-lease',
    LEASE_MAX_RECEIVE_COUNT,
    { VisibilityTimeout: String(LEASE_QUEUE_START_SEC) },
    sqs,
  );

  // Messages: a unique id, a short amount of work, and whether the function fails it on its first receive.
  const bodies: ChaosBody[] = Array.from({ length: n }, (_, i) => ({
    id: `m-${String(i).padStart(6, '0')}`,
    sleepMs: 5 + Math.floor(random() * 75),
    fail: random() < failShare ? (random() < 0.25 ? 'error' : 'item') : false,
  }));
  const sendStarted = Date.now();
  const slices = 8;
  // Every k-th message goes to the lease queue.
  const leaseEvery = leaseShare > 0 ? Math.max(1, Math.round(1 / leaseShare)) : Infinity;
  const queueOf = (i: number): TestQueue => (i % leaseEvery === leaseEvery - 1 ? leaseQueue : queue);
  await Promise.all(
    [queue, leaseQueue].flatMap((q) =>
      Array.from({ length: slices }, (_, s) =>
        sendMessages(
          q.url,
          bodies.filter((_, i) => i % slices === s && queueOf(i) === q).map((b) => JSON.stringify(b)),
          sqs,
        ),
      ),
    ),
  );
  progress(
    `sent ${n} messages to ${queue.name} and ${leaseQueue.name} in ${((Date.now() - sendStarted) / 1000).toFixed(1)} s (seed ${seed}, out ${outDir})`,
  );

  const endpoint = await startLambdaEndpoint({
    handlerOutput: 'ignore',
    functions: { [FUNCTION]: { handler: HANDLER, timeoutSec: 3, reservedConcurrency: reserved, env: { CHAOS_RECORD_DIR: recordDir } } },
  });
  // Every DeleteMessageBatch the daemon sends, with the time it arrived: checked against the function's records.
  const deletes: { at: number; receiptHandle: string }[] = [];
  const sqsProxy = await startFaultProxy({
    upstream: localstackEndpoint(),
    random,
    onRequest(request) {
      if (request.operation !== 'DeleteMessageBatch') return;
      const at = Date.now();
      const entries = (JSON.parse(request.body) as { Entries?: { ReceiptHandle?: string }[] }).Entries ?? [];
      for (const e of entries) deletes.push({ at, receiptHandle: e.ReceiptHandle ?? '' });
    },
  });
  const lambdaProxy = await startFaultProxy({ upstream: endpoint.url, random });

  // Lost Invoke answers all run long: a reset after the request was written (the function runs on), a reset
  // after Lambda answered, and a 5xx. Each holds its messages for a visibility timeout, so the shares are low.
  const invokeOnly = { operation: 'Invoke', invocationType: 'RequestResponse' } as const;
  lambdaProxy.inject({ ...invokeOnly, fault: { kind: 'reset-after-send', when: 'sent' }, probability: 0.002 });
  lambdaProxy.inject({ ...invokeOnly, fault: { kind: 'reset-after-send', when: 'answered' }, probability: 0.002 });
  lambdaProxy.inject({ ...invokeOnly, fault: { kind: 'status', status: 500, errorType: 'ServiceException' }, probability: 0.002 });

  const daemonWarnings: Record<string, number> = {};
  let lapsedBatches = 0;
  let daemonsThatReadIt = 0;
  let daemonCount = 0;
  const startDaemon = (): Daemon => {
    const index = ++daemonCount;
    // WORKERLESS_AWS_CLIENT passes through, so the chaos run can also prove --aws-client sdk.
    const client = process.env['WORKERLESS_AWS_CLIENT'];
    const env = {
      ...awsTestEnv({ lambdaEndpoint: lambdaProxy.url }),
      AWS_ENDPOINT_URL_SQS: sqsProxy.url,
      ...(client ? { WORKERLESS_AWS_CLIENT: client } : {}),
    };
    const queues = `${queue.name},${leaseQueue.name}`;
    const args = ['--function', FUNCTION, '--queues', queues, '--concurrency', String(concurrency), '--batch-size', String(batchSize)];
    args.push('--poll-for', '2', '--metrics', 'off', '--log-level', 'info', '--shutdown-timeout', '30');
    args.push(
      '--adaptive-concurrency',
      'on',
      '--queue-max-concurrency',
      `${leaseQueue.name}=${LEASE_QUEUE_MAX}`,
      '--visibility-refresh',
      '2s',
    );
    const child = spawn(process.execPath, [cli, ...args], {
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const log = createWriteStream(join(outDir, `daemon-${String(index).padStart(3, '0')}.log`));
    child.stderr?.pipe(createWriteStream(join(outDir, `daemon-${String(index).padStart(3, '0')}.stderr`)));
    let markStarted: (ok: boolean) => void = () => {};
    const started = new Promise<boolean>((resolve) => (markStarted = resolve));
    let rest = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      log.write(chunk);
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { level?: number; msg?: string };
        if (entry.msg === 'workerless started') markStarted(true);
        if ((entry.level ?? 0) >= 40) daemonWarnings[entry.msg ?? '?'] = (daemonWarnings[entry.msg ?? '?'] ?? 0) + 1;
        if (entry.msg === LAPSED_MSG) lapsedBatches++;
        if (entry.msg === CHANGED_MSG) daemonsThatReadIt++;
      }
    });
    const exited = new Promise<number | null>((resolve) =>
      child.on('close', (code) => {
        log.end();
        markStarted(false);
        resolve(code);
      }),
    );
    return { child, index, started, exited, stopping: false };
  };

  const runStarted = Date.now();
  let daemon = startDaemon();
  const restarts = { sigterm: 0, kill9: 0 };
  const finished = new AbortController();

  // A daemon that exits without being asked to is a failure of its own; the run goes on with a new one.
  const watch = (d: Daemon): void => {
    void d.exited.then((code) => {
      if (d.stopping || finished.signal.aborted) return;
      violations.push({
        kind: 'daemon-died',
        ids: [],
        detail: `daemon ${d.index} exited with ${code} unasked; see ${outDir}/daemon-${String(d.index).padStart(3, '0')}.*`,
      });
      if (daemon === d) {
        daemon = startDaemon();
        watch(daemon);
      }
    });
  };
  watch(daemon);

  const stopDaemon = async (d: Daemon, how: 'SIGTERM' | 'SIGKILL'): Promise<void> => {
    d.stopping = true;
    // A SIGTERM in the first milliseconds of a process, before Node has run a line of ours, kills it by default;
    // no daemon can handle that. Stop it once it has said it started (or after 15 s), as an orchestrator would.
    if (how === 'SIGTERM') await Promise.race([d.started, sleep(15_000, undefined, { ref: false })]);
    d.child.kill(how);
    if (how === 'SIGKILL') {
      await d.exited;
      return;
    }
    // --shutdown-timeout 30 ends a stuck drain with exit 1 itself; the margin covers a receive in flight.
    const code = await Promise.race([d.exited, sleep(40_000, undefined, { ref: false }).then(() => 'hung' as const)]);
    if (code === 'hung') d.child.kill('SIGKILL');
    if (code !== 0) {
      violations.push({
        kind: 'unclean-stop',
        ids: [],
        detail: `daemon ${d.index}: SIGTERM ended with ${code}, not 0; see ${outDir}/daemon-${String(d.index).padStart(3, '0')}.*`,
      });
    }
  };

  // Restarts: every restartMin-restartMax s, SIGTERM (drain, exit 0) or, every killEvery-th time, kill -9.
  const restartLoop = async (): Promise<void> => {
    for (let i = 1; !finished.signal.aborted; i++) {
      await sleep((restartMin + random() * (restartMax - restartMin)) * 1000, undefined, { signal: finished.signal }).catch(
        () => undefined,
      );
      if (finished.signal.aborted) return;
      const old = daemon;
      const kill = i % killEvery === 0;
      await stopDaemon(old, kill ? 'SIGKILL' : 'SIGTERM');
      if (kill) restarts.kill9++;
      else restarts.sigterm++;
      if (finished.signal.aborted) return;
      daemon = startDaemon();
      watch(daemon);
    }
  };

  // SQS fault episodes, one every 2-5 s, each lasting 1-3 s: 5xx bursts and hung receives, deletes and
  // visibility changes. A hung call is answered never; the daemon's own deadline must end it.
  const faultLoop = async (): Promise<void> => {
    while (!finished.signal.aborted) {
      await sleep(2000 + random() * 3000, undefined, { signal: finished.signal }).catch(() => undefined);
      if (finished.signal.aborted) return;
      const forMs = 1000 + Math.floor(random() * 2000);
      const pick = random();
      let operation: Operation | readonly Operation[];
      let fault: RequestFault;
      let probability: number;
      if (pick < 0.4) {
        operation = SQS_RUNTIME_OPS;
        fault =
          random() < 0.5
            ? { kind: 'status', status: 500, errorType: 'InternalError' }
            : { kind: 'status', status: 503, errorType: 'ServiceUnavailable' };
        probability = 0.3 + random() * 0.7;
      } else {
        operation = SQS_RUNTIME_OPS[Math.floor(random() * SQS_RUNTIME_OPS.length)] ?? 'ReceiveMessage';
        fault = { kind: 'hang' };
        probability = 0.1 + random() * 0.3;
      }
      sqsProxy.inject({ operation, fault, forMs, probability });
    }
  };

  // The lease queue: its timeout lowered mid-run (console, Terraform), then `lapseEpisodes` episodes, 6-10 s
  // apart, of 2.5-3 s (longer than the new timeout) in which its extensions answer 500 and Lambda throttles every
  // invoke (issue 20, case 2): batches held by the throttles cannot be kept invisible, their leases lapse, and
  // they must not be invoked when the throttling ends. A few episodes prove it; each stalls the whole run.
  let loweredAt = -1;
  const leaseLoop = async (): Promise<void> => {
    await sleep(lowerAtMs, undefined, { signal: finished.signal }).catch(() => undefined);
    if (finished.signal.aborted) return;
    await sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: leaseQueue.url, Attributes: { VisibilityTimeout: String(LEASE_QUEUE_LOWERED_SEC) } }),
    );
    loweredAt = Date.now() - runStarted;
    progress(`${Math.round(loweredAt / 1000)} s: ${leaseQueue.name}'s visibility timeout lowered to ${LEASE_QUEUE_LOWERED_SEC} s`);
    for (let episode = 0; episode < lapseEpisodes && !finished.signal.aborted; episode++) {
      await sleep(6000 + random() * 4000, undefined, { signal: finished.signal }).catch(() => undefined);
      if (finished.signal.aborted) return;
      const forMs = 2500 + Math.floor(random() * 500);
      sqsProxy.inject({
        operation: 'ChangeMessageVisibilityBatch',
        match: (r) => r.queueUrl === leaseQueue.url,
        fault: { kind: 'status', status: 500, errorType: 'InternalError' },
        forMs,
      });
      endpoint.setReservedConcurrency(FUNCTION, 0);
      await sleep(forMs);
      endpoint.setReservedConcurrency(FUNCTION, reserved);
    }
  };

  const loops = [restartLoop(), faultLoop(), leaseLoop()];
  let lastProgress = 0;
  let queueEmpty = false;
  // Done when the queue has been empty (nothing visible, in flight or delayed) twice in a row, a second apart.
  for (let emptyChecks = 0; Date.now() - runStarted < deadlineMs;) {
    await sleep(1000);
    const [main, lease] = await Promise.all([messageCounts(queue.url, sqs), messageCounts(leaseQueue.url, sqs)]);
    const counts = {
      visible: main.visible + lease.visible,
      notVisible: main.notVisible + lease.notVisible,
      delayed: main.delayed + lease.delayed,
    };
    const left = counts.visible + counts.notVisible + counts.delayed;
    emptyChecks = left === 0 ? emptyChecks + 1 : 0;
    if (Date.now() - lastProgress > 5000) {
      lastProgress = Date.now();
      progress(
        `${Math.round((Date.now() - runStarted) / 1000)} s: ${left} left (${counts.visible} visible, ${counts.notVisible} in flight), restarts ${restarts.sigterm} SIGTERM + ${restarts.kill9} kill -9, daemon ${daemon.index}`,
      );
    }
    if (emptyChecks >= 2) {
      queueEmpty = true;
      break;
    }
  }
  const durationSec = (Date.now() - runStarted) / 1000;
  finished.abort();
  await Promise.all(loops);
  sqsProxy.clearAll();
  lambdaProxy.clearAll();
  // The restart loop may have been stopping this daemon when the run ended (a kill -9 in CI, just as the queue
  // emptied): it then started no other, and that daemon is stopped already; a SIGTERM to it would report the
  // kill's exit as an unclean stop.
  if (!daemon.stopping) await stopDaemon(daemon, 'SIGTERM');
  // Anything a last invocation might still write has landed once the daemon has settled and exited.
  const throttles = endpoint.rejected.filter((r) => r.statusCode === 429).length;
  const faults: Record<string, number> = {};
  for (const call of [...sqsProxy.calls(), ...lambdaProxy.calls()]) {
    if (call.fault === undefined) continue;
    const key = `${call.operation} ${call.fault}${call.fault === 'status' ? ` ${call.status}` : ''}`;
    faults[key] = (faults[key] ?? 0) + 1;
  }
  // The endpoint's own count, independent of the handler's records: runs of one message id that overlapped.
  const overlaps = [queue, leaseQueue].flatMap((q) => overlappingRuns(runsByMessage(endpoint, q.arn)));
  if (overlaps.length > 0) {
    violations.push({
      kind: 'overlapping-runs',
      ids: overlaps.map((o) => o.split(':')[0] ?? o),
      detail: `the Lambda endpoint saw ${overlaps.length} overlapping runs of one message: ${overlaps.slice(0, 10).join('; ')}`,
    });
  }
  await Promise.all([sqsProxy.close(), lambdaProxy.close(), endpoint.stop()]);

  const leftOnQueue = (await countMessages(queue.url, sqs)) + (await countMessages(leaseQueue.url, sqs));
  const inDlq = [
    ...(await drainQueue(dlq.url, { waitTimeSec: 0, client: sqs })),
    ...(await drainQueue(leaseDlq.url, { waitTimeSec: 0, client: sqs })),
  ];
  const analysis = analyse(
    readRecords(recordDir),
    deletes,
    bodies.map((b) => b.id),
  );
  violations.push(...analysis.violations);
  if (leftOnQueue > 0)
    violations.push({ kind: 'left-on-queue', ids: [], detail: `${leftOnQueue} messages still on ${queue.name} and ${leaseQueue.name}` });
  if (inDlq.length > 0) {
    const ids = inDlq.map((m) => (JSON.parse(m.Body ?? '{}') as Partial<ChaosBody>).id ?? `?${m.MessageId ?? ''}`);
    violations.push({ kind: 'in-dlq', ids, detail: `${inDlq.length} messages reached the DLQs ${dlq.name}, ${leaseDlq.name}` });
  }

  const report: ChaosReport = {
    seed,
    messages: n,
    durationSec: Math.round(durationSec * 10) / 10,
    messagesPerSec: Math.round((n / durationSec) * 10) / 10,
    invocations: analysis.invocations,
    messageInvocations: analysis.messageInvocations,
    functionFailures: analysis.functionFailures,
    throttles,
    deleteEntries: deletes.length,
    duplicatesAfterSuccess: analysis.duplicatesAfterSuccess,
    overlappingRuns: overlaps.length,
    lapsedBatches,
    visibilityLowered: { atSec: Math.round(loweredAt / 100) / 10, daemonsThatReadIt },
    faults,
    restarts,
    daemonWarnings,
    queueEmpty: queueEmpty && leftOnQueue === 0,
    dlqCount: inDlq.length,
    violations,
    outDir,
  };
  writeFileSync(join(outDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  await cleanUp([queue, dlq, leaseQueue, leaseDlq]);
  return report;
}

async function cleanUp(queues: TestQueue[]): Promise<void> {
  await Promise.all(queues.map((q) => deleteQueue(q.url).catch(() => undefined)));
}

function readRecords(dir: string): InvocationLine[] {
  const lines: InvocationLine[] = [];
  for (const name of readdirSync(dir)) {
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (line !== '') lines.push(JSON.parse(line) as InvocationLine);
    }
  }
  return lines;
}

interface Analysis {
  invocations: number;
  messageInvocations: number;
  functionFailures: number;
  duplicatesAfterSuccess: number;
  violations: Violation[];
}

/** Checks the function's records and the daemon's deletes against the invariants, by message id. Pure. */
export function analyse(
  lines: readonly InvocationLine[],
  deletes: readonly { at: number; receiptHandle: string }[],
  ids: readonly string[],
): Analysis {
  const violations: Violation[] = [];
  const ends = lines.filter((l): l is Extract<InvocationLine, { t: 'end' }> => l.t === 'end');
  const ended = new Set(ends.map((e) => e.inv));
  const unfinished = lines.filter((l): l is Extract<InvocationLine, { t: 'start' }> => l.t === 'start' && !ended.has(l.inv));
  if (unfinished.length > 0) {
    violations.push({
      kind: 'unfinished-invocation',
      ids: unfinished.flatMap((u) => u.ids),
      detail: `${unfinished.length} invocations started and never ended`,
    });
  }

  const byId = new Map<string, { start: number; end: number; ok: boolean; receiveCount: number }[]>();
  /** Earliest end of a successful invocation that carried this receipt handle. */
  const okByHandle = new Map<string, number>();
  const idByHandle = new Map<string, string>();
  let messageInvocations = 0;
  let functionFailures = 0;
  for (const e of ends) {
    for (const r of e.records) {
      messageInvocations++;
      if (!r.ok) functionFailures++;
      const list = byId.get(r.id) ?? [];
      list.push({ start: e.start, end: e.end, ok: r.ok, receiveCount: r.receiveCount });
      byId.set(r.id, list);
      idByHandle.set(r.receiptHandle, r.id);
      if (r.ok) okByHandle.set(r.receiptHandle, Math.min(okByHandle.get(r.receiptHandle) ?? Infinity, e.end));
    }
  }

  const lost = ids.filter((id) => !(byId.get(id) ?? []).some((i) => i.ok));
  if (lost.length > 0) violations.push({ kind: 'lost', ids: lost, detail: `${lost.length} messages never had a successful invocation` });

  const overlapping: string[] = [];
  const overlapDetail: string[] = [];
  let duplicatesAfterSuccess = 0;
  for (const [id, list] of byId) {
    list.sort((a, b) => a.start - b.start);
    let maxEnd = -Infinity;
    for (const inv of list) {
      if (inv.start < maxEnd) {
        overlapping.push(id);
        overlapDetail.push(`${id}: ${JSON.stringify(list)}`);
        break;
      }
      maxEnd = Math.max(maxEnd, inv.end);
    }
    const firstOk = list.findIndex((i) => i.ok);
    if (firstOk >= 0 && firstOk < list.length - 1) duplicatesAfterSuccess++;
  }
  if (overlapping.length > 0) {
    violations.push({
      kind: 'concurrent-invocations',
      ids: overlapping,
      detail: `${overlapping.length} messages ran twice at the same time: ${overlapDetail.slice(0, 10).join('; ')}`,
    });
  }

  const early = new Map<string, string>();
  for (const d of deletes) {
    const okAt = okByHandle.get(d.receiptHandle);
    if (okAt !== undefined && okAt <= d.at) continue;
    const id = idByHandle.get(d.receiptHandle) ?? `(receipt never seen by the function) ${d.receiptHandle.slice(0, 24)}`;
    const why =
      okAt === undefined ? 'no successful invocation with that receipt handle' : `delete ${okAt - d.at} ms before the invocation ended`;
    if (!early.has(id)) early.set(id, `${id} delete at ${d.at}: ${why}`);
  }
  if (early.size > 0) {
    violations.push({
      kind: 'deleted-before-success',
      ids: [...early.keys()],
      detail: `${early.size} messages deleted before the function succeeded: ${[...early.values()].slice(0, 10).join('; ')}`,
    });
  }

  return { invocations: ends.length, messageInvocations, functionFailures, duplicatesAfterSuccess, violations };
}

/** A human-readable summary of a report. */
export function formatReport(r: ChaosReport): string {
  const out = [
    `chaos run (seed ${r.seed}): ${r.messages} messages in ${r.durationSec} s = ${r.messagesPerSec} messages/s`,
    `  invocations ${r.invocations} (${r.messageInvocations} message-invocations), function failures ${r.functionFailures}, throttles ${r.throttles}, delete entries checked ${r.deleteEntries}`,
    `  duplicates after success (at-least-once, allowed) ${r.duplicatesAfterSuccess}`,
    `  overlapping runs of one message id (counted by the Lambda endpoint) ${r.overlappingRuns}`,
    `  lease queue: visibility timeout lowered at ${r.visibilityLowered.atSec} s, read by ${r.visibilityLowered.daemonsThatReadIt} daemons; ${r.lapsedBatches} lapsed batches not invoked`,
    `  restarts: ${r.restarts.sigterm} SIGTERM, ${r.restarts.kill9} kill -9`,
    `  faults injected: ${
      Object.entries(r.faults)
        .sort()
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none'
    }`,
    `  queue empty: ${r.queueEmpty}, DLQ: ${r.dlqCount}`,
    `  daemon warnings/errors: ${
      Object.entries(r.daemonWarnings)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${v}x "${k}"`)
        .join('; ') || 'none'
    }`,
    `  violations: ${r.violations.length === 0 ? 'none' : ''}`,
    ...r.violations.map(
      (v) =>
        `    ${v.kind}: ${v.detail}${v.ids.length > 0 ? ` [ids: ${v.ids.slice(0, 20).join(', ')}${v.ids.length > 20 ? ', ...' : ''}]` : ''}`,
    ),
    `  records, daemon logs, report.json: ${r.outDir}`,
  ];
  return out.join('\n');
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      messages: { type: 'string', default: '20000' },
      concurrency: { type: 'string' },
      reserved: { type: 'string' },
      'batch-size': { type: 'string' },
      seed: { type: 'string' },
      deadline: { type: 'string' },
      out: { type: 'string' },
    },
  });
  const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));
  const report = await runChaos({
    messages: Number(values.messages),
    concurrency: num(values.concurrency),
    reservedConcurrency: num(values.reserved),
    batchSize: num(values['batch-size']),
    seed: num(values.seed),
    deadlineSec: num(values.deadline),
    outDir: values.out,
    progress: (line) => console.log(line),
  });
  console.log(formatReport(report));
  process.exitCode = report.violations.length === 0 ? 0 : 1;
}
