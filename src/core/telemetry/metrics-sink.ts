/** CloudWatch units used by workerless. */
export type MetricUnit = 'Count' | 'Milliseconds';

/** One observation; the sink aggregates observations into statistic sets per interval. */
export interface MetricDatum {
  name: string;
  unit: MetricUnit;
  /** NaN: a gauge that has no value now (unknown, not zero): Prometheus drops the series, CloudWatch gets no datum. */
  value: number;
  /** e.g. { Queue: 'payments' } or { TaskQueue: 'orders' } */
  dimensions: Readonly<Record<string, string>>;
}

/** Where components report metrics. Recording never blocks and never throws. */
export interface MetricsSink {
  record(datum: MetricDatum): void;
  /**
   * Every series whose dimensions include all of `dimensions` goes: a queue that left its route, once nothing of
   * it is in flight. Prometheus drops them, an aggregated gauge stops counting them. Sinks that keep no series
   * need not have it.
   */
  forget?(dimensions: Readonly<Record<string, string>>): void;
}

/** A sink that drops everything (metrics disabled, or tests that do not care). */
export const noopMetrics: MetricsSink = { record() {} };

/** Sends every datum to each sink (CloudWatch, Prometheus, the status page). */
export function fanOut(sinks: readonly MetricsSink[]): MetricsSink {
  if (sinks.length === 0) return noopMetrics;
  if (sinks.length === 1) return sinks[0]!;
  return {
    record(datum) {
      for (const sink of sinks) sink.record(datum);
    },
    forget(dimensions) {
      for (const sink of sinks) sink.forget?.(dimensions);
    },
  };
}
