// Placement: which live member owns a queue's idle long poll. Rendezvous (highest random weight) hashing: every
// member gets a pseudo-random weight for the queue and the highest weights own it. It is a pure function of the
// live member ids and the queue's key, so every replica that sees the same members computes the same owners
// with no message between them, and a change of members moves only the queues it must (below).

const UTF8 = new TextEncoder();

/**
 * MurmurHash3's x86 32-bit hash of `bytes` (Austin Appleby's public-domain reference, byte for byte, so it can
 * be checked against its published values). It is part of the fleet's contract: replicas of two versions must
 * agree on it during a rolling deploy, so it must never change (test/unit/fleet/placement.test.ts pins it).
 */
function murmur3(bytes: Uint8Array, seed: number): number {
  let h = seed | 0;
  const tail = bytes.length & ~3;
  for (let i = 0; i < tail; i += 4) {
    const k = (bytes[i] ?? 0) | ((bytes[i + 1] ?? 0) << 8) | ((bytes[i + 2] ?? 0) << 16) | ((bytes[i + 3] ?? 0) << 24);
    h ^= scramble(k);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const rest = bytes.length & 3;
  if (rest > 0) {
    let k = 0;
    if (rest === 3) k ^= (bytes[tail + 2] ?? 0) << 16;
    if (rest >= 2) k ^= (bytes[tail + 1] ?? 0) << 8;
    k ^= bytes[tail] ?? 0;
    h ^= scramble(k);
  }
  h ^= bytes.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function scramble(k: number): number {
  let s = Math.imul(k, 0xcc9e2d51);
  s = (s << 15) | (s >>> 17);
  return Math.imul(s, 0x1b873593);
}

/** MurmurHash3 (x86, 32-bit) of a string's UTF-8 bytes; exported only so that a test can pin its values. */
export function murmur3Of(text: string, seed = 0): number {
  return murmur3(UTF8.encode(text), seed);
}

/** A member with its seed: the hash of its id, computed once per placement rather than once per queue. */
interface Seeded {
  readonly id: string;
  readonly seed: number;
}

/** The members, once each, in code-unit order of their ids (never localeCompare: it differs by locale). */
function seeded(members: readonly string[]): Seeded[] {
  return [...new Set(members)].sort(byId).map((id) => ({ id, seed: murmur3Of(id) }));
}

function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Whether `a` outranks `b` for a queue: the higher weight, and on equal weights the lower id (members arrive
 * sorted by id, so an earlier index is a lower id). A tie needs two 32-bit weights to be equal: about once in
 * 4 billion pairs, and then the id still decides it the same way in every replica.
 */
function outranks(weightA: number, indexA: number, weightB: number, indexB: number): boolean {
  return weightA > weightB || (weightA === weightB && indexA < indexB);
}

/**
 * The `k` owners of `queue` among `members`, the first one first: the members with the `k` highest weights,
 * where a member's weight for a queue is MurmurHash3 of the queue's key seeded with the hash of the member's id.
 * `k` is at least 1 and at most the number of members; no members, no owners.
 *
 * `queue` is the queue's key: the same string in every replica (its URL, which also tells two regions'
 * same-named queues apart).
 *
 * Why it is fair: MurmurHash3 passes SMHasher's distribution, avalanche and seed tests, so for one queue the
 * members' weights behave as independent uniform draws, and each of n members is the highest with
 * probability 1/n: each owns about queues/n (the test measures it on 1,000 and 10,000 queues over 3, 4 and 10
 * members). Why it moves little, whatever the hash: a member's weight for a queue depends only on the two of
 * them, so removing a member changes the owner of only the queues it owned, and adding one moves to it only
 * the queues where its weight is the highest, about 1/(n+1) of them, all from the others to the newcomer.
 */
export function ownersOf(members: readonly string[], queue: string, k = 1): string[] {
  const all = seeded(members);
  const bytes = UTF8.encode(queue);
  const ranked = all.map((m, index) => ({ id: m.id, index, weight: murmur3(bytes, m.seed) }));
  ranked.sort((a, b) => (outranks(a.weight, a.index, b.weight, b.index) ? -1 : 1));
  return ranked.slice(0, Math.max(1, Math.floor(k))).map((m) => m.id);
}

/**
 * The queues of `queues`, in their order, that `self` owns (is one of the `k` owners of) among `members`:
 * what this replica long-polls while they are idle. `self` counts as a member even when `members` lacks it.
 *
 * The cost is one hash per queue and member: O(queues x members), 100,000 short hashes for 10,000 queues over
 * 10 members (milliseconds), with each name encoded and each member's seed hashed once. It changes only when
 * the live members or the queue list do, so the caller may keep the answer until then.
 */
export function ownedQueues(self: string, members: readonly string[], queues: readonly string[], k = 1): string[] {
  const all = seeded([...members, self]);
  const me = all.findIndex((m) => m.id === self);
  const mySeed = all[me]?.seed ?? 0;
  const owners = Math.max(1, Math.floor(k));
  if (owners >= all.length) return [...queues];
  const owned: string[] = [];
  for (const queue of queues) {
    const bytes = UTF8.encode(queue);
    const mine = murmur3(bytes, mySeed);
    let above = 0;
    for (let i = 0; i < all.length && above < owners; i++) {
      const other = all[i];
      if (i !== me && other !== undefined && outranks(murmur3(bytes, other.seed), i, mine, me)) above++;
    }
    if (above < owners) owned.push(queue);
  }
  return owned;
}
