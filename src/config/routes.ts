import type { RouteConfig } from '../dispatch/route.ts';
import type { RawValue } from './cli.ts';
import { resolveDeliveryConfig } from './delivery-options.ts';
import { addDefaults, type OptionsWithDefaults } from './with-defaults.ts';
import { OPTIONS, ROUTE_GROUPS, flagOf, type Flag, type OptionDef } from './options.ts';
import { resolveBatchWindowMs } from './batch-window-rules.ts';
import { resolveDurable } from './durable-rules.ts';
import { parseQueueList, parseQueueTag } from './queue-list.ts';
import type { QueueSelector } from '../receive/queue-set.ts';
import type { QueueList } from '../receive/queue-order.ts';
import { queueNameOf } from '../core/queue.ts';
import { parseTenantSource } from '../invoke/tenant-split.ts';

/** Route options that name queues (`ownToRoute` in the table): each route gives its own, never inherited from outside `routes`. */
const OWN_TO_ROUTE: ReadonlySet<Flag> = new Set(
  (OPTIONS as readonly OptionDef[])
    .filter((d) => d.ownToRoute === true)
    // Reported in this order: the options that hold the queues first, then the name=N lists.
    .sort((a, b) => Number(a.perQueue !== undefined) - Number(b.perQueue !== undefined))
    .map((d) => d.flag as Flag),
);

const ROUTE_DEFS: ReadonlyMap<string, OptionDef> = new Map(
  (OPTIONS as readonly OptionDef[]).filter((d) => ROUTE_GROUPS.includes(d.group)).map((d) => [d.flag, d]),
);

/** The worker loops of a run: the routes' --concurrency together (sockets, file descriptors and heap scale with it). */
export function totalLoops(routes: readonly RouteConfig[]): number {
  return routes.reduce((sum, route) => sum + route.concurrency, 0);
}

/** Every route's queues, counted once per route (a metric series is per function and queue). */
export function totalQueues(routes: readonly RouteConfig[]): number {
  return routes.reduce((sum, route) => sum + route.queues.queues.length, 0);
}

/**
 * The routes of a configuration: the `routes` list when given, else one route from the flags when --queues is
 * given, else none (Temporal spillover only). Problems go to `r` (with where each value came from); a route
 * with problems is left out.
 */
export function resolveRoutes(r: OptionsWithDefaults): RouteConfig[] {
  const list = r.structured('routes');
  if (list === undefined) {
    if (r.has('routes')) return []; // invalid JSON, reported by structured()
    if (!namesQueues(r)) {
      r.reject('function', 'is only used with --queues (none given)');
      resolveRoute(r); // the route options given without queues are still checked
      return [];
    }
    const route = resolveRoute(r);
    return route ? [route] : [];
  }
  for (const flag of OWN_TO_ROUTE) {
    // has(): an empty value (WORKERLESS_QUEUES= in a compose file) is unset, not a conflict.
    if (!r.has(flag)) continue;
    const origin = r.origin(flag);
    r.problem(`--${flag}${origin === `--${flag}` ? '' : ` (from ${origin})`} cannot be used with routes: give it in each route`);
  }
  if (!Array.isArray(list.value) || list.value.length === 0) {
    r.problem(
      `routes must be a non-empty list of mappings with function and queues, got ${JSON.stringify(list.value)} (from ${list.origin})`,
    );
    return [];
  }
  const inherited = new Map([...r.raw].filter(([flag]) => ROUTE_DEFS.has(flag) && !OWN_TO_ROUTE.has(flag as Flag)));
  const routes: { index: number; route: RouteConfig }[] = [];
  list.value.forEach((entry: unknown, index) => {
    const own = routeOptions(entry, index, list.origin, r);
    if (own === undefined) return;
    const reader = addDefaults(new Map([...inherited, ...own]));
    const route = resolveRoute(reader, placeOf(list.origin, `routes[${index}]`));
    for (const p of reader.problems) r.problem(p);
    if (route) routes.push({ index, route });
  });
  checkDistinct(routes, r);
  return routes.map((r) => r.route);
}

/** `routes[1].concurrency in wl.yaml` for `routes in wl.yaml`; `routes[1].concurrency in WORKERLESS_ROUTES` for JSON. */
function placeOf(listOrigin: string, path: string): string {
  return listOrigin.startsWith('routes in ') ? `${path}${listOrigin.slice('routes'.length)}` : `${path} in ${listOrigin}`;
}

/** One route's own options as raw values, with origins such as `routes[1].concurrency in wl.yaml`. */
function routeOptions(entry: unknown, index: number, listOrigin: string, r: OptionsWithDefaults): Map<string, RawValue> | undefined {
  const where = placeOf(listOrigin, `routes[${index}]`);
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    r.problem(`${where} must be a mapping of route options (function, queues, concurrency, ...), got ${JSON.stringify(entry)}`);
    return undefined;
  }
  const own = new Map<string, RawValue>();
  for (const [key, value] of Object.entries(entry)) {
    const flag = flagOf(key);
    const def = ROUTE_DEFS.get(flag);
    if (def === undefined) {
      const known = (OPTIONS as readonly OptionDef[]).some((d) => d.flag === flag);
      r.problem(
        known
          ? `${where}: ${key} applies to the whole daemon; set it outside routes`
          : `${where}: unknown route option "${key}" (route options: ${[...ROUTE_DEFS.values()].map((d) => d.flag).join(', ')})`,
      );
      continue;
    }
    own.set(flag, { value, origin: placeOf(listOrigin, `routes[${index}].${def.flag}`) });
  }
  return own;
}

