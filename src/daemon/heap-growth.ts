// How far V8 lets the old generation grow between full collections, by the size of the run.
//
// The workerless command starts Node with --heap-growing-percent=10 (the #! line of src/main.ts, the image's
// entrypoint, `npm start`): after each mark-compact the next one comes once the old generation has grown by 10%
// (or V8's minimum step), instead of by V8's own factor of up to 4x. A daemon of up to a hundred loops keeps about
// 11 MiB live, and what its scavenges promote is garbage within milliseconds; with V8's factor that garbage piled up
// to 40-60 MiB of old space in a 20,000-message run at c=10 and c=100, with the flag it stays at 20-30, at no CPU
// cost beyond the noise (bench/README.md, "Memory"). A large run is the opposite case: at c=10,000 hundreds of MiB
// are live, each full collection marks them all, and the same flag doubled the CPU per message. So a run of more
// loops gives V8 its own growth back, unless the operator chose the flag's value.

/** The value the command's flags set. */
export const SMALL_RUN_HEAP_GROWING_PERCENT = 10;
/** The most loops (the sum of the routes' --concurrency) that keep it. */
export const SMALL_RUN_MAX_LOOPS = 100;

const OURS = `--heap-growing-percent=${SMALL_RUN_HEAP_GROWING_PERCENT}`;

/**
 * True when V8 should get its own heap growth back (`--heap-growing-percent=0`, V8's default: a factor it picks
 * from the collector's and the program's speed): the run has more than SMALL_RUN_MAX_LOOPS loops, Node was started
 * with the command's own value, and NODE_OPTIONS does not name the flag (an operator's choice stands).
 */
export function restoreV8HeapGrowth(loops: number, execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  if (loops <= SMALL_RUN_MAX_LOOPS) return false;
  if (nodeOptions?.includes('heap-growing-percent')) return false;
  const given = execArgv.filter((a) => /^--heap[-_]growing[-_]percent=/.test(a));
  return given.length === 1 && given[0] === OURS;
}
