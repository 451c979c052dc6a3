import type { Message } from '@aws-sdk/client-sqs';
import { after } from 'node:test';
import { pino, type Logger } from 'pino';
import { Dispatcher } from '../../src/dispatch/dispatcher.ts';
import { type DispatcherOptions } from '../../src/dispatch/dispatcher-options.ts';
import type { InvokeResult, FunctionInvoker, InvokeParams } from '../../src/core/function-invoker.ts';
import type { MetricDatum, MetricsSink } from '../../src/core/telemetry/metrics-sink.ts';
import type { QueueOptions } from '../../src/dispatch/queue-options.ts';
import type { EntryFailure, MessageSource, QueueLookup, ReceiptEntry, ReceiveOptions, ResolvedQueue } from '../../src/core/queue.ts';

export const silentLogger: Logger = pino({ level: 'silent' });

let seq = 0;
export function message(overrides: Partial<Message> = {}): Message {
  seq++;
  return {
    MessageId: `m-${seq}`,
    ReceiptHandle: `rh-${seq}`,
    Body: `body-${seq}`,
    Attributes: { ApproximateReceiveCount: '1', SentTimestamp: '1545082649183' },
    ...overrides,
  };
}

export function queue(name: string, overrides: Partial<ResolvedQueue> = {}): ResolvedQueue {
  return {
    name,
    url: `http://sqs.local/000000000000/${name}`,
    arn: `arn:aws:sqs:us-east-2:123456789012:${name}`,
    region: 'us-east-2',
    fifo: name.endsWith('.fifo'),
    visibilityTimeoutSec: 30,
    weight: 1,
    ...overrides,
  };
}

/** Queue `q` of us-east-1 at `url`: for the adapters' tests, which sign for the queue's region and send to its URL. */
export const queueAt = (url: string): ResolvedQueue =>
  queue('q', { url, arn: 'arn:aws:sqs:us-east-1:000000000000:q', region: 'us-east-1', fifo: false });

/**
 * An in-memory SQS: messages become invisible when received and visible again when released; deletes remove
 * them. Long polls wait until a message arrives or the signal aborts. With `realVisibility`, a received message
 * also becomes visible again when its visibility timeout runs out (the receive's VisibilityTimeout, else the
 * queue's current one from `queueVisibilitySec`). Its next receive gives it a new receipt handle, as SQS does:
 * until then the old handle is still the latest and deletes it; after that a delete with the old handle succeeds
 * without deleting (DeleteMessage API reference), and an extension with it is refused.
 */
export class FakeSource implements MessageSource, Pick<QueueLookup, 'queueAttributes'> {
  readonly visible = new Map<string, Message[]>();
  readonly inflight = new Map<string, Message>();
  readonly deleted: { queue: string; id: string }[] = [];
  readonly receives: { queue: string; waitSec: number; max: number; visibilityTimeoutSec: number | undefined; ids: string[] }[] = [];
  /** Whether received messages come back when their visibility runs out; default false (they stay in flight). */
  realVisibility = false;
  /**
   * The fake's clock for long polls and visibility: monotonic by default, as SQS's own waits are (tests that step
   * the wall clock must not stretch a long poll); a test on a fake clock gives it that clock.
   */
  now: () => number = () => performance.now();
  /** Each queue's own VisibilityTimeout (GetQueueAttributes, and receives that state none); default 30. */
  readonly queueVisibilitySec = new Map<string, number>();
  /** When set, a ChangeMessageVisibilityBatch that extends (timeout > 0) throws this. */
  visibilityError: (() => unknown) | undefined;
  /** When each in-flight receipt handle becomes visible again (realVisibility). */
  readonly #hiddenUntil = new Map<string, number>();
  #redeliveries = 0;
  /** Messages received at least once (realVisibility): a later receive gives them a new receipt handle. */
  readonly #seen = new Set<string>();
  readonly deleteCalls: number[] = [];
  readonly visibilityChanges: { queue: string; ids: string[]; timeoutSec: number }[] = [];
  #waiters: (() => void)[] = [];
  receiveError: ((queue: string) => unknown) | undefined;
  /** When set, ChangeMessageVisibility reports every entry as failed with this code. */
  refuseVisibility: string | undefined;

