/** Full-jitter exponential back-off: a random delay in [0, min(cap, base * 2^attempt)). */
export function backoffMs(attempt: number, baseMs = 200, capMs = 20_000, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/**
 * Sleeps, but returns early (without throwing) when the signal aborts. Uses the global setTimeout, so tests
 * can drive it with fake timers.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
