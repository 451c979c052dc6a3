// The fleet's budget: this replica's share of --fleet-concurrency among the live members. The shares are a pure
// function of the total and the live ids, so replicas that see the same members take shares that add up to the
// total exactly, with no message between them; --concurrency stays each process's own cap.

/**
 * How many of `total` invocations at once `self` may run when `members` are live, at most `cap` (the process's
 * --concurrency). `self` counts as live even when `members` lacks it.
 *
 * Each member gets floor(total / n); the remaining total mod n units go one each to the first members in
 * code-unit order of their ids (never localeCompare, which differs by locale), so the shares differ by at
 * most 1 and sum to `total`, and two replicas with the same view never both take the same extra unit.
 *
 * With fewer units than members, the members after the first `total` get 0: the total is a promise to the
 * function (its reserved concurrency, a database's connections behind it), and "at least 1 each" would break it
 * by up to n - total. A replica with a share of 0 must receive nothing it cannot invoke, so a fleet whose total
 * is below its members is a configuration to warn about, not to round up.
 *
 * The cap is not handed on: a unit a capped replica cannot use is lost rather than given to another, since a
 * replica does not know the others' caps. Replicas of one deployment share one --concurrency, and then a cap
 * that binds binds everywhere, where no redistribution could help.
 */
export function fleetShare(total: number, members: readonly string[], self: string, cap: number): number {
  const ids = [...new Set([...members, self])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const units = Math.max(0, Math.floor(total));
  const base = Math.floor(units / ids.length);
  const extra = units % ids.length;
  const share = base + (ids.indexOf(self) < extra ? 1 : 0);
  return Math.max(0, Math.min(share, Math.floor(cap)));
}
