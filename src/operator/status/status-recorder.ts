import { capText } from '../../util/cap-text.ts';
import { steadyEpochNow } from '../../util/clock.ts';
import type { MetricDatum, MetricsSink } from '../../core/telemetry/metrics-sink.ts';
import { SQS_METRICS } from '../../core/telemetry/metric-names.ts';
import type { DaemonState, QueueBucket, QueueStatus, QueueSummary, RecentError, StatusSnapshot } from './snapshot.ts';
import { DEFAULT_STATUS_QUERY, type StatusQuery } from './status-query.ts';
import { TaskQueueStatusRecorder } from './task-queue-status.ts';

type Count = 'polled' | 'invoked' | 'failed' | 'throttled' | 'deleted';

/** The event counts the status page charts, by the CloudWatch name components record under. */
const COUNTED: ReadonlyMap<string, Count> = new Map<string, Count>([
  [SQS_METRICS.polled.cloudwatch, 'polled'],
  [SQS_METRICS.invoked.cloudwatch, 'invoked'],
  [SQS_METRICS.failedInvoke.cloudwatch, 'failed'],
  [SQS_METRICS.throttled.cloudwatch, 'throttled'],
  [SQS_METRICS.deleted.cloudwatch, 'deleted'],
]);

/** One slot of a queue's ring; reused when its bucket falls out of the window. */
interface Slot {
  /** Start of the bucket this slot holds, epoch ms; NaN while unused. */
  t: number;
  polled: number;
  invoked: number;
  failed: number;
  throttled: number;
  deleted: number;
}

interface QueueRing {
  /** Made on the queue's first event: of 10,000 queues found, most never have one (60 slots are about 4 KiB). */
  slots: Slot[] | undefined;
  inFlight: number;
}

/** What a queue without events reads in every bucket. */
const NO_SLOT: Readonly<Slot> = { t: Number.NaN, polled: 0, invoked: 0, failed: 0, throttled: 0, deleted: 0 };

/** A queue's totals over the window, for the order of the page. */
interface Ranked {
  readonly name: string;
  readonly ring: QueueRing;
  /** Place in the configured order (then first seen). */
  readonly index: number;
  invoked: number;
  errors: number;
}

type BucketSum = { -readonly [K in keyof QueueBucket]: QueueBucket[K] };

const BUSIEST = (a: Ranked, b: Ranked): number => b.invoked - a.invoked || b.ring.inFlight - a.ring.inFlight || a.index - b.index;
const WORST = (a: Ranked, b: Ranked): number => b.errors - a.errors || BUSIEST(a, b);
const CONFIGURED = (a: Ranked, b: Ranked): number => a.index - b.index;
const ORDERS = { busiest: BUSIEST, worst: WORST, configured: CONFIGURED } as const;

/** What the snapshot says about the process, beside the state. */
export interface StatusMeta {
  readonly version: string;
  /** The routes' functions, in --config order. */
  readonly functions: readonly string[];
  /** Epoch ms. */
  readonly startedAt: number;
}

export interface StatusRecorderOptions {
  /** Width of a bucket. Default 5000 (5 s). */
  readonly bucketMs?: number;
  /** How far back the buckets reach; rounded up to whole buckets. Default 300000 (5 minutes). */
  readonly windowMs?: number;
  /** Queues to show, in this order, before they have any traffic (the configured queues). Default none. */
  readonly queues?: readonly string[];
  /** The error log ring whose entries the snapshot carries. Default none (no recent errors). */
  readonly recentErrors?: RecentErrors;
  /**
   * Clock, epoch ms. Default steadyEpochNow (src/util/clock.ts): epoch ms that do not step with the wall clock, so a
   * backward step does not hide the last minutes' buckets behind the window.
   */
  readonly now?: () => number;
}

/**
 * A MetricsSink that keeps what the status page shows: per queue, event counts in fixed time buckets over the
 * last few minutes and the latest in-flight gauge. Each queue has a fixed ring of buckets indexed by
 * `bucket start / bucketMs`, so a record is O(1), memory is fixed per queue, and old buckets are recycled
 * lazily when their slot is reached again; no timer is needed.
 * Datums without a `Queue` dimension, and metrics the page does not show, are ignored.
 */
export class StatusRecorder implements MetricsSink {
  readonly bucketMs: number;
  readonly #slotCount: number;
  readonly #now: () => number;
  readonly #recentErrors: RecentErrors | undefined;
  readonly #queues = new Map<string, QueueRing>();
  readonly #taskQueues = new TaskQueueStatusRecorder();

