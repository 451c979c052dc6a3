/**
 * The migrated config through the daemon's own reading of a --config file (src/config/cli.ts's fileOptions, then
 * resolveConfig): a migration that prints a config the daemon would refuse is a bug, so `workerless migrate` runs
 * this before it prints, and fails with the daemon's words instead.
 */
import { parse } from 'yaml';
import { fileOptions } from '../config/cli.ts';
import { OPTIONS, resolveConfig } from '../config/config.ts';

/** The problems the daemon would report for this config file's text; empty when it would run it. */
export function daemonProblems(text: string): string[] {
  const problems: string[] = [];
  const raw = fileOptions(parse(text) as unknown, 'the migrated config', OPTIONS, problems);
  const resolved = resolveConfig(raw);
  return [...problems, ...(resolved.ok ? [] : resolved.problems)];
}
