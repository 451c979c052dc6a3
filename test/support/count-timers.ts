/**
 * Counts the timers armed through globalThis.setTimeout (mock.timers' fake one while it is on) until restore():
 * how the tests of the shared timer heap show that many deadlines arm one timer.
 */
export function countTimers(): { readonly armed: () => number; restore(): void } {
  const wrapped = globalThis.setTimeout;
  let armed = 0;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    armed++;
    return wrapped(...args);
  }) as typeof setTimeout;
  return {
    armed: () => armed,
    restore: () => {
      globalThis.setTimeout = wrapped;
    },
  };
}
