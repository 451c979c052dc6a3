import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { MetricDatum, MetricsSink } from '../../core/telemetry/metrics-sink.ts';
import { ALL_METRICS, type MetricDef } from '../../core/telemetry/metric-names.ts';
import { QueueSeries } from './queue-series.ts';

/** Seconds: from a quick invocation to Lambda's 15-minute maximum. */
const DURATION_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900];

/** Datum dimensions are CloudWatch style (`TaskQueue`); Prometheus labels are snake_case (`task_queue`). */
function labelOf(dimension: string): string {
  return dimension.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/**
 * The Prometheus sink: one registry per process (never prom-client's global one, so tests and several
 * daemons in one process stay apart), the metrics of names.ts plus prom-client's default process metrics.
 * Counters add, gauges take the latest value, histograms observe milliseconds as seconds.
 */
export class PrometheusMetrics implements MetricsSink {
  readonly registry = new Registry();
  readonly #byName = new Map<string, { def: MetricDef; metric: Metric }>();
  readonly #queueSeries: QueueSeries;
  /** Whether the series carry each queue's name; when the policy's answer changes, the other kind is removed. */
  #perQueue: boolean;

  /** `queueSeries`: per queue or aggregated (--metrics-per-queue); default per queue. */
  constructor(queueSeries: QueueSeries = new QueueSeries({ mode: 'on', queueCount: () => 0 })) {
    this.#queueSeries = queueSeries;
    this.#perQueue = queueSeries.perQueue();
    collectDefaultMetrics({ register: this.registry, prefix: 'workerless_' });
    for (const def of ALL_METRICS) {
      const common = { name: def.prometheus, help: def.help, labelNames: [...def.labels], registers: [this.registry] };
      const metric =
        def.kind === 'counter'
          ? new Counter(common)
          : def.kind === 'gauge'
            ? new Gauge(common)
            : new Histogram({ ...common, buckets: [...(def.buckets ?? DURATION_BUCKETS)] });
      this.#byName.set(def.cloudwatch, { def, metric });
    }
  }

  record(input: MetricDatum): void {
    const entry = this.#byName.get(input.name);
    if (!entry) return;
    this.#followQueueSeries();
    this.#write(entry, this.#queueSeries.apply(input));
  }

  /**
   * A queue left its route: every series with its labels goes (a departed queue does not freeze at its last
   * values), and the aggregated gauges are its sums without it.
   */
  forget(dimensions: Readonly<Record<string, string>>): void {
    this.#followQueueSeries();
    for (const datum of this.#queueSeries.forget(dimensions)) {
      const entry = this.#byName.get(datum.name);
      if (entry) this.#write(entry, datum);
    }
    const match = Object.entries(dimensions).map(([k, v]) => [labelOf(k), v] as const);
    for (const { def, metric } of this.#byName.values()) {
      if (!match.every(([label]) => def.labels.includes(label))) continue;
      void (async () => {
        const removed = new Set<string>();
        for (const { labels } of (await metric.get()).values) {
          if (!match.every(([label, v]) => labels[label] === v)) continue;
          // A histogram's bucket samples carry `le`, which is no label of its series.
          const series = Object.fromEntries(Object.entries(labels).filter(([k]) => k !== 'le'));
          const key = JSON.stringify(series);
          if (removed.has(key)) continue;
          removed.add(key);
          metric.remove(series as Record<string, string>);
        }
      })();
    }
  }

  #write(entry: { def: MetricDef; metric: Metric }, datum: MetricDatum): void {
    const labels: Record<string, string> = {};
    for (const name of entry.def.labels) labels[name] = '';
    for (const [k, v] of Object.entries(datum.dimensions)) {
      const label = labelOf(k);
      if (label in labels) labels[label] = v;
    }
    const { metric, def } = entry;
    // An unknown gauge is absent, not NaN or a stale value (Prometheus's writing-exporters guidance).
    if (Number.isNaN(datum.value)) {
      if (metric instanceof Gauge) metric.remove(labels);
      return;
    }
    if (metric instanceof Counter) metric.inc(labels, datum.value);
    else if (metric instanceof Gauge) metric.set(labels, datum.value);
    else if (metric instanceof Histogram) metric.observe(labels, def.unit === 'Milliseconds' ? datum.value / 1000 : datum.value);
  }

  /**
   * A switch between per-queue and aggregated series drops the queue-labelled series of the mode left, so a scrape
   * never shows both (a counter starting again from zero is a reset, which rate() and increase() expect).
   */
  #followQueueSeries(): void {
    const perQueue = this.#queueSeries.perQueue();
    if (perQueue === this.#perQueue) return;
    this.#perQueue = perQueue;
    for (const { def, metric } of this.#byName.values()) if (def.labels.includes('queue')) metric.reset();
  }

  async exposition(): Promise<{ contentType: string; body: string }> {
    this.#followQueueSeries();
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
