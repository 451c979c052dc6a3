// One reading of a queue that could not be resolved (src/check/queue-resolve.ts) for `workerless check` and the
// daemon's start-up: the start-up's StartupError says the line that check prints after FAIL.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueue } from '../../../src/aws/resolve-queues.ts';
import { formatReport, runChecks } from '../../../src/check/check.ts';
import type { CheckPorts } from '../../../src/check/check-ports.ts';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';
import { AwsCallError, StartupError, type ClassifiedError } from '../../../src/core/errors.ts';
import type { QueueLookup } from '../../../src/core/queue.ts';
import { resolveQueues } from '../../../src/daemon/startup-checks.ts';
import { ok } from '../../support/factories.ts';

const SQS = { url: new URL('https://sqs.us-east-1.amazonaws.com'), custom: true };
const HINT = '(check --endpoint-url / --region and the network)';
const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/1/jobs';

const refusing = (operation: 'GetQueueUrl' | 'GetQueueAttributes', error: ClassifiedError): QueueLookup => ({
  queueUrl: async () => (operation === 'GetQueueUrl' ? Promise.reject(new AwsCallError(operation, error)) : QUEUE_URL),
  queueAttributes: async () => Promise.reject(new AwsCallError('GetQueueAttributes', error)),
});

const cases: { answer: string; lookup: QueueLookup; line: string }[] = [
  {
    answer: 'missing',
    lookup: refusing('GetQueueUrl', { kind: 'fatal', code: 'QueueDoesNotExist', message: 'no', status: 400 }),
    line: 'FAIL queue jobs: does not exist (QueueDoesNotExist)',
  },
  {
    answer: 'unreachable',
    lookup: refusing('GetQueueUrl', { kind: 'retryable', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' }),
    line: `FAIL queue jobs: cannot reach SQS at https://sqs.us-east-1.amazonaws.com: ECONNREFUSED ${HINT}`,
  },
  {
    answer: 'GetQueueUrl denied',
    lookup: refusing('GetQueueUrl', { kind: 'fatal', code: 'AccessDenied', message: 'no', status: 403 }),
    line: 'FAIL queue jobs: access denied (needs sqs:GetQueueUrl, sqs:GetQueueAttributes)',
  },
  {
    answer: 'GetQueueAttributes denied',
    lookup: refusing('GetQueueAttributes', { kind: 'fatal', code: 'AccessDenied', message: 'no', status: 403 }),
    line: 'FAIL queue jobs: access denied (needs sqs:GetQueueAttributes)',
  },
  {
    answer: 'no QueueArn',
    lookup: { queueUrl: async () => QUEUE_URL, queueAttributes: async () => ({}) },
    line: 'FAIL queue jobs: has no usable QueueArn (got "")',
  },
];

describe('a queue that cannot be resolved: one line for workerless check and the start-up', () => {
  for (const { answer, lookup, line } of cases) {
    it(answer, async () => {
      const env = { AWS_REGION: 'us-east-1' };
      const r = resolveConfig(collectOptions(['--function', 'f', '--queues', 'jobs', '--metrics', 'off'], env, OPTIONS).raw, env);
      assert.ok(r.ok);
      const ports: CheckPorts = {
        findQueues: async () => ({ found: [], unreadable: [] }),
        resolveQueue: (spec, signal) => resolveQueue(lookup, spec, undefined, signal, SQS),
        dryRun: async () => ok(),
        functionConfiguration: () => Promise.reject(new Error('unused')),
        reservedConcurrency: async () => undefined,
        putCheckDatum: async () => {},
        connectTemporal: () => Promise.reject(new Error('unused')),
        probeTcp: async () => undefined,
      };
      const checked = formatReport(await runChecks(r.config, ports)).filter((l) => l.startsWith('FAIL queue'));
      assert.deepEqual(checked, [line]);
      await assert.rejects(resolveQueues(lookup, [{ ref: 'jobs', weight: 1 }], undefined, undefined, SQS), (err: unknown) => {
        assert.ok(err instanceof StartupError);
        assert.equal(`FAIL ${err.message}`, line);
        return true;
      });
    });
  }
});
