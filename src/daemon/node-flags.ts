// The V8 flags workerless runs with, however it is started.
//
// --max-semi-space-size=8: V8's young generation stops at 2 x 8 MiB instead of growing to 2 x 32 MiB under load,
// which took about 40 MiB off the peak RSS at concurrency 100 and about 130 MiB at 10,000, at no measurable CPU
// cost (bench/README.md). --heap-growing-percent=10: full collections come before promoted garbage piles up in the
// old space, for runs of up to 100 loops (src/daemon/heap-growth.ts; larger runs get V8's own growth back).
//
// The #! line of src/main.ts, the image's entrypoint and `npm start` give Node these flags.
// Started any other way (`node dist/src/main.js`, a process manager, a wrapper script), Node would run without
// them: in a 10-minute soak at c=50 the peak RSS was 194 MiB instead of 105. V8 reads --max-semi-space-size only
// when it creates the heap (v8.setFlagsFromString later changes nothing: the young generation still grew to
// 128 MiB), and Node does not allow --heap-growing-percent in NODE_OPTIONS. So the process replaces itself, before
// it has done anything else, with the same program under the same Node and the flags added (process.execve: the
// same process id, stdio, environment and parent, so signals, exit codes, tini and process managers see no
// difference). Where that cannot be done, the daemon warns.

/** The flags, as the #! line, the image's entrypoint and `npm start` give them. */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--heap-growing-percent=10'];

/** A flag's name, with V8's spellings (`-` or `_`) matched alike. */
function flagPattern(flag: string): RegExp {
  const name = flag.replace(/=.*$/, '').replace(/^--/, '');
  return new RegExp(`(^|\\s)--${name.replace(/-/g, '[-_]')}(=|\\s|$)`);
}

/**
 * The flags of NODE_FLAGS that Node was started without: named neither among its own options (execArgv) nor in
 * NODE_OPTIONS. A flag given with another value is the operator's choice and stands.
 */
export function missingNodeFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  return NODE_FLAGS.filter((flag) => {
    const pattern = flagPattern(flag);
    return !execArgv.some((a) => pattern.test(a)) && !pattern.test(nodeOptions ?? '');
  });
}

/** What ensureNodeFlags needs of `process`. */
export interface NodeProcess {
  readonly execPath: string;
  readonly execArgv: readonly string[];
  readonly argv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** Present when the process was forked with an IPC channel, which would not survive the exec. */
  readonly channel?: unknown;
  /** Node >= 22.15 on POSIX systems. */
  readonly execve?: (file: string, args?: readonly string[], env?: NodeJS.ProcessEnv) => never;
}

/**
 * Replaces the process with itself under the missing flags, if any are missing and it can; never returns then.
 * Returns the warning for the operator when flags are missing and it cannot (no process.execve, an IPC channel, a
 * preload that would run twice, or the exec failed): none when nothing is missing.
 */
export function ensureNodeFlags(proc: NodeProcess): string[] {
  const missing = missingNodeFlags(proc.execArgv, proc.env['NODE_OPTIONS']);
  if (missing.length === 0) return [];
  const why = restart(proc, missing);
  return [
    `Node runs without ${missing.join(' ')} and ${why}: the peak memory can be about twice as high. ` +
      `Start the workerless command, or give node these flags (node ${NODE_FLAGS.join(' ')} dist/src/main.js)`,
  ];
}

/** Node's options that load a module before the program: they ran in this process already, and would run again. */
const PRELOAD_OPTIONS = /^(-r|--require|--import|--loader|--experimental-loader)(=|$)/;

/**
 * The preloads Node was started with, in its own options or NODE_OPTIONS (an APM agent, OpenTelemetry's
 * auto-instrumentation): each has run once in this process, and a restart would run it a second time.
 */
export function preloads(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const options = [...execArgv, ...(nodeOptions ?? '').split(/\s+/).filter(Boolean)];
  const found: string[] = [];
  for (const [i, option] of options.entries()) {
    const m = PRELOAD_OPTIONS.exec(option);
    if (m === null) continue;
    found.push(m[2] === '=' ? option : `${option} ${options[i + 1] ?? ''}`.trim());
  }
  return found;
}

/** Replaces the process, or says why it cannot. */
function restart(proc: NodeProcess, missing: readonly string[]): string {
  if (proc.execve === undefined) return 'this Node cannot replace the process (process.execve)';
  const preloaded = preloads(proc.execArgv, proc.env['NODE_OPTIONS']);
  if (preloaded.length > 0) return `a restart would run the preload ${preloaded.join(', ')} a second time`;
  if (proc.channel !== undefined) return 'the process has an IPC channel, which would not survive a restart';
  if (proc.argv[1] === undefined) return 'the script is unknown';
  try {
    proc.execve(proc.execPath, [proc.execPath, ...missing, ...proc.execArgv, ...proc.argv.slice(1)], proc.env);
  } catch (err) {
    return `restarting Node with them failed (${err instanceof Error ? err.message : String(err)})`;
  }
  return 'restarting Node with them failed'; // process.execve returns only by throwing
}
