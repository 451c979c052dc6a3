/**
 * The batching window's configuration rules, as Lambda's SQS trigger has them: --batch-size above 10 needs a
 * --batch-window of at least 1 s; FIFO queues take at most 10 and no window.
 */
import type { OptionsWithDefaults } from './with-defaults.ts';
import { defaultOf } from './options.ts';
import { queueNameOf } from '../core/queue.ts';

/** The trigger's bounds: BatchSize 1-10,000 (10 on FIFO), a window of at least 1 s above 10. */
const FIFO_BATCH_MAX = 10;
const WINDOW_NEEDED_ABOVE = 10;
const MIN_WINDOW_FOR_LARGE_MS = 1_000;

/**
 * Reads --batch-window (ms) and checks the trigger's rules against the batch size and queues it goes with;
 * problems go to `r`. An invalid --batch-window is reported as such, not also against the rules.
 */
export function resolveBatchWindowMs(r: OptionsWithDefaults, batchSize: number, queueRefs: readonly string[]): number {
  const given = r.given('batch-window');
  const windowMs = given ?? defaultOf('batch-window');
  if (given !== undefined || !r.has('batch-window')) {
    const origins = { batchSize: r.origin('batch-size'), batchWindow: r.origin('batch-window') };
    for (const p of batchWindowProblems(batchSize, windowMs, queueRefs, origins)) r.problem(p);
  }
  return windowMs;
}

/** Where the values came from, when not from their flag (`WORKERLESS_BATCH_SIZE`, `batch-size in wl.yaml`). */
export interface BatchWindowOrigins {
  readonly batchSize?: string | undefined;
  readonly batchWindow?: string | undefined;
}

/**
 * The trigger's rules for a batch size and window, checked against the queues as given in --queues (names or
 * URLs; FIFO by the `.fifo` their names must end in): one problem per rule broken, naming the option, its
 * value, where it came from and the queue.
 */
export function batchWindowProblems(
  batchSize: number,
  windowMs: number,
  queueRefs: readonly string[],
  origins: BatchWindowOrigins = {},
): string[] {
  const size = `${batchSize}${from('batch-size', origins.batchSize)}`;
  const window = `${formatWindow(windowMs)}${from('batch-window', origins.batchWindow)}`;
  const fifo = queueRefs.map(queueNameOf).filter((n) => n.endsWith('.fifo'));
  if (fifo.length === 0) {
    return batchSize > WINDOW_NEEDED_ABOVE && windowMs < MIN_WINDOW_FOR_LARGE_MS
      ? [
          `--batch-size above ${WINDOW_NEEDED_ABOVE} needs a --batch-window of at least 1s (as on Lambda's trigger), got --batch-size ${size} with --batch-window ${window}`,
        ]
      : [];
  }
  const which = `FIFO queue${fifo.length > 1 ? 's' : ''} ${fifo.join(', ')}`;
  const problems: string[] = [];
  if (batchSize > FIFO_BATCH_MAX)
    problems.push(`--batch-size must be at most ${FIFO_BATCH_MAX} with ${which} (as on Lambda's trigger), got ${size}`);
  if (windowMs > 0) problems.push(`--batch-window is not available with ${which} (Lambda's trigger has no window on FIFO), got ${window}`);
  return problems;
}

function from(flag: string, origin: string | undefined): string {
  return origin === undefined || origin === `--${flag}` ? '' : ` (from ${origin})`;
}

function formatWindow(ms: number): string {
  return ms % 1_000 === 0 ? `${ms / 1_000}s` : `${ms}ms`;
}
