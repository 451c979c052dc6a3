import type { MetricDatum } from '../../core/telemetry/metrics-sink.ts';
import { AGGREGATED_QUEUE, ALL_METRICS } from '../../core/telemetry/metric-names.ts';

/** --metrics-per-queue: `auto` (per queue up to PER_QUEUE_SERIES_MAX queues), `on` (always), `off` (never). */
export type MetricsPerQueue = 'auto' | 'on' | 'off';

/**
 * The most queues whose metrics `auto` keeps apart. Each queue carries 21 metrics (three of them histograms of 15
 * buckets): 63 Prometheus series for a queue with the usual traffic, and up to 21 CloudWatch custom metrics, per
 * queue and function. 200 queues are some 13,000 series, where a Prometheus server's per-target limits start to
 * matter, and 4,000 custom metrics.
 */
export const PER_QUEUE_SERIES_MAX = 200;

/**
 * Whether a route's metrics carry each queue's name, for the queues configured now. A function of the current
 * count, cheap enough to ask on every datum, so a queue set that grows or shrinks while running switches the mode.
 */
export function perQueueSeries(mode: MetricsPerQueue, queueCount: number): boolean {
  return mode === 'on' || (mode === 'auto' && queueCount <= PER_QUEUE_SERIES_MAX);
}

export interface QueueSeriesOptions {
  readonly mode: MetricsPerQueue;
  /** How many queues the routes hold now (every route's, summed: a series is per function and queue). */
  readonly queueCount: () => number;
}

const GAUGES: ReadonlySet<string> = new Set(ALL_METRICS.filter((d) => d.kind === 'gauge').map((d) => d.cloudwatch));

/** One aggregated gauge: the latest value of each queue and their sum, under the datum's other dimensions. */
interface GaugeSum {
  readonly name: string;
  readonly unit: MetricDatum['unit'];
  /** The datum's dimensions but Queue. */
  readonly dimensions: Readonly<Record<string, string>>;
  readonly byQueue: Map<string, number>;
  sum: number;
}

/**
 * Applies the per-queue policy to the datums on their way to a sink that keeps series (Prometheus, CloudWatch):
 * while per-queue is on they pass unchanged; while it is off their `Queue` becomes AGGREGATED_QUEUE, and a gauge's
 * value becomes the sum of every queue's latest value (a set would keep only the queue heard last). Each queue's
 * latest gauge is kept in either mode, one number per queue and gauge, so a switch sums at once.
 */
export class QueueSeries {
  readonly #mode: MetricsPerQueue;
  readonly #queueCount: () => number;
  readonly #gauges = new Map<string, GaugeSum>();

  constructor(options: QueueSeriesOptions) {
    this.#mode = options.mode;
    this.#queueCount = options.queueCount;
  }

  /** Whether datums keep their queue now. */
  perQueue(): boolean {
    return perQueueSeries(this.#mode, this.#queueCount());
  }

  /** The datum as the sink should record it now. */
  apply(datum: MetricDatum): MetricDatum {
    const queue = datum.dimensions['Queue'];
    if (queue === undefined) return datum;
    const gauge = GAUGES.has(datum.name) ? this.#gauge(datum, queue) : undefined;
    if (this.perQueue()) return datum;
    const dimensions = { ...datum.dimensions, Queue: AGGREGATED_QUEUE };
    // An unknown gauge of every queue is absent, as one queue's would be.
    const value = gauge === undefined ? datum.value : gauge.byQueue.size === 0 ? Number.NaN : gauge.sum;
    return { ...datum, dimensions, value };
  }

  /**
   * The queue of `dimensions` (with the others given, e.g. its function) left: its gauges stop counting in the
   * sums. Returns the aggregated gauges it changed, as the sink should record them now (none while per queue).
   */
  forget(dimensions: Readonly<Record<string, string>>): MetricDatum[] {
    const { Queue: queue, ...others } = dimensions;
    if (queue === undefined) return [];
    const changed: MetricDatum[] = [];
    for (const gauge of this.#gauges.values()) {
      const value = gauge.byQueue.get(queue);
      if (value === undefined || !Object.entries(others).every(([k, v]) => gauge.dimensions[k] === v)) continue;
      gauge.byQueue.delete(queue);
      gauge.sum -= value;
      changed.push({
        name: gauge.name,
        unit: gauge.unit,
        value: gauge.byQueue.size === 0 ? Number.NaN : gauge.sum,
        dimensions: { ...gauge.dimensions, Queue: AGGREGATED_QUEUE },
      });
    }
    return this.perQueue() ? [] : changed;
  }

  #gauge(datum: MetricDatum, queue: string): GaugeSum {
    let key = datum.name;
    for (const [k, v] of Object.entries(datum.dimensions)) if (k !== 'Queue') key += `\u0000${k}=${v}`;
    let gauge = this.#gauges.get(key);
    if (!gauge) {
      const { Queue: _queue, ...dimensions } = datum.dimensions;
      gauge = { name: datum.name, unit: datum.unit, dimensions, byQueue: new Map(), sum: 0 };
      this.#gauges.set(key, gauge);
    }
    gauge.sum -= gauge.byQueue.get(queue) ?? 0;
    if (Number.isFinite(datum.value)) {
      gauge.byQueue.set(queue, datum.value);
      gauge.sum += datum.value;
    } else gauge.byQueue.delete(queue);
    return gauge;
  }
}