  constructor(options: StatusRecorderOptions = {}) {
    const bucketMs = options.bucketMs ?? 5000;
    const windowMs = options.windowMs ?? 300_000;
    if (!Number.isInteger(bucketMs) || bucketMs < 1) throw new RangeError(`bucketMs must be a positive integer, got ${bucketMs}`);
    if (!Number.isFinite(windowMs) || windowMs < bucketMs)
      throw new RangeError(`windowMs must be at least bucketMs (${bucketMs}), got ${windowMs}`);
    this.bucketMs = bucketMs;
    this.#slotCount = Math.ceil(windowMs / bucketMs);
    this.#now = options.now ?? steadyEpochNow;
    this.#recentErrors = options.recentErrors;
    for (const name of options.queues ?? []) this.#ring(name);
  }

  /** Queues found while running (by prefix or tag): shown from now on, before they have any traffic. */
  showQueues(names: readonly string[]): void {
    for (const name of names) this.#ring(name);
  }

  record(datum: MetricDatum): void {
    if (this.#taskQueues.record(datum)) return;
    const queue = datum.dimensions['Queue'];
    if (queue === undefined || !Number.isFinite(datum.value)) return;
    if (datum.name === SQS_METRICS.inFlight.cloudwatch) {
      this.#ring(queue).inFlight = datum.value;
      return;
    }
    const count = COUNTED.get(datum.name);
    if (count === undefined) return;
    const start = this.#bucketStart(this.#now());
    const slot = this.#slotToWrite(this.#ring(queue), start);
    if (slot.t !== start) {
      // The slot still holds a bucket from a previous lap of the ring (or none): that bucket is out of the window.
      slot.t = start;
      slot.polled = slot.invoked = slot.failed = slot.throttled = slot.deleted = 0;
    }
    slot[count] += datum.value;
  }

  /** Every known queue with one bucket per bucketMs, oldest first, the last one being the current (partial) bucket. */
  queues(): QueueStatus[] {
    const current = this.#bucketStart(this.#now());
    return [...this.#queues].map(([name, ring]) => this.#status(name, ring, current));
  }

  /**
   * What GET /status.json serves: the summary of every queue and one page of them (`query`, default the 50
   * busiest). One pass over each queue's ring (60 slots), then a sort: about 10 ms for 10,000 queues.
   */
  snapshot(state: DaemonState, meta: StatusMeta, query: StatusQuery = DEFAULT_STATUS_QUERY): StatusSnapshot {
    const now = this.#now();
    const current = this.#bucketStart(now);
    const sums: BucketSum[] = [];
    for (let i = this.#slotCount - 1; i >= 0; i--)
      sums.push({ t: current - i * this.bucketMs, polled: 0, invoked: 0, failed: 0, throttled: 0, deleted: 0 });
    const ranked: Ranked[] = [];
    let active = 0;
    let failing = 0;
    let inFlight = 0;
    for (const [name, ring] of this.#queues) {
      const r: Ranked = { name, ring, index: ranked.length, invoked: 0, errors: 0 };
      let events = 0;
      for (const sum of sums) {
        const slot = this.#slot(ring, sum.t);
        if (slot.t !== sum.t) continue;
        sum.polled += slot.polled;
        sum.invoked += slot.invoked;
        sum.failed += slot.failed;
        sum.throttled += slot.throttled;
        sum.deleted += slot.deleted;
        r.invoked += slot.invoked;
        r.errors += slot.failed + slot.throttled;
        events += slot.polled + slot.invoked + slot.failed + slot.throttled + slot.deleted;
      }
      if (events > 0 || ring.inFlight > 0) active++;
      if (r.errors > 0) failing++;
      inFlight += ring.inFlight;
      ranked.push(r);
    }
    ranked.sort(ORDERS[query.sort]);
    const summary: QueueSummary = { queues: ranked.length, active, failing, inFlight, buckets: sums };
    return {
      state,
      version: meta.version,
      functions: meta.functions,
      startedAt: meta.startedAt,
      now,
      bucketMs: this.bucketMs,
      summary,
      page: { sort: query.sort, offset: query.offset, limit: query.limit },
      queues: ranked.slice(query.offset, query.offset + query.limit).map((r) => this.#status(r.name, r.ring, current)),
      taskQueues: this.#taskQueues.list(),
      recentErrors: this.#recentErrors?.list() ?? [],
    };
  }

  #status(name: string, ring: QueueRing, current: number): QueueStatus {
    const buckets: QueueBucket[] = [];
    for (let i = this.#slotCount - 1; i >= 0; i--) {
      const t = current - i * this.bucketMs;
      const slot = this.#slot(ring, t);
      buckets.push(
        slot.t === t
          ? { t, polled: slot.polled, invoked: slot.invoked, failed: slot.failed, throttled: slot.throttled, deleted: slot.deleted }
          : { t, polled: 0, invoked: 0, failed: 0, throttled: 0, deleted: 0 },
      );
    }
    return { name, inFlight: ring.inFlight, buckets };
  }

  #bucketStart(now: number): number {
    return Math.floor(now / this.bucketMs) * this.bucketMs;
  }

  #slotIndex(bucketStart: number): number {
    return (((bucketStart / this.bucketMs) % this.#slotCount) + this.#slotCount) % this.#slotCount;
  }

  #slot(ring: QueueRing, bucketStart: number): Readonly<Slot> {
    return ring.slots?.[this.#slotIndex(bucketStart)] ?? NO_SLOT;
  }

  #slotToWrite(ring: QueueRing, bucketStart: number): Slot {
    if (ring.slots === undefined) {
      ring.slots = [];
      for (let i = 0; i < this.#slotCount; i++) ring.slots.push({ ...NO_SLOT });
    }
    return ring.slots[this.#slotIndex(bucketStart)]!;
  }

  #ring(queue: string): QueueRing {
    let ring = this.#queues.get(queue);
    if (!ring) {
      ring = { slots: undefined, inFlight: 0 };
      this.#queues.set(queue, ring);
    }
    return ring;
  }
}

export interface RecentErrorsOptions {
  /** How many entries to keep; the oldest is dropped first. Default 50. */
  readonly capacity?: number;
  /** Clock for lines without a usable `time`, epoch ms. Default Date.now. */
  readonly now?: () => number;
}

/** Most message ids kept per entry (an SQS batch holds at most 10). */
const MAX_IDS = 10;
/** pino's numeric level for warn. */
const WARN_LEVEL = 40;
const LEVEL_BY_LABEL: Readonly<Record<string, number>> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };

/**
 * The latest warn and error log lines for the status page, in a bounded ring. Fed by pino through `stream`:
 *   pino(opts, pino.multistream([{ stream: process.stdout }, { level: 'warn', stream: recentErrors.stream }]))
 * Only an allow-list of fields is kept (msg, time, queue, err.code or errorType, reason, messageIds), so a
 * message body or a credential that reached a log line by mistake never reaches the page.
 */
export class RecentErrors {
  readonly #capacity: number;
  readonly #now: () => number;
  readonly #ring: RecentError[] = [];
  /** Index of the oldest entry once the ring is full. */
  #next = 0;

