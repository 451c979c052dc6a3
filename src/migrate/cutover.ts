/**
 * The switch from the trigger to workerless and back. --cutover waits until the workerless run that takes over
 * reports ready (its /readyz answers 200: queues resolved, function checked, loops running), then disables the
 * function's SQS mappings; --rollback enables them again. While a mapping is disabling both read its queue: each
 * message is received by one of them and stays invisible to the other for its visibility timeout, and whichever
 * received it deletes it ("Amazon SQS visibility timeout" in the SQS developer guide), so the overlap never loses a
 * message and never hands one to both at once. Nothing is ever deleted or created here.
 */
import { mappingsOf, sqsMappings } from './migrate-config.ts';
import { parseFunctionRef, parseQueueArn } from './arns.ts';
import type { MigratePorts } from './migrate-ports.ts';

/** How often /readyz is asked while the run starts. */
const PROBE_EVERY_MS = 1_000;

/** Undefined once the URL answers 200; else why it did not within the time (its last status or network error). */
export async function waitReady(
  url: string,
  timeoutMs: number,
  ports: Pick<MigratePorts, 'probe'>,
  signal: AbortSignal,
  now: () => number = Date.now,
): Promise<string | undefined> {
  const deadline = now() + timeoutMs;
  let last = 'no answer';
  for (;;) {
    const answer = await ports.probe(url, signal);
    if ('status' in answer && answer.status === 200) return undefined;
    last = 'status' in answer ? `HTTP ${answer.status}` : answer.unreachable;
    if (signal.aborted) return `stopped while waiting (last: ${last})`;
    if (now() + PROBE_EVERY_MS > deadline) return `not ready within ${Math.round(timeoutMs / 1000)} s (last answer: ${last})`;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, PROBE_EVERY_MS);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
}

/**
 * Whether a run that invokes `functions` (its status.json) takes over the trigger of `functionName`: it invokes that
 * function, by any name (name, alias, ARN). A --ready-url that points at another run must not disable this trigger.
 */
export function runServes(functionName: string, functions: readonly string[]): boolean {
  const wanted = parseFunctionRef(functionName)?.name;
  return wanted !== undefined && functions.some((f) => parseFunctionRef(f)?.name === wanted);
}

/**
 * Disables (`enabled` false) or enables the function's SQS mappings, each that is not already so; one line per
 * mapping as it goes (`mapping <uuid> (queue orders): Enabled -> Disabling`), so a failure part way leaves a record of
 * what was switched. Throws the AwsCallError of a refused call. Undefined when the function has no SQS mapping.
 */
export async function switchMappings(
  functionName: string,
  enabled: boolean,
  ports: Pick<MigratePorts, 'listMappings' | 'setEnabled'>,
  signal: AbortSignal,
  say: (line: string) => void,
): Promise<number | undefined> {
  const mappings = sqsMappings(mappingsOf(functionName, await ports.listMappings(functionName, signal)));
  if (mappings.length === 0) return undefined;
  const done = enabled ? ['Enabled', 'Enabling'] : ['Disabled', 'Disabling'];
  let switched = 0;
  for (const m of mappings) {
    const queue = parseQueueArn(m.eventSourceArn)?.name ?? m.eventSourceArn;
    if (done.includes(m.state)) {
      say(`mapping ${m.uuid} (queue ${queue}): already ${m.state}`);
      continue;
    }
    const state = await ports.setEnabled(m.uuid, enabled, signal);
    say(`mapping ${m.uuid} (queue ${queue}): ${m.state} -> ${state}`);
    switched++;
  }
  return switched;
}
