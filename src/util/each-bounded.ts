/** Runs `each` over `items`, at most `atOnce` at a time, in order; resolves when every one has ended. */
export async function eachBounded<T>(items: readonly T[], atOnce: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await each(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, atOnce), items.length) }, worker));
}
