/**
 * Runs `each` over `items`, at most `atOnce` at a time, in order; resolves when every one has ended. Once one
 * rejects, the returned promise rejects with it and no further item is started (those already started end on
 * their own).
 */
export async function eachBounded<T>(items: readonly T[], atOnce: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      try {
        await each(items[next++]!);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, atOnce), items.length) }, worker));
}

/** `fn` of each of `items`, at most `atOnce` at a time, the results in the items' order; stops as eachBounded does. */
export async function mapBounded<T, R>(items: readonly T[], atOnce: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  await eachBounded([...items.keys()], atOnce, async (i) => {
    results[i] = await fn(items[i]!);
  });
  return results;
}
