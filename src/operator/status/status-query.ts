/**
 * Which queues /status.json lists: a page of them, in an order that puts the ones worth looking at first. With
 * thousands of queues the whole list (60 buckets each) would be megabytes every 2 s; a page of at most
 * MAX_STATUS_LIMIT keeps each answer small whatever the number of queues, and the summary covers them all.
 */
export type QueueSort = 'busiest' | 'worst' | 'configured';

export interface StatusQuery {
  readonly sort: QueueSort;
  readonly offset: number;
  readonly limit: number;
}

/** Queues per page when the request names no limit. */
export const DEFAULT_STATUS_LIMIT = 50;
/** The most queues one answer lists: about 5 KB each (60 buckets), so an answer stays near 500 KB. */
export const MAX_STATUS_LIMIT = 100;

export const DEFAULT_STATUS_QUERY: StatusQuery = Object.freeze({ sort: 'busiest', offset: 0, limit: DEFAULT_STATUS_LIMIT });

const SORTS: ReadonlySet<string> = new Set<QueueSort>(['busiest', 'worst', 'configured']);

/**
 * `?sort=busiest|worst|configured&offset=N&limit=N`. A value out of range is brought into it (a limit above the
 * maximum gives the maximum) and one that is not a number or a known order is left at its default: the page
 * and scripts get an answer, never an error, and never more than MAX_STATUS_LIMIT queues.
 */
export function parseStatusQuery(params: URLSearchParams): StatusQuery {
  const sort = params.get('sort') ?? '';
  const offset = integer(params.get('offset'));
  const limit = integer(params.get('limit'));
  return {
    sort: SORTS.has(sort) ? (sort as QueueSort) : DEFAULT_STATUS_QUERY.sort,
    offset: offset === undefined ? 0 : Math.max(0, offset),
    limit: limit === undefined ? DEFAULT_STATUS_LIMIT : Math.min(MAX_STATUS_LIMIT, Math.max(1, limit)),
  };
}

function integer(text: string | null): number | undefined {
  if (text === null || !/^-?\d{1,15}$/.test(text)) return undefined;
  return Number(text);
}
