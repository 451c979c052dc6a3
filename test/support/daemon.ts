import { awsTestEnv } from './aws.ts';
import { runCli, type CliRun } from './cli.ts';

/**
 * Starts the real CLI against LocalStack (SQS, CloudWatch) and the test Lambda endpoint. Defaults suit tests:
 * metrics off, 1 s long polls (so a stop never waits long), debug logs (one line per invocation).
 */
export function startDaemon(
  lambdaEndpoint: string,
  args: string[],
  env: Record<string, string> = {},
  launcher: readonly string[] = [],
): CliRun {
  return runCli(
    ['--metrics', 'off', '--poll-for', '1', '--log-level', 'debug', ...args],
    {
      ...awsTestEnv({ lambdaEndpoint }),
      ...env,
    },
    launcher,
  );
}

/**
 * Starts the real CLI as an idle daemon runs: the default --poll-for (20 s, where startDaemon passes 1 s), metrics
 * off, info logs, SQS at `sqsEndpoint` (a server, or a counting proxy in front of it), the test Lambda endpoint.
 * `args` names the function, the queues and the concurrency.
 */
export function startIdleDaemon(
  lambdaEndpoint: string,
  sqsEndpoint: string,
  args: readonly string[],
  env: Record<string, string> = {},
): CliRun {
  return runCli(['--metrics', 'off', '--log-level', 'info', ...args], {
    ...awsTestEnv({ lambdaEndpoint }),
    AWS_ENDPOINT_URL_SQS: sqsEndpoint,
    ...env,
  });
}

/** Waits for the start-up summary, so a test knows the daemon resolved its queues and checked the function. */
export async function started(run: CliRun): Promise<void> {
  await run.waitForLog((l) => l['msg'] === 'workerless started', 30_000);
}

/** SIGTERM, then the exit code (fails the test if the daemon does not exit within `timeoutMs`). */
export async function stopDaemon(run: CliRun, timeoutMs = 30_000): Promise<number | null> {
  if (run.child.exitCode !== null) return run.child.exitCode;
  run.child.kill('SIGTERM');
  const timer = setTimeout(() => run.child.kill('SIGKILL'), timeoutMs);
  const { code } = await run.exited;
  clearTimeout(timer);
  return code;
}

/** The daemon's warnings and errors (level 40 and up) as JSON lines, for assertion messages. */
export function problems(run: CliRun): string {
  return run
    .logs()
    .filter((l) => Number(l['level']) >= 40)
    .map((l) => JSON.stringify(l))
    .join('\n');
}
