/**
 * The configuration rules of a durable route (--durable sync|async; docs/targets.md, "Durable functions"): an
 * execution is started per message, under that message's name, so a batch is one message; and workerless deletes
 * the message, since the event's receipt handle is left empty (src/invoke/durable-event.ts).
 */
import type { OptionsWithDefaults } from './with-defaults.ts';
import type { DurableMode } from '../invoke/durable-event.ts';
import type { DeleteMode } from '../settle/settle-chunk.ts';

/** Where the values came from, when not from their flag (`WORKERLESS_DURABLE`, `routes[0].durable in wl.yaml`). */
export interface DurableOrigins {
  readonly durable?: string | undefined;
  readonly batchSize?: string | undefined;
  readonly batchWindow?: string | undefined;
  readonly delete?: string | undefined;
}

/** One problem per rule broken, naming the options, their values and where they came from. */
export function durableProblems(
  mode: DurableMode,
  settings: { readonly batchSize: number; readonly batchWindowMs: number; readonly deleteMode: DeleteMode },
  origins: DurableOrigins = {},
): string[] {
  if (mode === 'off') return [];
  const durable = `--durable ${mode}${from('durable', origins.durable)}`;
  const problems: string[] = [];
  if (settings.batchSize !== 1) {
    problems.push(
      `${durable} starts one execution per message: --batch-size must be 1, got ${settings.batchSize}${from('batch-size', origins.batchSize)}`,
    );
  }
  if (settings.batchWindowMs !== 0) {
    problems.push(
      `${durable} starts one execution per message: --batch-window must be 0, got ${settings.batchWindowMs}ms${from('batch-window', origins.batchWindow)}`,
    );
  }
  if (settings.deleteMode !== 'on-success') {
    problems.push(
      `${durable} deletes each message once its execution has started (async) or ended (sync): --delete must be on-success, got ${settings.deleteMode}${from('delete', origins.delete)}`,
    );
  }
  return problems;
}

/** Reads --durable and checks its rules against the route's other settings; problems go to `r`. */
export function resolveDurable(
  r: OptionsWithDefaults,
  settings: { readonly batchSize: number; readonly batchWindowMs: number; readonly deleteMode: DeleteMode },
): DurableMode {
  const mode = r.read('durable');
  const origins = {
    durable: r.origin('durable'),
    batchSize: r.origin('batch-size'),
    batchWindow: r.origin('batch-window'),
    delete: r.origin('delete'),
  };
  for (const p of durableProblems(mode, settings, origins)) r.problem(p);
  return mode;
}

function from(flag: string, origin: string | undefined): string {
  return origin === undefined || origin === `--${flag}` ? '' : ` (from ${origin})`;
}
