// What the fault tests assert by message id: every run of the function per message, from the test Lambda
// endpoint's own records (it sees an invocation whatever the daemon later hears about it: a reset after the
// request was sent still ran). Two runs of one message that overlap in time are the duplicate in flight that
// the visibility lease and the invoke retry policy exist to prevent.
import type { InvocationRecord, InvocationStatus, LambdaEndpoint } from './lambda-endpoint/server.ts';

export interface MessageRun {
  messageId: string;
  requestId: string;
  /** Epoch ms: the endpoint accepted the Invoke / the handler finished (undefined while running). */
  startedAt: number;
  endedAt: number | undefined;
  status: InvocationStatus;
  /** ApproximateReceiveCount of the record in this run's event. */
  receiveCount: number;
}

interface SqsRecord {
  messageId: string;
  eventSourceARN: string;
  attributes?: Record<string, string>;
}

export const sqsRecords = (inv: InvocationRecord): SqsRecord[] => (inv.payload as { Records?: SqsRecord[] } | null)?.Records ?? [];

/** The runs of every message of one queue, in start order, keyed by message id. */
export function runsByMessage(endpoint: LambdaEndpoint, queueArn: string): Map<string, MessageRun[]> {
  const runs = new Map<string, MessageRun[]>();
  for (const inv of endpoint.invocations) {
    for (const r of sqsRecords(inv)) {
      if (r.eventSourceARN !== queueArn) continue;
      const list = runs.get(r.messageId) ?? [];
      list.push({
        messageId: r.messageId,
        requestId: inv.requestId,
        startedAt: inv.startedAt,
        endedAt: inv.endedAt,
        status: inv.status,
        receiveCount: Number(r.attributes?.['ApproximateReceiveCount'] ?? 0),
      });
      runs.set(r.messageId, list);
    }
  }
  for (const list of runs.values()) list.sort((a, b) => a.startedAt - b.startedAt);
  return runs;
}

/** Message ids of one queue with at least one successful run. */
export function succeededIds(endpoint: LambdaEndpoint, queueArn: string): Set<string> {
  const ids = new Set<string>();
  for (const [id, list] of runsByMessage(endpoint, queueArn)) if (list.some((r) => r.status === 'success')) ids.add(id);
  return ids;
}

/** Every pair of runs of one message that were running at the same time, described for an assertion message. */
export function overlappingRuns(runs: ReadonlyMap<string, readonly MessageRun[]>): string[] {
  const found: string[] = [];
  for (const [id, list] of runs) {
    for (let i = 1; i < list.length; i++) {
      const previous = list[i - 1]!;
      const run = list[i]!;
      if (previous.endedAt === undefined || run.startedAt < previous.endedAt) {
        found.push(
          `${id}: run ${i + 1} started at ${run.startedAt}, run ${i} (started ${previous.startedAt}) ended ${previous.endedAt ?? 'never'}`,
        );
      }
    }
  }
  return found;
}

/** A short summary for logs and failure messages: id -> runs as [start offset ms, duration ms, status, receive count]. */
export function describeRuns(runs: ReadonlyMap<string, readonly MessageRun[]>, t0: number): string {
  return JSON.stringify(
    Object.fromEntries(
      [...runs].map(([id, list]) => [
        id,
        list.map((r) => [r.startedAt - t0, r.endedAt === undefined ? null : r.endedAt - r.startedAt, r.status, r.receiveCount]),
      ]),
    ),
  );
}
