import type { AwsEndpoints } from '../aws/endpoints.ts';
import type { Config } from '../config/config.ts';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../exit-codes.ts';

/** `workerless check`: one line per check on stdout; exit 0 when every check passed, 1 otherwise. */
export async function runCheck(config: Config, endpoints: AwsEndpoints, warnings: readonly string[], stop: AbortSignal): Promise<number> {
  const [{ runChecks, formatReport, allPassed }, { createCheckAdapters }, { OtelConfigError, describeProblem, resolveOtelEnv }] =
    await Promise.all([import('./check.ts'), import('./check-adapters.ts'), import('../operator/tracing/otel-env.ts')]);
  // Invalid OTEL_* variables stop a run with exit 2, so they fail the check the same way.
  try {
    resolveOtelEnv(process.env);
  } catch (err) {
    if (!(err instanceof OtelConfigError)) throw err;
    for (const p of err.problems) process.stderr.write(`workerless: ${describeProblem(p)}\n`);
    return EXIT_USAGE;
  }
  for (const w of warnings) process.stderr.write(`workerless: warning: ${w}\n`);
  const adapters = createCheckAdapters(config, endpoints);
  try {
    const report = await runChecks(config, adapters, { signal: stop });
    process.stdout.write(`${formatReport(report).join('\n')}\n`);
    return allPassed(report) && !stop.aborted ? EXIT_OK : EXIT_FAILURE;
  } finally {
    adapters.close();
  }
}
