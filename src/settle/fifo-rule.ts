/**
 * The FIFO rule, in one place: a message group's later messages must not run before an earlier one that
 * failed, so on a FIFO queue processing stops at the first failure, and that message and every later one of
 * the batch stay on the queue (AWS's trigger and Powertools' SqsFifoProcessor do the same). On a standard
 * queue only the failed messages stay. `orderedIds` is the batch in receive order.
 */
export function idsToKeep(orderedIds: readonly string[], failed: ReadonlySet<string>, fifo: boolean): string[] {
  if (!fifo) return orderedIds.filter((id) => failed.has(id));
  const first = orderedIds.findIndex((id) => failed.has(id));
  return first < 0 ? [] : orderedIds.slice(first);
}

/**
 * Whether a batch invoked in chunks stops after one: on a FIFO queue, when a message of the batch is kept and
 * chunks remain (`invoked` of its `total` messages were handed to the function), the later ones stay on the
 * queue, behind it. A standard queue never stops.
 */
export function stopsAfterChunk(
  orderedIds: readonly string[],
  kept: ReadonlySet<string>,
  fifo: boolean,
  invoked: number,
  total: number,
): boolean {
  return fifo && idsToKeep(orderedIds, kept, fifo).length > 0 && invoked < total;
}
