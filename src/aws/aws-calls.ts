import { classifyAwsError } from '../core/errors.ts';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';
import { AWS_METRICS } from '../core/telemetry/metric-names.ts';

/**
 * An SDK middleware (initialize step) that counts every call of its client by operation and outcome (ok,
 * throttled, retryable, fatal): every adapter and start-up check is covered without touching each call site.
 * Use: `client.middlewareStack.add(countAwsCalls('sqs', sink), COUNT_AWS_CALLS)`.
 */
export function countAwsCalls(service: string, sink: MetricsSink) {
  const def = AWS_METRICS.calls;
  return <A, R>(next: (args: A) => Promise<R>, context: { commandName?: string }) =>
    async (args: A): Promise<R> => {
      const operation = (context.commandName ?? 'Unknown').replace(/Command$/, '');
      const record = (outcome: string) =>
        sink.record({
          name: def.cloudwatch,
          unit: def.unit,
          value: 1,
          dimensions: { Service: service, Operation: operation, Outcome: outcome },
        });
      try {
        const out = await next(args);
        record('ok');
        return out;
      } catch (err) {
        record(classifyAwsError(err).kind);
        throw err;
      }
    };
}

export const COUNT_AWS_CALLS = { step: 'initialize', name: 'workerlessCallMetrics' } as const;
