// "Cannot reach" names the endpoint that was tried, in one line: at start-up (resolveQueues, checkFunction) and
// in `workerless check`. The SQS endpoint tried is the one the clients route the call to: a configured endpoint,
// else the queue URL's host, else (GetQueueUrl) the regional endpoint.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatReport, runChecks } from '../../../src/check/check.ts';
import { type CheckPorts } from '../../../src/check/check-ports.ts';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';
import { checkFunction } from '../../../src/daemon/function-check.ts';
import { resolveQueue } from '../../../src/aws/resolve-queues.ts';
import { StartupError } from '../../../src/core/errors.ts';
import { resolveQueues } from '../../../src/daemon/startup-checks.ts';
import { type QueueLookup } from '../../../src/core/queue.ts';
import type { InvokeResult } from '../../../src/core/function-invoker.ts';

const HINT = '(check --endpoint-url / --region and the network)';
const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
/** A lookup whose every call fails as an unreachable endpoint does. */
const unreachable: QueueLookup = {
  queueUrl: () => Promise.reject(refused),
  queueAttributes: () => Promise.reject(refused),
};
/** A DryRun whose host does not resolve: nothing was sent. */
const notFound = async (): Promise<InvokeResult> => ({
  ok: false,
  error: { kind: 'not-sent', code: 'ENOTFOUND', message: 'getaddrinfo ENOTFOUND' },
});
const unresolved = Object.assign(new Error('getaddrinfo ENOTFOUND lambda.us-east-1.api.aws'), { code: 'ENOTFOUND' });
const regional = { url: new URL('https://sqs-fips.us-gov-west-1.amazonaws.com'), custom: false };
const local = { url: new URL('http://127.0.0.1:4566'), custom: true };

describe('unreachable endpoints are named', () => {
  it('at start-up, for a queue: the endpoint its call went to', async () => {
    const message = async (ref: string, endpoint: typeof regional) =>
      resolveQueues(unreachable, [{ ref, weight: 1 }], undefined, undefined, endpoint).then(
        () => assert.fail('resolved'),
        (err: unknown) => (assert.ok(err instanceof StartupError), err.message),
      );
    assert.equal(
      await message('jobs', regional),
      `queue jobs: cannot reach SQS at https://sqs-fips.us-gov-west-1.amazonaws.com: ECONNREFUSED ${HINT}`,
    );
    // A queue URL: the SDK sends the call to its host unless an endpoint is configured.
    const url = 'https://sqs.us-gov-east-1.amazonaws.com/123456789012/jobs';
    assert.equal(
      await message(url, regional),
      `queue jobs: cannot reach SQS at https://sqs.us-gov-east-1.amazonaws.com: ECONNREFUSED ${HINT}`,
    );
    assert.equal(await message(url, local), `queue jobs: cannot reach SQS at http://127.0.0.1:4566: ECONNREFUSED ${HINT}`);
  });

  it('at start-up, for a function: the Lambda endpoint', async () => {
    const invoker = { invoke: () => Promise.reject(new Error('unused')), dryRun: notFound };
    await assert.rejects(checkFunction(invoker, 'worker', undefined, 'function', 'https://lambda.eusc-de-east-1.amazonaws.eu'), {
      message: `function worker: cannot reach Lambda at https://lambda.eusc-de-east-1.amazonaws.eu: ENOTFOUND ${HINT}`,
    });
  });

  it('in workerless check: one line per service, each naming its endpoint', async () => {
    const env = { AWS_REGION: 'us-east-1' };
    const r = resolveConfig(collectOptions(['--function', 'f', '--queues', 'a,b'], env, OPTIONS).raw, env);
    assert.ok(r.ok);
    const ports: CheckPorts = {
      findQueues: async () => ({ found: [], unreadable: [] }),
      resolveQueue: (spec) => resolveQueue(unreachable, spec, undefined, undefined, regional),
      dryRun: notFound,
      // Lambda's reads fail as its DryRun did, which already says so: no line of their own.
      functionConfiguration: () => Promise.reject(unresolved),
      reservedConcurrency: () => Promise.reject(unresolved),
      putCheckDatum: () => Promise.reject(refused),
      connectTemporal: () => Promise.reject(new Error('unused')),
      probeTcp: async () => undefined,
      endpoints: { lambda: 'https://lambda.us-east-1.api.aws', cloudwatch: 'https://monitoring.us-east-1.api.aws' },
    };
    assert.deepEqual(
      formatReport(await runChecks(r.config, ports)).filter((l) => !l.startsWith('note')),
      [
        `FAIL queues a, b: cannot reach SQS at https://sqs-fips.us-gov-west-1.amazonaws.com: ECONNREFUSED ${HINT}`,
        `FAIL function f: cannot reach Lambda at https://lambda.us-east-1.api.aws: ENOTFOUND ${HINT}`,
        `FAIL metrics Workerless-default: cannot reach CloudWatch at https://monitoring.us-east-1.api.aws: ECONNREFUSED ${HINT}`,
      ],
    );
  });
});
