/**
 * `workerless migrate` without flags to switch: read the function's mappings and their queues through the ports,
 * build the config (migrate-config.ts), print it as YAML (config-text.ts), after the daemon's own reading of a
 * config file has accepted it (daemon-check.ts).
 */
import { configText } from './config-text.ts';
import { daemonProblems } from './daemon-check.ts';
import { mappingsOf, migrateMappings, sqsMappings } from './migrate-config.ts';
import type { MigratePorts, QueueFacts } from './migrate-ports.ts';

export type MigrateOutcome =
  { readonly ok: true; readonly text: string; readonly differences: number } | { readonly ok: false; readonly problem: string };

export async function migrateFunction(functionName: string, ports: MigratePorts, signal: AbortSignal): Promise<MigrateOutcome> {
  const mappings = mappingsOf(functionName, await ports.listMappings(functionName, signal));
  const queues = new Map<string, QueueFacts>();
  for (const arn of new Set(sqsMappings(mappings).map((m) => m.eventSourceArn))) queues.set(arn, await ports.queueFacts(arn, signal));
  const result = migrateMappings(functionName, mappings, queues);
  if (!result.ok) return result;
  const text = configText(functionName, result.migration);
  const problems = daemonProblems(text);
  if (problems.length > 0) return { ok: false, problem: `the daemon would refuse the migrated config: ${problems.join('; ')}` };
  return { ok: true, text, differences: result.migration.differences.length };
}