  push(queueName: string, ...messages: Message[]): void {
    const list = this.visible.get(queueName) ?? [];
    list.push(...messages);
    this.visible.set(queueName, list);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  async queueAttributes(url: string): Promise<Record<string, string>> {
    const name = url.split('/').pop() ?? url;
    return { VisibilityTimeout: String(this.queueVisibilitySec.get(name) ?? 30) };
  }

  async receive(q: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    const record = {
      queue: q.name,
      waitSec: options.waitSec,
      max: options.max,
      visibilityTimeoutSec: options.visibilityTimeoutSec,
      ids: [] as string[],
    };
    this.receives.push(record);
    const err = this.receiveError?.(q.name);
    if (err) throw err as Error;
    const deadline = this.now() + options.waitSec * 1000;
    for (;;) {
      const list = this.visible.get(q.name) ?? [];
      if (list.length > 0) {
        const taken = list.splice(0, options.max).map((m) => (this.realVisibility ? this.#delivered(m) : m));
        const timeoutSec = options.visibilityTimeoutSec ?? this.queueVisibilitySec.get(q.name) ?? 30;
        for (const m of taken) {
          this.inflight.set(m.ReceiptHandle!, m);
          if (this.realVisibility) this.#hide(q.name, m.ReceiptHandle!, timeoutSec);
        }
        record.ids = taken.map((m) => m.MessageId!);
        return taken;
      }
      if (options.waitSec === 0 || this.now() >= deadline) return [];
      if (signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, deadline - this.now()));
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        this.#waiters.push(done);
        signal?.addEventListener('abort', done, { once: true });
      });
      if (signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
    }
  }

  /** Hides the message behind `handle` for `timeoutSec` from now; it comes back then unless extended or settled. */
  #hide(queueName: string, handle: string, timeoutSec: number): void {
    const at = this.now() + timeoutSec * 1000;
    this.#hiddenUntil.set(handle, at);
    setTimeout(() => {
      const m = this.inflight.get(handle);
      if (!m || this.#hiddenUntil.get(handle) !== at) return;
      this.inflight.delete(handle);
      this.#hiddenUntil.delete(handle);
      this.push(queueName, m);
    }, timeoutSec * 1000);
  }

  /** A message received again gets a new receipt handle and a higher receive count. */
  #delivered(m: Message): Message {
    if (!this.#seen.has(m.MessageId!)) {
      this.#seen.add(m.MessageId!);
      return m;
    }
    const count = Number(m.Attributes?.ApproximateReceiveCount ?? '1') + 1;
    return {
      ...m,
      ReceiptHandle: `${m.ReceiptHandle!.split('~')[0]}~${++this.#redeliveries}`,
      Attributes: { ...m.Attributes, ApproximateReceiveCount: String(count) },
    };
  }

  async deleteBatch(q: ResolvedQueue, entries: readonly ReceiptEntry[]): Promise<EntryFailure[]> {
    this.deleteCalls.push(entries.length);
    for (const e of entries) {
      let m = this.inflight.get(e.receiptHandle);
      this.inflight.delete(e.receiptHandle);
      this.#hiddenUntil.delete(e.receiptHandle);
      // Visible again but not received since: the handle is still the latest, so SQS deletes it.
      const list = this.visible.get(q.name) ?? [];
      const i = this.realVisibility && !m ? list.findIndex((v) => v.ReceiptHandle === e.receiptHandle) : -1;
      if (i >= 0) m = list.splice(i, 1)[0];
      if (m) this.deleted.push({ queue: q.name, id: m.MessageId! });
    }
    return [];
  }

