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
import type { MigratePorts, SqsMapping } from './migrate-ports.ts';

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

/** What a switch did: nothing to switch, refused, done, or stopped part way by SIGINT/SIGTERM. */
export type SwitchOutcome =
  | { readonly kind: 'no-mapping' }
  /** --cutover refused before any change: the ready run reads none of these queues, each an enabled mapping's. */
  | { readonly kind: 'unread'; readonly queues: readonly string[] }
  | { readonly kind: 'switched'; readonly count: number }
  | Interrupted;

/** Stopped part way: the update in flight (its state unknown) and the mappings it had still to switch. */
export interface Interrupted {
  readonly kind: 'interrupted';
  /** `mapping <uuid> (queue q)` whose UpdateEventSourceMapping was in flight: Lambda may or may not have applied it. */
  readonly inFlight: string | undefined;
  /** The mappings it had still to switch, in order. */
  readonly notReached: readonly string[];
}

/** With --cutover: what the ready run reads (its status.json), so that no queue is left without a consumer. */
export interface RunReads {
  /** The names of the queues the run reads. */
  readonly queues: ReadonlySet<string>;
  /** --partial: disable the mappings of those queues and keep the others enabled, rather than refuse. */
  readonly partial: boolean;
}

/**
 * Disables (`enabled` false) or enables the function's SQS mappings, each that is not already so; one line per
 * mapping as it goes (`mapping <uuid> (queue orders): Enabled -> Disabling`), so a failure part way leaves a record of
 * what was switched. With `reads` (a cut-over), a mapping is disabled only when the run reads its queue: a queue of
 * an enabled mapping that the run does not read would be left without a consumer, so the switch refuses before any
 * change (or, with `partial`, keeps that mapping enabled). A stop (`signal`) ends it before the next update, and
 * the outcome names the update in flight and those not reached; a second run skips what is already switched, so it
 * converges. Throws the AwsCallError of a refused call.
 */
export async function switchMappings(
  functionName: string,
  enabled: boolean,
  ports: Pick<MigratePorts, 'listMappings' | 'setEnabled'>,
  signal: AbortSignal,
  say: (line: string) => void,
  reads?: RunReads,
): Promise<SwitchOutcome> {
  const mappings = sqsMappings(mappingsOf(functionName, await ports.listMappings(functionName, signal)));
  if (mappings.length === 0) return { kind: 'no-mapping' };
  const done = enabled ? ['Enabled', 'Enabling'] : ['Disabled', 'Disabling'];
  const queueOf = (m: SqsMapping): string => parseQueueArn(m.eventSourceArn)?.name ?? m.eventSourceArn;
  const label = (m: SqsMapping): string => `mapping ${m.uuid} (queue ${queueOf(m)})`;
  const unread = (m: SqsMapping): boolean => !enabled && reads !== undefined && !reads.queues.has(queueOf(m));
  const toSwitch = mappings.filter((m) => !done.includes(m.state) && !unread(m));
  const left = [...new Set(mappings.filter((m) => !done.includes(m.state) && unread(m)).map(queueOf))];
  if (left.length > 0 && reads?.partial !== true) return { kind: 'unread', queues: left };
  let switched = 0;
  for (const m of mappings) {
    if (done.includes(m.state)) {
      say(`${label(m)}: already ${m.state}`);
      continue;
    }
    if (unread(m)) {
      say(`${label(m)}: kept ${m.state}: the run does not read this queue`);
      continue;
    }
    const notReached = (): string[] => toSwitch.slice(toSwitch.indexOf(m) + 1).map(label);
    if (signal.aborted) return { kind: 'interrupted', inFlight: undefined, notReached: [label(m), ...notReached()] };
    let state: string;
    try {
      state = await ports.setEnabled(m.uuid, enabled, signal);
    } catch (err) {
      // Aborted by the stop, not refused: the request may have reached Lambda, so its outcome is unknown.
      if (signal.aborted) return { kind: 'interrupted', inFlight: label(m), notReached: notReached() };
      throw err;
    }
    say(`${label(m)}: ${m.state} -> ${state}`);
    switched++;
  }
  return { kind: 'switched', count: switched };
}

/** The lines an interrupted switch ends with: what is unknown, what was not reached, and how to finish. */
export function interruptedLines(outcome: Interrupted, enabled: boolean): string[] {
  return [
    ...(outcome.inFlight !== undefined
      ? [
          `interrupted: ${outcome.inFlight} was being ${enabled ? 'enabled' : 'disabled'}: its state is unknown (Lambda may have applied the update)`,
        ]
      : []),
    ...(outcome.notReached.length > 0 ? [`interrupted: not reached: ${outcome.notReached.join(', ')}`] : []),
    'run the same command again to finish: it skips the mappings already switched',
  ];
}
