import { LIST_QUEUES_MAX_PAGES, type ListedQueues } from '../core/queue.ts';

/** One ListQueues answer: its URLs and its NextToken (undefined or '' on the last page). */
export interface ListQueuesPage {
  readonly urls: readonly string[];
  readonly nextToken: string | undefined;
}

/**
 * Follows ListQueues' NextToken from the first page (`page(undefined)`) to the last, for both clients. A token is
 * never followed twice, and at most LIST_QUEUES_MAX_PAGES pages are read: a server that repeats its NextToken or
 * never stops giving one would otherwise be asked for ever, holding every URL it answered. Then the URLs read so
 * far are the listing, and `stopped` says why it ended early.
 */
export async function listQueuePages(page: (token: string | undefined) => Promise<ListQueuesPage>): Promise<ListedQueues> {
  const urls = new Set<string>();
  const tokens = new Set<string>();
  let token: string | undefined;
  for (let pages = 1; ; pages++) {
    const out = await page(token);
    for (const url of out.urls) urls.add(url);
    token = out.nextToken !== undefined && out.nextToken !== '' ? out.nextToken : undefined;
    if (token === undefined) return { urls: [...urls] };
    if (tokens.has(token))
      return { urls: [...urls], stopped: `ListQueues gave NextToken ${JSON.stringify(token)} again after ${pages} pages` };
    if (pages >= LIST_QUEUES_MAX_PAGES) return { urls: [...urls], stopped: `ListQueues still had a NextToken after ${pages} pages` };
    tokens.add(token);
  }
}
