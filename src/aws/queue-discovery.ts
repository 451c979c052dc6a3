import type { Logger } from 'pino';
import { callErrorOf, firstLine, StartupError, withDeadline } from '../core/errors.ts';
import { CALL_DEADLINE_MS, type QueueDirectory, type QueueLookup, type ResolvedQueue } from '../core/queue.ts';
import { FUNCTION_METRICS } from '../core/telemetry/metric-names.ts';
import { noopMetrics, type MetricsSink } from '../core/telemetry/metrics-sink.ts';
import type { QueueLimit } from '../receive/queue-limits.ts';
import { describeSelector, QueueSet, type FoundQueue, type QueueSelector, type TagAnswer } from '../receive/queue-set.ts';
import { sleep } from '../util/backoff.ts';
import { QueueResolveError, resolveQueue } from './resolve-queues.ts';
import { eachBounded } from '../util/each-bounded.ts';

/**
 * Every queue's tags are read again every this many refreshes (a new queue's at once): at 10,000 queues and the
 * default --queues-refresh of 1 min that is 1,000 ListQueueTags a minute, 0.1 a queue, where reading them on
 * every refresh would be one a queue (a third of the idle polls again). docs/delivery.md says what it costs.
 */
export const TAGS_EVERY_REFRESHES = 10;

/**
 * ListQueueTags and GetQueueAttributes on their way at once while a refresh reads new queues: enough to read
 * 10,000 in seconds, few enough to leave the sockets to the receives.
 */
const READS_AT_ONCE = 16;

/** Names a log line lists; the counts are always whole. */
const NAMES_LOGGED = 20;

/** Queues a failure's log line names as examples, beside the count. */
const EXAMPLES_LOGGED = 5;

/** What a refresh found: the route's queues, resolved, with the limits their tags set, by name. */
export interface Discovered {
  readonly queues: readonly ResolvedQueue[];
  readonly tagLimits: ReadonlyMap<string, QueueLimit>;
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Whether anything changed: queues joined or left, or a queue's weight or limits. */
  readonly changed: boolean;
}

/** Who is told when the route's queues change: the route's Dispatcher (setQueues). */
export interface QueueTarget {
  setQueues(queues: readonly ResolvedQueue[], tagLimits: ReadonlyMap<string, QueueLimit>): void;
  /**
   * The queues that joined at a refresh once running, after setQueues: the start-up checked the queues it found,
   * these are checked here (src/daemon/startup-checks.ts, checkFoundQueues).
   */
  joined?(queues: readonly ResolvedQueue[]): void;
}

export interface QueueDiscoveryDeps {
  readonly directory: QueueDirectory;
  readonly lookup: QueueLookup;
  readonly logger: Logger;
  readonly functionName: string;
  /** --visibility-timeout; undefined: each queue's own. */
  readonly visibilityTimeoutSec: number | undefined;
  /** A monotonic clock. */
  readonly now: () => number;
}

/**
 * The executor of a route's found queues (the policy is src/receive/queue-set.ts): every --queues-refresh, lists
 * the queues under the prefix (ListQueues, every page), reads the tags the policy asks for (ListQueueTags),
 * resolves the queues that joined (GetQueueAttributes: ARN, FIFO, visibility timeout, redrive policy) and tells
 * the Dispatcher what changed, with a log line and a count. A queue whose tags or attributes cannot be read is
 * logged (the tags' failures one line a refresh, with a count) and skipped, and tried again next refresh; a failed ListQueues keeps the queues as they were. Once
 * running, nothing here is fatal.
 */
export class QueueDiscovery {
  readonly #selector: QueueSelector;
  readonly #refreshMs: number;
  readonly #deps: QueueDiscoveryDeps;
  readonly #set: QueueSet;
  /** The route's queues now, resolved, by URL. */
  #resolved = new Map<string, ResolvedQueue>();

  constructor(selector: QueueSelector, refreshMs: number, deps: QueueDiscoveryDeps) {
    this.#selector = selector;
    this.#refreshMs = refreshMs;
    this.#deps = deps;
    this.#set = new QueueSet(selector, refreshMs * TAGS_EVERY_REFRESHES);
  }

