import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueues } from '../../../src/daemon/startup-checks.ts';
import { type QueueLookup } from '../../../src/core/queue.ts';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';
import { type RouteConfig } from '../../../src/dispatch/route.ts';
import { QueueVisibility } from '../../../src/dispatch/queue-visibility.ts';
import { recordingLogger } from '../../support/factories.ts';

const ENV = { AWS_REGION: 'eu-west-1' };
const URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/jobs';

/** A queue whose own VisibilityTimeout is 90 s; counts the GetQueueAttributes calls. */
function lookup() {
  const calls: string[][] = [];
  const fake: QueueLookup = {
    queueUrl: () => Promise.resolve(URL),
    queueAttributes: (_url, names) => {
      calls.push([...names]);
      return Promise.resolve({ QueueArn: 'arn:aws:sqs:eu-west-1:123456789012:jobs', VisibilityTimeout: '90' });
    },
  };
  return { fake, calls };
}

function route(argv: string[]): RouteConfig {
  const cli = collectOptions(['--function', 'fn', '--queues', 'jobs', ...argv], ENV, OPTIONS);
  const r = resolveConfig(cli.raw, ENV);
  assert.ok(r.ok);
  return r.config.routes[0]!;
}

/** The option's path as the daemon takes it: route -> resolved queues -> the timeout each receive states. */
async function stated(argv: string[]) {
  const r = route(argv);
  const { fake, calls } = lookup();
  const queues = await resolveQueues(fake, r.queues.queues, r.visibilityTimeoutSec);
  const atStart = calls.length;
  const visibility = new QueueVisibility(queues, r.visibilityTimeoutSec, { lookup: fake, logger: recordingLogger().logger });
  await visibility.refresh();
  return { resolvedSec: queues[0]!.visibilityTimeoutSec, statedSec: visibility.timeoutSec(queues[0]!), rereads: calls.length - atStart };
}

describe('--visibility-timeout is applied once, where the queues are resolved', () => {
  it("the resolved queue holds it instead of the queue's own, and every receive states it; nothing is re-read", async () => {
    assert.deepEqual(await stated(['--visibility-timeout', '45']), { resolvedSec: 45, statedSec: 45, rereads: 0 });
  });

  it("without it, the queue's own timeout, re-read", async () => {
    assert.deepEqual(await stated([]), { resolvedSec: 90, statedSec: 90, rereads: 1 });
  });
});
