/**
 * A route's queues when they are found, not listed (`--queues-prefix`, `--queues-tag`): which of the queues that
 * ListQueues returned belong to the route, with which weight and limits, and what changed since the last
 * refresh. Pure state: the executor (src/aws/queue-discovery.ts) lists the queues and reads their tags, and
 * this says which tags to read and what the answers mean. Time is an argument.
 *
 * SQS has no tag-filtered list: finding tagged queues is ListQueues (optionally under the prefix) and then one
 * ListQueueTags per queue. Every call is billed, and one ListQueueTags per queue per refresh at 10,000 queues
 * would cost a third of the idle polls again; so the tags of a queue are read when it first appears, and all
 * of them again only every `tagsEveryMs` (a slow full re-read). The trade-off: a queue that appears or vanishes
 * is seen at the next refresh, but a tag changed on a queue that stays (its weight, its limits, whether it
 * still matches) only at the next full re-read.
 */
import { queueNameOf } from '../core/queue.ts';
import type { QueueLimit } from './queue-limits.ts';

/** How a route names its queues when it does not list them. */
export interface QueueSelector {
  /** ListQueues' QueueNamePrefix; undefined: every queue of the account and region. */
  readonly prefix?: string | undefined;
  /** The tag a queue must carry, with this exact value; undefined: every queue the prefix finds. */
  readonly tag?: { readonly key: string; readonly value: string } | undefined;
}

/** The tags that set a found queue's weight and limits (`workerless:weight=3`); absent: weight 1, no limit. */
export const QUEUE_TAGS = {
  weight: 'workerless:weight',
  maxConcurrency: 'workerless:max-concurrency',
  minConcurrency: 'workerless:min-concurrency',
  rate: 'workerless:rate',
} as const;

/** A queue of the route, as the tags (or their absence) set it. */
export interface FoundQueue {
  readonly url: string;
  readonly name: string;
  readonly weight: number;
  /** From the tags; empty without limit tags. */
  readonly limit: QueueLimit;
}

/** What a refresh changed: the queues that joined, left, or whose weight or limits changed. */
export interface QueueSetChange {
  readonly added: readonly FoundQueue[];
  readonly removed: readonly FoundQueue[];
  readonly changed: readonly FoundQueue[];
  /** Queues whose tags could not be read, and were not members before: skipped, read again next refresh. */
  readonly unreadable: readonly string[];
  /** Tag values that could not be used, per queue ("workerless:weight must be ..."): logged, defaults used. */
  readonly problems: readonly { readonly url: string; readonly problem: string }[];
}

/** A tag answer: the tags, or undefined when ListQueueTags failed. */
export type TagAnswer = Readonly<Record<string, string>> | undefined;

interface Known {
  readonly tags: Readonly<Record<string, string>>;
}

export class QueueSet {
  readonly #selector: QueueSelector;
  readonly #tagsEveryMs: number;
  /** The tags last read, by URL, of every listed queue (with a tag selector). */
  readonly #known = new Map<string, Known>();
  /** The route's queues now, by URL. */
  #members = new Map<string, FoundQueue>();
  /** When the tags of every listed queue were last read; undefined: never. */
  #fullReadAt: number | undefined;

  constructor(selector: QueueSelector, tagsEveryMs: number) {
    this.#selector = selector;
    this.#tagsEveryMs = tagsEveryMs;
  }