  async changeVisibility(q: ResolvedQueue, entries: readonly ReceiptEntry[], timeoutSec: number): Promise<EntryFailure[]> {
    this.visibilityChanges.push({
      queue: q.name,
      ids: entries.map((e) => this.inflight.get(e.receiptHandle)?.MessageId ?? e.id),
      timeoutSec,
    });
    if (this.refuseVisibility) return entries.map((e) => ({ id: e.id, code: this.refuseVisibility!, message: 'refused' }));
    if (timeoutSec > 0 && this.visibilityError) throw this.visibilityError() as Error;
    if (this.realVisibility && timeoutSec > 0) {
      const failed: EntryFailure[] = [];
      for (const e of entries) {
        if (this.inflight.has(e.receiptHandle)) this.#hide(q.name, e.receiptHandle, timeoutSec);
        else
          failed.push({
            id: e.id,
            code: 'MessageNotInflight',
            message: 'Message does not exist or is not available for visibility timeout change.',
          });
      }
      return failed;
    }
    if (timeoutSec === 0) {
      for (const e of entries) {
        const m = this.inflight.get(e.receiptHandle);
        this.inflight.delete(e.receiptHandle);
        if (m) this.push(q.name, m);
      }
    }
    return [];
  }
}

/** An invoker whose behaviour per call is scripted; records every payload and what each call carried besides it. */
export class FakeInvoker implements FunctionInvoker {
  readonly payloads: { Records: { messageId: string; eventSourceARN: string }[] }[] = [];
  /** Each call's params (a tenant id), by call. */
  readonly params: (InvokeParams | undefined)[] = [];
  active = 0;
  maxActive = 0;
  /** Invocations running now, by message id; `overlaps` names each id invoked while an earlier one ran. */
  readonly running = new Map<string, number>();
  readonly overlaps: string[] = [];
  respond: (payload: string, call: number) => Promise<InvokeResult> | InvokeResult;
  constructor(respond: FakeInvoker['respond'] = () => ok()) {
    this.respond = respond;
  }

  async invoke(payload: string, _signal?: AbortSignal, params?: InvokeParams): Promise<InvokeResult> {
    const parsed = JSON.parse(payload) as FakeInvoker['payloads'][number];
    this.payloads.push(parsed);
    this.params.push(params);
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    const ids = parsed.Records.map((r) => r.messageId);
    for (const id of ids) {
      const n = this.running.get(id) ?? 0;
      if (n > 0) this.overlaps.push(id);
      this.running.set(id, n + 1);
    }
    try {
      return await this.respond(payload, this.payloads.length);
    } finally {
      this.active--;
      for (const id of ids) this.running.set(id, (this.running.get(id) ?? 1) - 1);
    }
  }

  async dryRun(): Promise<InvokeResult> {
    return ok();
  }
}

export function ok(payload?: unknown): InvokeResult {
  return { ok: true, response: { payload: payload === undefined ? 'null' : JSON.stringify(payload), functionError: undefined } };
}

export function functionError(errorType = 'Error', errorMessage = 'boom'): InvokeResult {
  return { ok: true, response: { payload: JSON.stringify({ errorType, errorMessage }), functionError: 'Unhandled' } };
}

export function serverError(): InvokeResult {
  return { ok: false, error: { kind: 'unknown', code: 'ServiceException', message: 'internal error', status: 500 } };
}

export function throttled(): InvokeResult {
  return { ok: false, error: { kind: 'throttled', code: 'TooManyRequestsException', message: 'Rate Exceeded.', status: 429 } };
}

export function unusable(code = 'AccessDeniedException'): InvokeResult {
  return { ok: false, error: { kind: 'unusable', code, message: 'not allowed', status: 403 } };
}

