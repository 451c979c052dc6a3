import type { Logger } from 'pino';
import type { AwsAdapters } from '../aws/adapters.ts';
import type { Config } from '../config/config.ts';
import { fanOut, type MetricsSink } from '../core/telemetry/metrics-sink.ts';
import type { Operations } from '../operator/operations.ts';
import { QueueSeries } from '../operator/metrics/queue-series.ts';

// A run's metrics sinks, started after the start-up checks and finished once every part has stopped.

/**
 * The metrics sinks: CloudWatch (with --metrics on, publishing every --metrics-interval) and the HTTP server's
 * Prometheus registry. `finish` stops the publishing loop and flushes what is left, once every part has stopped.
 */
export async function startMetrics(
  config: Config,
  aws: AwsAdapters,
  logger: Logger,
  ops: Operations | undefined,
  queueCount: () => number,
): Promise<{ readonly sink: MetricsSink; finish(): Promise<void> }> {
  const cloudwatchMetrics = config.metricsEnabled
    ? new (await import('../operator/metrics/cloudwatch.ts')).CloudWatchMetrics(
        await aws.cloudwatch(),
        logger.child({ component: 'metrics' }),
        {
          namespace: config.metricsNamespace,
          queueSeries: new QueueSeries({ mode: config.metricsPerQueue, queueCount }),
        },
      )
    : undefined;
  const sink = fanOut([...(cloudwatchMetrics ? [cloudwatchMetrics] : []), ...(ops?.sinks ?? [])]);
  const metricsStop = new AbortController();
  const metricsLoop = cloudwatchMetrics?.run(config.metricsIntervalMs, metricsStop.signal);
  return {
    sink,
    async finish() {
      metricsStop.abort();
      await metricsLoop;
      await cloudwatchMetrics?.flush();
    },
  };
}
