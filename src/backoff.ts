import { setTimeout as delay } from 'node:timers/promises';

/** Full-jitter exponential back-off: a random delay in [0, min(cap, base * 2^attempt)). */
export function backoffMs(attempt: number, baseMs = 200, capMs = 20_000, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/** Sleeps, but returns early (without throwing) when the signal aborts. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return;
  try {
    await delay(ms, undefined, signal ? { signal } : undefined);
  } catch {
    // aborted: the caller checks the signal
  }
}
