// The idle queues the many-queue benchmarks share (bench/many-queues.ts, bench/fleet.ts) on a real SQS server:
// <prefix>-00000, <prefix>-00001, ... found again by ListQueues and created only when missing, so every run after
// the first, and every smaller size, reuses them (ElasticMQ keeps queues in memory: a restart loses them).
import { CreateQueueCommand, ListQueuesCommand } from '@aws-sdk/client-sqs';
import { sqsClient } from '../../test/support/aws.ts';
import type { QueueRef } from '../idle.ts';

export interface QueuePoolOptions {
  /** The SQS server's endpoint. */
  readonly endpoint: string;
  /** The queues' name prefix (before `-00000`). */
  readonly prefix: string;
  readonly count: number;
  /** CreateQueue calls in flight at once. */
  readonly createBatch: number;
}

/**
 * <prefix>-00000 .. <prefix>-(count-1): those ListQueues finds are reused, the rest created, `createBatch` CreateQueue
 * calls at a time (10,000 on ElasticMQ: about 40 s; found again: about 1 s).
 */
export async function ensureQueues(o: QueuePoolOptions): Promise<{ queues: QueueRef[]; created: number }> {
  const sqs = sqsClient(o.endpoint);
  try {
    const found = new Map<string, string>();
    let token: string | undefined;
    do {
      const page = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: `${o.prefix}-`, MaxResults: 1000, NextToken: token }));
      for (const url of page.QueueUrls ?? []) found.set(url.slice(url.lastIndexOf('/') + 1), url);
      token = page.NextToken;
    } while (token !== undefined);
    const names = Array.from({ length: o.count }, (_, i) => `${o.prefix}-${String(i).padStart(5, '0')}`);
    const missing = names.filter((name) => !found.has(name));
    for (let i = 0; i < missing.length; i += o.createBatch) {
      const batch = missing.slice(i, i + o.createBatch);
      const created = await Promise.all(batch.map((name) => sqs.send(new CreateQueueCommand({ QueueName: name }))));
      created.forEach((r, k) => found.set(batch[k]!, r.QueueUrl!));
    }
    return { queues: names.map((name) => ({ name, url: found.get(name)! })), created: missing.length };
  } finally {
    sqs.destroy();
  }
}