/**
 * The route options read by `r`; undefined when --function or --queues is missing or invalid. `where` names a
 * route of the list (`routes[1] in wl.yaml`); without it the route comes from the flags.
 */
function resolveRoute(r: OptionsWithDefaults, where?: string): RouteConfig | undefined {
  const functionName = r.read('function');
  const queuesText = r.read('queues');
  let queues: QueueList | undefined;
  if (queuesText !== undefined) {
    const origin = r.origin('queues');
    const parsed = parseQueueList(queuesText, origin === '--queues' ? '--queues' : `--queues (from ${origin})`);
    for (const p of parsed.problems) r.problem(p);
    queues = parsed.list;
  }
  const discovery = resolveDiscovery(r);
  if (discovery !== undefined) {
    if (r.has('queues')) r.problem('--queues cannot be used with --queues-prefix or --queues-tag: list the queues, or find them');
    // Found queues are drawn by weight: 1 each unless a workerless:weight tag says otherwise (equal weights: random).
    else queues = { mode: 'weighted', queues: [] };
  }
  if (where !== undefined) {
    if (!r.has('function')) r.problem(`${where} needs a function`);
    if (!namesQueues(r)) r.problem(`${where} needs queues`);
  } else if (namesQueues(r) && !r.has('function')) r.problem('--function is required with --queues (env WORKERLESS_FUNCTION)');
  const concurrency = r.read('concurrency');
  const batchSize = r.read('batch-size');
  // Found queues are not known yet: queue-options may name any queue.
  const delivery = resolveDeliveryConfig(r, discovery === undefined ? queues : undefined, concurrency);
  const tenantText = r.read('tenant-id-from');
  const settings: Omit<RouteConfig, 'durable'> = {
    functionName: functionName ?? '',
    queues: queues ?? { mode: 'strict', queues: [] },
    discovery,
    queuesRefreshMs: r.read('queues-refresh'),
    concurrency,
    pollForSec: r.read('poll-for'),
    sleepSec: r.read('sleep'),
    batchSize,
    batchWindowMs: resolveBatchWindowMs(r, batchSize, queues?.queues.map((q) => q.ref) ?? []),
    visibilityTimeoutSec: r.read('visibility-timeout'),
    visibilityRefreshMs: r.read('visibility-refresh'),
    backlogGauges: r.read('backlog-gauges'),
    deleteMode: r.read('delete'),
    retryBackoff: delivery.retryBackoff,
    queueOptions: delivery.queueOptions,
    adaptiveConcurrency: delivery.adaptiveConcurrency,
    tenantIdFrom: tenantText === undefined ? undefined : parseTenantSource(tenantText),
    failureDestination: delivery.failureDestination,
    maxAttempts: delivery.maxAttempts,
  };
  // After the others: its rules are about their values, which are reported first when invalid.
  const route: RouteConfig = { ...settings, durable: resolveDurable(r, settings) };
  return functionName !== undefined && queues !== undefined ? Object.freeze(route) : undefined;
}

/** Whether the route names its queues: listed (--queues) or found (--queues-prefix, --queues-tag). */
function namesQueues(r: OptionsWithDefaults): boolean {
  return r.has('queues') || r.has('queues-prefix') || r.has('queues-tag');
}

/** --queues-prefix and --queues-tag; undefined when neither is given (or the one given is invalid, reported by read()). */
function resolveDiscovery(r: OptionsWithDefaults): QueueSelector | undefined {
  if (!r.has('queues-prefix') && !r.has('queues-tag')) return undefined;
  const prefix = r.read('queues-prefix');
  const tagText = r.read('queues-tag');
  if (prefix === undefined && tagText === undefined) return undefined;
  return { prefix, tag: tagText === undefined ? undefined : parseQueueTag(tagText) };
}

/**
 * One route per function and per queue: two pools on one queue would split its messages at random, and two
 * routes of one function would share its metrics and concurrency gauges.
 */
function checkDistinct(routes: readonly { index: number; route: RouteConfig }[], r: OptionsWithDefaults): void {
  const byFunction = new Map<string, number>();
  const byQueue = new Map<string, number>();
  for (const { index: i, route } of routes) {
    const fn = byFunction.get(route.functionName);
    if (fn !== undefined) r.problem(`routes[${fn}] and routes[${i}] both invoke ${route.functionName}: give one route all of its queues`);
    else byFunction.set(route.functionName, i);
    for (const q of route.queues.queues) {
      const name = queueNameOf(q.ref);
      const other = byQueue.get(name);
      if (other !== undefined && other !== i)
        r.problem(`queue ${name} is in routes[${other}] and routes[${i}]: a queue belongs to one route`);
      else byQueue.set(name, i);
    }
  }
}