export function notSent(): InvokeResult {
  return { ok: false, error: { kind: 'not-sent', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' } };
}

export class RecordingMetrics implements MetricsSink {
  readonly data: MetricDatum[] = [];
  record(d: MetricDatum): void {
    this.data.push(d);
  }
  sum(name: string, queueName?: string): number {
    return this.data.filter((d) => d.name === name && (!queueName || d.dimensions['Queue'] === queueName)).reduce((s, d) => s + d.value, 0);
  }
}

/** Polls `check` (sync or async) until it returns true or the timeout passes. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition', everyMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** One line written by a recording logger: pino's JSON, parsed (level 30 info, 40 warn, 50 error). */
export interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [field: string]: unknown;
}

/**
 * A pino logger at level trace whose lines are collected instead of printed, so tests can assert what was
 * logged, how often and with which fields. pino writes to a plain `{ write }` destination synchronously.
 */
export function recordingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  return { logger, lines };
}

/**
 * A running Dispatcher over a FakeSource (preloaded by `preload`) and `invoker`, with test defaults: strict
 * order, one loop, batch 1, 1 s long polls. Stop it with `stop.abort()` and await `running`.
 */
/**
 * Stops of the dispatchers a test file started. A test that fails before it stops its dispatcher would leave the
 * loops running and the file's process alive, and the whole run waiting on it: they are stopped after the file.
 */
const started = new Set<AbortController>();
after(() => {
  for (const stop of started) stop.abort();
});

/** A new stop for a dispatcher under test, aborted after the file's tests at the latest. */
export function stopAfterTests(): AbortController {
  const stop = new AbortController();
  started.add(stop);
  return stop;
}

/** A Dispatcher's options for a test: one loop, batches of 1, 1 s long polls, no sleep, the options table's defaults. */
export function dispatcherOptions(queues: readonly ResolvedQueue[], options: Partial<DispatcherOptions> = {}): DispatcherOptions {
  return {
    queues,
    orderMode: 'strict',
    concurrency: 1,
    batchSize: 1,
    pollForSec: 1,
    sleepSec: 0,
    deleteMode: 'on-success',
    batchWindowMs: 0,
    visibilityRefreshMs: 60_000,
    functionName: 'fn',
    ...options,
  };
}

export function startDispatcher(
  queues: ResolvedQueue[],
  options: Partial<DispatcherOptions> = {},
  invoker = new FakeInvoker(),
  preload: (source: FakeSource) => void = () => {},
  random: () => number = Math.random,
) {
  const source = new FakeSource();
  preload(source);
  const metrics = new RecordingMetrics();
  const dispatcher = new Dispatcher(dispatcherOptions(queues, options), { source, invoker, metrics, logger: silentLogger, random });
  const stop = stopAfterTests();
  const running = dispatcher.run(stop.signal);
  return { source, metrics, invoker, dispatcher, stop, running };
}

/**
 * The keys of a record of Lambda's SQS event, in AWS's order (the trigger's documented example; see ANCHORS.md
 * section 3), for a message with attributes: anyone diffing payloads sees the same order.
 */
export const SQS_RECORD_KEYS: readonly string[] = [
  'messageId',
  'receiptHandle',
  'body',
  'attributes',
  'messageAttributes',
  'md5OfMessageAttributes',
  'md5OfBody',
  'eventSource',
  'eventSourceARN',
  'awsRegion',
];

/** startDispatcher with Math.random pinned to 0: the first queue of every draw, and no jitter. */
export const startUnjittered = (
  queues: ResolvedQueue[],
  options: Partial<DispatcherOptions>,
  invoker: FakeInvoker,
  preload: (source: FakeSource) => void = () => {},
) => startDispatcher(queues, options, invoker, preload, () => 0);

/** Per-queue options by queue name, each with the table's filter-action default. */
export const queueOptionsByName = (entries: Record<string, Partial<QueueOptions>>): ReadonlyMap<string, QueueOptions> =>
  new Map(Object.entries(entries).map(([k, v]) => [k, { filterAction: 'delete', ...v }]));

/** A promise with its resolve and reject, to hold a call in flight. */
export function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