  /** A pino destination: one JSON log line per write. Lines below warn, and lines that are not JSON, are ignored. */
  readonly stream: { write(line: string): void };

  constructor(options: RecentErrorsOptions = {}) {
    const capacity = options.capacity ?? 50;
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    this.#capacity = capacity;
    this.#now = options.now ?? Date.now;
    this.stream = { write: (line: string) => this.write(line) };
  }

  /** Parses pino output (one or more newline-separated JSON lines) and keeps the warn-and-above ones. Never throws. */
  write(chunk: string): void {
    for (const line of chunk.split('\n')) {
      if (line.trim() === '') continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        continue;
      }
      const entry = this.#fromLogLine(parsed);
      if (entry) this.add(entry);
    }
  }

  /** Keeps an entry, dropping the oldest when full. */
  add(entry: RecentError): void {
    if (this.#ring.length < this.#capacity) {
      this.#ring.push(entry);
    } else {
      this.#ring[this.#next] = entry;
      this.#next = (this.#next + 1) % this.#capacity;
    }
  }

  /** The kept entries, newest first. */
  list(): RecentError[] {
    const oldestFirst = [...this.#ring.slice(this.#next), ...this.#ring.slice(0, this.#next)];
    return oldestFirst.reverse();
  }

  #fromLogLine(line: unknown): RecentError | undefined {
    if (!isRecord(line)) return undefined;
    const level = typeof line['level'] === 'string' ? LEVEL_BY_LABEL[line['level']] : line['level'];
    if (typeof level === 'number' && level < WARN_LEVEL) return undefined;
    const err = isRecord(line['err']) ? line['err'] : undefined;
    const time = line['time'];
    const at =
      typeof time === 'number' && Number.isFinite(time)
        ? time
        : typeof time === 'string' && !Number.isNaN(Date.parse(time))
          ? Date.parse(time)
          : this.#now();
    const msg = text(line['msg']) ?? '';
    const queue = text(line['queue']);
    const code = text(err?.['code']) ?? text(line['errorType']);
    const detail = text(line['reason']);
    const messageIds = Array.isArray(line['messageIds'])
      ? line['messageIds']
          .map(text)
          .filter((id): id is string => id !== undefined)
          .slice(0, MAX_IDS)
      : undefined;
    return {
      at,
      msg,
      ...(queue !== undefined && { queue }),
      ...(code !== undefined && { code }),
      ...(detail !== undefined && { detail }),
      ...(messageIds !== undefined && messageIds.length > 0 && { messageIds }),
    };
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Strings (and numbers, e.g. an HTTP status as code) as text under the one cap (src/util/cap-text.ts), so one huge
 * field cannot fill the page; anything else is dropped.
 */
function text(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return undefined;
  return capText(value);
}
