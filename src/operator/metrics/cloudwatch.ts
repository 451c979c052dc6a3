import type { MetricDatum as CwDatum } from '@aws-sdk/client-cloudwatch';
import { setInterval } from 'node:timers/promises';
import type { Logger } from 'pino';
import { callErrorOf } from '../../core/errors.ts';
import type { MetricDatum, MetricsSink } from '../../core/telemetry/metrics-sink.ts';
import { ALL_METRICS } from '../../core/telemetry/metric-names.ts';
import type { MetricsPublisher } from '../../core/telemetry/metrics-publisher.ts';
import type { QueueSeries } from './queue-series.ts';

/** The metrics sent under several dimension sets (names.ts), by CloudWatch name. */
const DIMENSION_SETS: ReadonlyMap<string, readonly (readonly string[])[]> = new Map(
  ALL_METRICS.flatMap((d) => (d.cloudwatchDimensionSets ? [[d.cloudwatch, d.cloudwatchDimensionSets] as const] : [])),
);

function pick(dimensions: Readonly<Record<string, string>>, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = dimensions[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * PutMetricData's limits (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricData.html):
 * at most 1,000 metric data items and 1 MB per request.
 */
const MAX_DATUMS_PER_CALL = 1000;
/**
 * The bytes of datums a request carries at most: 1 MB less room for the namespace and the envelope. Each datum is
 * counted as its JSON with the timestamp as an ISO string, longer than the epoch seconds the request sends.
 */
const MAX_DATUM_BYTES_PER_CALL = 1_000_000 - 4_096;

/** A datum's share of a request body, counted high (see MAX_DATUM_BYTES_PER_CALL); one more byte for the comma. */
function datumBytes(datum: CwDatum): number {
  return Buffer.byteLength(JSON.stringify(datum)) + 1;
}

/** How many of the first datums fit in one request, at least one (a datum alone is far below 1 MB). */
function requestLength(datums: readonly CwDatum[]): number {
  let bytes = 0;
  let n = 0;
  for (const datum of datums) {
    if (n === MAX_DATUMS_PER_CALL) break;
    bytes += datumBytes(datum);
    if (n > 0 && bytes > MAX_DATUM_BYTES_PER_CALL) break;
    n++;
  }
  return n;
}

/** A PutMetricData call's deadline: a CloudWatch that does not answer must not hold up a shutdown. */
const PUT_METRIC_DATA_DEADLINE_MS = 10_000;

interface Aggregate {
  name: string;
  unit: MetricDatum['unit'];
  dimensions: Readonly<Record<string, string>>;
  count: number;
  sum: number;
  min: number;
  max: number;
}

export interface CloudWatchMetricsOptions {
  namespace: string;
  /** Datums kept for retry when CloudWatch fails; the oldest are dropped beyond this. Default 10000. */
  maxPendingDatums?: number;
  /**
   * Per queue or aggregated (--metrics-per-queue): each distinct set of dimensions is a custom metric CloudWatch
   * bills by the month (https://aws.amazon.com/cloudwatch/pricing/). Default per queue.
   */
  queueSeries?: QueueSeries;
}

/**
 * Aggregates observations into one statistic set per (metric, dimensions) and sends them with as few
 * PutMetricData calls as the API allows. Recording is synchronous and O(1); only flush() does I/O, and a
 * CloudWatch failure keeps the data (bounded) for the next flush instead of blocking dispatch.
 */
export class CloudWatchMetrics implements MetricsSink {
  readonly #publisher: MetricsPublisher;
  readonly #log: Logger;
  readonly #namespace: string;
  readonly #maxPending: number;
  readonly #queueSeries: QueueSeries | undefined;
  #current = new Map<string, Aggregate>();
  #pending: CwDatum[] = [];
  #flushing: Promise<void> | undefined;

  constructor(publisher: MetricsPublisher, logger: Logger, options: CloudWatchMetricsOptions) {
    this.#publisher = publisher;
    this.#log = logger;
    this.#namespace = options.namespace;
    this.#maxPending = options.maxPendingDatums ?? 10_000;
    this.#queueSeries = options.queueSeries;
  }

  record(input: MetricDatum): void {
    this.#recordApplied(this.#queueSeries ? this.#queueSeries.apply(input) : input);
  }

  /** A queue left its route: the aggregated gauges it counted in are its sums without it from now. */
  forget(dimensions: Readonly<Record<string, string>>): void {
    for (const datum of this.#queueSeries?.forget(dimensions) ?? []) this.#recordApplied(datum);
  }

  #recordApplied(datum: MetricDatum): void {
    // PutMetricData refuses NaN and infinities (a NaN gauge means "no value now"); one would fail the whole call.
    if (!Number.isFinite(datum.value)) return;
    const sets = DIMENSION_SETS.get(datum.name);
    if (sets === undefined) this.#aggregate(datum);
    else for (const set of sets) this.#aggregate({ ...datum, dimensions: pick(datum.dimensions, set) });
  }

  #aggregate(datum: MetricDatum): void {
    const key = `${datum.name}\u0000${Object.entries(datum.dimensions)
      .map(([k, v]) => `${k}=${v}`)
      .join('\u0000')}`;
    const agg = this.#current.get(key);
    if (agg) {
      agg.count++;
      agg.sum += datum.value;
      agg.min = Math.min(agg.min, datum.value);
      agg.max = Math.max(agg.max, datum.value);
    } else {
      this.#current.set(key, {
        name: datum.name,
        unit: datum.unit,
        dimensions: datum.dimensions,
        count: 1,
        sum: datum.value,
        min: datum.value,
        max: datum.value,
      });
    }
  }

  /** Sends everything recorded so far. Never throws; concurrent calls share one flush. */
  flush(): Promise<void> {
    this.#flushing ??= this.#flush().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  async #flush(): Promise<void> {
    const timestamp = new Date();
    for (const agg of this.#current.values()) {
      this.#pending.push({
        MetricName: agg.name,
        Unit: agg.unit,
        Timestamp: timestamp,
        Dimensions: Object.entries(agg.dimensions).map(([Name, Value]) => ({ Name, Value })),
        StatisticValues: { SampleCount: agg.count, Sum: agg.sum, Minimum: agg.min, Maximum: agg.max },
      });
    }
    this.#current = new Map();
    if (this.#pending.length > this.#maxPending) {
      const dropped = this.#pending.length - this.#maxPending;
      this.#pending = this.#pending.slice(dropped);
      this.#log.warn({ dropped }, 'metrics buffer full, dropped oldest datums');
    }
    while (this.#pending.length > 0) {
      const chunk = this.#pending.slice(0, requestLength(this.#pending));
      try {
        await this.#publisher.putMetricData(
          { Namespace: this.#namespace, MetricData: chunk },
          AbortSignal.timeout(PUT_METRIC_DATA_DEADLINE_MS),
        );
        this.#pending = this.#pending.slice(chunk.length);
      } catch (err) {
        const e = callErrorOf(err);
        this.#log.warn(
          { err: { code: e.code, message: e.message }, pending: this.#pending.length },
          'PutMetricData failed, will retry at next flush',
        );
        return;
      }
    }
  }

  /** Flushes every `intervalMs` until the signal aborts. The caller flushes once more after draining. */
  async run(intervalMs: number, signal: AbortSignal): Promise<void> {
    try {
      for await (const _ of setInterval(intervalMs, undefined, { signal })) await this.flush();
    } catch {
      // aborted
    }
  }
}
