import type { Logger } from 'pino';
import type { AwsEndpoints } from '../aws/endpoints.ts';
import { OtelConfigError, describeProblem, resolveOtelEnv } from '../operator/tracing/otel-env.ts';
import type { OtelDispatchTracer } from '../operator/tracing/otel.ts';
import type { DaemonProcess } from './daemon-process.ts';

// Tracing, configured by the standard OTEL_* variables. OpenTelemetry is loaded only when they configure it, since
// it costs resident memory.

/**
 * The tracer the OTEL_* variables configure, undefined when they configure none; 'invalid' when one is invalid:
 * each problem has been told, and the run is a configuration error (exit 2).
 */
export async function startTracing(
  proc: Pick<DaemonProcess, 'env' | 'tell'>,
  endpoints: AwsEndpoints,
  logger: Logger,
): Promise<OtelDispatchTracer | undefined | 'invalid'> {
  try {
    return resolveOtelEnv(proc.env)
      ? await (await import('../operator/tracing/otel.ts')).createOtelTracer(proc.env, logger, { functionRegion: endpoints.region })
      : undefined;
  } catch (err) {
    if (!(err instanceof OtelConfigError)) throw err;
    for (const p of err.problems) proc.tell(describeProblem(p));
    return 'invalid';
  }
}
