// A check's line, and the start-up checks as the checks that must pass: a start-up check that fails throws a
// StartupError whose message is the line `workerless check` prints after FAIL.
import { StartupError } from '../core/errors.ts';
import type { CheckResult } from './check-ports.ts';

/** `<name>: <detail>`: what `workerless check` prints after `FAIL` or `warn`, and what a failed start-up says. */
export function checkLine(result: CheckResult): string {
  return `${result.name}: ${result.detail}`;
}

/** A start-up check: returns when the result passed, else throws a StartupError with its line. */
export function mustPass(result: CheckResult): void {
  if (!result.ok) throw new StartupError(checkLine(result));
}