  /** The selector in words, for logs and `check`: `prefix tenant- and tag workerless=payments`. */
  get described(): string {
    return describeSelector(this.#selector);
  }

  /** One refresh. Throws (a classified AwsCallError) only when ListQueues failed. */
  async refresh(signal?: AbortSignal): Promise<Discovered> {
    const { directory, logger } = this.#deps;
    const { urls: listed, stopped } = await directory.listQueues(this.#selector.prefix, signal);
    // A listing cut short (a repeated NextToken, the page bound) is used as far as it went, with one line a refresh.
    if (stopped !== undefined)
      logger.warn(
        { selector: this.described, prefix: this.#selector.prefix ?? '', queues: listed.length, reason: stopped },
        'ListQueues stopped before its last page; the queues it listed are used',
      );
    const toRead = this.#set.tagsToRead(listed, this.#deps.now());
    const tags = new Map<string, TagAnswer>();
    const unreadTags: { readonly url: string; readonly error: { readonly code: string; readonly message: string } }[] = [];
    await eachBounded(toRead, READS_AT_ONCE, async (url) => {
      try {
        tags.set(url, await directory.queueTags(url, signal));
      } catch (err) {
        tags.set(url, undefined);
        if (!signal?.aborted) unreadTags.push({ url, error: callErrorOf(err) });
      }
    });
    // One line a refresh, not one a queue: when tags cannot be read at all (a policy without sqs:ListQueueTags),
    // every queue fails at every refresh, and 500 queues were 1,000 lines in 12 s.
    if (unreadTags.length > 0) {
      const codes: Record<string, number> = {};
      for (const { error } of unreadTags) codes[error.code] = (codes[error.code] ?? 0) + 1;
      const first = unreadTags[0]!.error;
      logger.warn(
        {
          selector: this.described,
          operation: 'ListQueueTags',
          count: unreadTags.length,
          queues: unreadTags.slice(0, EXAMPLES_LOGGED).map((u) => nameOf(u.url)),
          codes,
          err: { code: first.code, message: firstLine(first.message) },
        },
        "found queues' tags cannot be read; those queues are skipped until the next refresh",
      );
    }
    const change = this.#set.update(listed, tags, this.#deps.now());
    for (const { url, problem } of change.problems) logger.warn({ queue: nameOf(url), problem }, 'queue tag ignored; its default applies');
    const members = this.#set.members;
    const next = new Map<string, ResolvedQueue>();
    const changed = new Set(change.changed.map((q) => q.url));
    await eachBounded(members, READS_AT_ONCE, async (found) => {
      const before = this.#resolved.get(found.url);
      if (before !== undefined) {
        next.set(found.url, changed.has(found.url) ? { ...before, weight: found.weight } : before);
        return;
      }
      try {
        // The URL is known: one GetQueueAttributes, under the deadline of every other SQS call.
        const spec = { ref: found.url, weight: found.weight };
        next.set(
          found.url,
          await resolveQueue(this.#deps.lookup, spec, this.#deps.visibilityTimeoutSec, withDeadline(CALL_DEADLINE_MS, signal)),
        );
      } catch (err) {
        if (!signal?.aborted) logSkipped(logger, found.url, 'GetQueueAttributes', err);
      }
    });
    const added = [...next.values()].filter((q) => !this.#resolved.has(q.url)).map((q) => q.name);
    const removed = [...this.#resolved.values()].filter((q) => !next.has(q.url)).map((q) => q.name);
    this.#resolved = next;
    const byUrl = new Map(members.map((m) => [m.url, m]));
    const queues = [...next.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const weightsChanged = change.changed.some((q) => next.has(q.url));
    return { queues, tagLimits: tagLimitsOf(queues, byUrl), added, removed, changed: added.length + removed.length > 0 || weightsChanged };
  }

  /**
   * Refreshes every --queues-refresh until `stop` aborts, telling `target` when the queues changed. The first
   * refresh is the start-up's (src/daemon/startup-checks.ts), so this starts with a wait.
   */
  async run(target: QueueTarget, stop: AbortSignal, metrics: MetricsSink = noopMetrics): Promise<void> {
    const { logger } = this.#deps;
    while (!stop.aborted) {
      await sleep(this.#refreshMs, stop);
      if (stop.aborted) return;
      let found: Discovered;
      try {
        found = await this.refresh(stop);
      } catch (err) {
        if (stop.aborted) return;
        const e = callErrorOf(err);
        logger.warn(
          { selector: this.described, err: { code: e.code, message: firstLine(e.message) } },
          'ListQueues failed; the route keeps its queues until the next refresh',
        );
        continue;
      }
      if (!found.changed) continue;
      target.setQueues(found.queues, found.tagLimits);
      this.report(found, metrics);
      if (found.added.length > 0) {
        const added = new Set(found.added);
        target.joined?.(found.queues.filter((q) => added.has(q.name)));
      }
    }
  }

  /** The log line and the counts of a change; `atStart`: the queues the start-up found (all counted as added). */
  report(found: Discovered, metrics: MetricsSink = noopMetrics, atStart = false): void {
    const dims = (change: string) => ({ Function: this.#deps.functionName, Change: change });
    if (found.added.length > 0)
      metrics.record({
        name: FUNCTION_METRICS.queueSetChanges.cloudwatch,
        unit: 'Count',
        value: found.added.length,
        dimensions: dims('added'),
      });
    if (found.removed.length > 0)
      metrics.record({
        name: FUNCTION_METRICS.queueSetChanges.cloudwatch,
        unit: 'Count',
        value: found.removed.length,
        dimensions: dims('removed'),
      });
    this.#deps.logger.info(
      {
        selector: this.described,
        queues: found.queues.length,
        addedCount: found.added.length,
        removedCount: found.removed.length,
        added: found.added.slice(0, NAMES_LOGGED),
        removed: found.removed.slice(0, NAMES_LOGGED),
      },
      atStart ? 'queues found' : "the route's queues changed; queues that left settle what they have in flight",
    );
  }
}

/**
 * What a selector matches now, without resolving the queues: ListQueues, then every listed queue's tags when
 * there is a tag to match (`workerless check`). `unreadable`: queues whose tags could not be read. Throws (a
 * classified AwsCallError) when ListQueues failed.
 */
export async function findQueues(
  directory: QueueDirectory,
  selector: QueueSelector,
  signal?: AbortSignal,
): Promise<{ found: FoundQueue[]; unreadable: string[] }> {
  const set = new QueueSet(selector, 0);
  const { urls: listed } = await directory.listQueues(selector.prefix, signal);
  const tags = new Map<string, TagAnswer>();
  await eachBounded(set.tagsToRead(listed, 0), READS_AT_ONCE, async (url) => {
    tags.set(url, await directory.queueTags(url, signal).catch(() => undefined));
  });
  const change = set.update(listed, tags, 0);
  return { found: set.members, unreadable: change.unreadable.map(nameOf) };
}

function tagLimitsOf(queues: readonly ResolvedQueue[], byUrl: ReadonlyMap<string, FoundQueue>): Map<string, QueueLimit> {
  const limits = new Map<string, QueueLimit>();
  for (const q of queues) {
    const limit = byUrl.get(q.url)?.limit;
    if (limit !== undefined && Object.keys(limit).length > 0) limits.set(q.name, limit);
  }
  return limits;
}

function nameOf(url: string): string {
  return url.replace(/\/+$/, '').split('/').pop() ?? url;
}

function logSkipped(logger: Logger, url: string, operation: string, err: unknown): void {
  const e =
    err instanceof QueueResolveError
      ? err.error
      : err instanceof StartupError
        ? { code: 'UnusableAttributes', message: err.message }
        : callErrorOf(err);
  logger.warn(
    { queue: nameOf(url), operation, err: { code: e.code, message: firstLine(e.message) } },
    'a found queue cannot be read; skipped until the next refresh',
  );
}
