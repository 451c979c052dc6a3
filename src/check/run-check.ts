import type { AwsEndpoints } from '../aws/endpoints.ts';
import type { Config } from '../config/config.ts';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../core/exit-codes.ts';

/** The process, as main.ts hands it to the check (main stays the one module that touches `process`). */
export interface CheckProcess {
  /** Aborted by SIGTERM/SIGINT: the checks in flight end, and the check fails. */
  readonly stop: AbortSignal;
  /** The environment: the OTEL_* variables are validated as a run validates them. */
  readonly env: NodeJS.ProcessEnv;
  /** The report, on stdout. */
  print(text: string): void;
  /** One line for the operator on stderr, as `workerless: <line>`. */
  tell(line: string): void;
}

/** `workerless check`: one line per check on stdout; exit 0 when every check passed, 1 otherwise. */
export async function runCheck(config: Config, endpoints: AwsEndpoints, warnings: readonly string[], proc: CheckProcess): Promise<number> {
  const { stop } = proc;
  const [{ runChecks, formatReport, allPassed }, { createCheckAdapters }, { OtelConfigError, describeProblem, resolveOtelEnv }] =
    await Promise.all([import('./check.ts'), import('./check-adapters.ts'), import('../operator/tracing/otel-env.ts')]);
  // Invalid OTEL_* variables stop a run with exit 2, so they fail the check the same way.
  try {
    resolveOtelEnv(proc.env);
  } catch (err) {
    if (!(err instanceof OtelConfigError)) throw err;
    for (const p of err.problems) proc.tell(describeProblem(p));
    return EXIT_USAGE;
  }
  for (const w of warnings) proc.tell(`warning: ${w}`);
  const adapters = createCheckAdapters(config, endpoints);
  try {
    const report = await runChecks(config, adapters, { signal: stop });
    proc.print(`${formatReport(report).join('\n')}\n`);
    return allPassed(report) && !stop.aborted ? EXIT_OK : EXIT_FAILURE;
  } finally {
    adapters.close();
  }
}
