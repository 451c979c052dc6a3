import { readFileSync } from 'node:fs';

/**
 * The soft "Max open files" of /proc/self/limits. Node raises its soft limit to the hard one at start-up, so
 * this is the limit the process really runs with (`ulimit -n` or `prlimit --nofile` before the start).
 * Undefined when the line is missing or says "unlimited".
 */
export function parseOpenFileLimit(procSelfLimits: string): number | undefined {
  const m = /^Max open files\s+(\d+)\s/m.exec(procSelfLimits);
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

/** RLIMIT_NOFILE as the process runs with it (Node has no API for it); undefined off Linux. */
export function readOpenFileLimit(): number | undefined {
  try {
    return parseOpenFileLimit(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return undefined;
  }
}