  /** The route's queues now, by name. */
  get members(): FoundQueue[] {
    return [...this.#members.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * The queues of `listed` whose tags must be read now: none without a tag selector (the prefix decides alone);
   * else the ones never read (new, or unreadable last time), and every one when a full re-read is due.
   */
  tagsToRead(listed: readonly string[], now: number): string[] {
    if (this.#selector.tag === undefined) return [];
    if (this.#fullReadAt === undefined || now - this.#fullReadAt >= this.#tagsEveryMs) return [...listed];
    return listed.filter((url) => !this.#known.has(url));
  }

  /**
   * The refresh's answers: `listed` (ListQueues) and the tags just read (for the queues tagsToRead named).
   * Returns what changed; the members are updated.
   */
  update(listed: readonly string[], tags: ReadonlyMap<string, TagAnswer>, now: number): QueueSetChange {
    const problems: { url: string; problem: string }[] = [];
    const unreadable: string[] = [];
    const listedSet = new Set(listed);
    for (const url of this.#known.keys()) if (!listedSet.has(url)) this.#known.delete(url);
    for (const [url, answer] of tags) {
      if (!listedSet.has(url)) continue;
      if (answer !== undefined) this.#known.set(url, { tags: answer });
      else if (!this.#known.has(url)) unreadable.push(url);
    }
    // Every listed queue was asked, whatever the answers: a queue that keeps failing does not make each refresh a full one.
    if (this.#selector.tag !== undefined && listed.every((url) => tags.has(url))) this.#fullReadAt = now;

    const next = new Map<string, FoundQueue>();
    for (const url of listed) {
      const tagsOf = this.#known.get(url)?.tags;
      if (this.#selector.tag !== undefined) {
        if (tagsOf === undefined || !matches(this.#selector.tag, tagsOf)) continue;
      }
      const settings = settingsFromTags(tagsOf ?? {});
      for (const problem of settings.problems) problems.push({ url, problem });
      next.set(url, { url, name: queueNameOf(url), weight: settings.weight, limit: settings.limit });
    }
    const added = [...next.values()].filter((q) => !this.#members.has(q.url));
    const removed = [...this.#members.values()].filter((q) => !next.has(q.url));
    const changed = [...next.values()].filter((q) => {
      const before = this.#members.get(q.url);
      return before !== undefined && !sameSettings(before, q);
    });
    this.#members = next;
    return { added, removed, changed, unreadable, problems };
  }
}

/** `prefix tenant- and tag workerless=payments`. */
export function describeSelector(selector: QueueSelector): string {
  const parts = [
    ...(selector.prefix !== undefined ? [`prefix ${selector.prefix}`] : []),
    ...(selector.tag !== undefined ? [`tag ${selector.tag.key}=${selector.tag.value}`] : []),
  ];
  return parts.join(' and ');
}

/** Whether the queue's tags carry the selector's tag with its value (keys and values are case-sensitive in SQS). */
export function matches(tag: { readonly key: string; readonly value: string }, tags: Readonly<Record<string, string>>): boolean {
  return Object.hasOwn(tags, tag.key) && tags[tag.key] === tag.value;
}

/** The weight and limits the `workerless:*` tags set; a tag value that cannot be used is a problem, and its default applies. */
export function settingsFromTags(tags: Readonly<Record<string, string>>): { weight: number; limit: QueueLimit; problems: string[] } {
  const problems: string[] = [];
  const read = (key: string, min: number, max: number, integer: boolean): number | undefined => {
    const text = tags[key];
    if (text === undefined) return undefined;
    const n = Number(text.trim());
    if (text.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      problems.push(`tag ${key} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got "${text}"`);
      return undefined;
    }
    return n;
  };
  const weight = read(QUEUE_TAGS.weight, 1, 1000, true) ?? 1;
  const maxConcurrency = read(QUEUE_TAGS.maxConcurrency, 1, 10_000, true);
  const minConcurrency = read(QUEUE_TAGS.minConcurrency, 0, 10_000, true);
  const ratePerSec = read(QUEUE_TAGS.rate, 0.001, 10_000, false);
  const limit: QueueLimit = {
    ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
    ...(minConcurrency !== undefined ? { minConcurrency } : {}),
    ...(ratePerSec !== undefined ? { ratePerSec } : {}),
  };
  return { weight, limit, problems };
}

function sameSettings(a: FoundQueue, b: FoundQueue): boolean {
  return (
    a.weight === b.weight &&
    a.limit.maxConcurrency === b.limit.maxConcurrency &&
    a.limit.minConcurrency === b.limit.minConcurrency &&
    a.limit.ratePerSec === b.limit.ratePerSec
  );
}
