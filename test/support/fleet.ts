// What the fleet's integration tests (test/integration/alone/fleet*.test.ts) read from the test Lambda endpoint and
// from each replica: the bodies invoked, a replica's page and /status.json's fleet, and the messages run twice
// while in flight.
import assert from 'node:assert/strict';
import { get } from './http.ts';
import type { LambdaEndpoint } from './lambda-endpoint/server.ts';

/** The bodies the function was invoked with (those starting with `tag`), by body, counted. */
export function invokedBodies(endpoint: LambdaEndpoint, tag = ''): Map<string, number> {
  const counts = new Map<string, number>();
  for (const inv of endpoint.invocations) {
    for (const r of (inv.payload as { Records?: { body?: string }[] } | null)?.Records ?? []) {
      if (r.body?.startsWith(tag)) counts.set(r.body, (counts.get(r.body) ?? 0) + 1);
    }
  }
  return counts;
}

/** A replica's page, asked again when a scrape misses its 2 s on two loaded cores. */
export async function fromReplica(port: number, path: string): Promise<string> {
  for (let tries = 0; tries < 5; tries++) {
    const answer = await get(`http://127.0.0.1:${port}`, path);
    if (answer !== undefined) return answer.body;
  }
  assert.fail(`the replica on port ${port} answers ${path}`);
}

export interface FleetView {
  readonly mode: string;
  readonly members: string[];
  readonly owned: number;
  readonly queues: number;
  /** Queues some member advertises as busy. */
  readonly busy: number;
  readonly share: number;
  readonly concurrency: number;
}
export const fleetOf = async (port: number): Promise<FleetView> =>
  (JSON.parse(await fromReplica(port, '/status.json')) as { fleet: FleetView }).fleet;

/** Bodies whose invocations overlapped in time: a message run twice while it was still in flight. */
export function overlapping(endpoint: LambdaEndpoint): string[] {
  const spans = new Map<string, { start: number; end: number }[]>();
  for (const inv of endpoint.invocations) {
    for (const r of (inv.payload as { Records?: { body?: string }[] } | null)?.Records ?? []) {
      if (r.body === undefined) continue;
      const list = spans.get(r.body) ?? [];
      list.push({ start: inv.startedAt, end: inv.endedAt ?? Infinity });
      spans.set(r.body, list);
    }
  }
  return [...spans]
    .filter(([, list]) => list.some((a, i) => list.some((b, j) => i !== j && a.start < b.end && b.start < a.end)))
    .map(([body]) => body);
}
