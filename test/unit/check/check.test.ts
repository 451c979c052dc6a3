// runChecks with fake ports: what each outcome means for the operator, without AWS or Temporal.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AwsCallError } from '../../../src/aws/errors.ts';
import { formatReport, runChecks, type CheckPorts } from '../../../src/check/check.ts';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig, type Config } from '../../../src/config/config.ts';
import { QueueResolveError } from '../../../src/aws/sqs-source.ts';
import { ok, throttled, unusable } from '../../support/factories.ts';

function config(argv: string[]): Config {
  const env = { AWS_REGION: 'us-east-1' };
  const r = resolveConfig(collectOptions(argv, env, OPTIONS).raw, env);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.config;
}

const stats = (backlog: number) => ({ workflow: { backlog }, activity: { backlog } });

/** Every port succeeds unless overridden. */
function ports(overrides: Partial<CheckPorts> = {}): CheckPorts {
  return {
    resolveQueue: async (spec) => ({
      name: spec.ref,
      url: `http://sqs/${spec.ref}`,
      arn: `arn:aws:sqs:us-east-1:1:${spec.ref}`,
      region: 'us-east-1',
      fifo: false,
      visibilityTimeoutSec: 30,
      weight: 1,
    }),
    dryRun: async () => ok(),
    putCheckDatum: async () => {},
    connectTemporal: async () => ({ read: async () => stats(3), close: async () => {} }),
    probeTcp: async () => undefined,
    ...overrides,
  };
}

const lines = async (argv: string[], p: CheckPorts) => formatReport(await runChecks(config(argv), p)).filter((l) => !l.startsWith('note'));

describe('runChecks', () => {
  it("checks the queues and function of every route, each queue with its route's --visibility-timeout", async () => {
    const routes = JSON.stringify([
      { function: 'a-fn', queues: 'a1,a2', 'visibility-timeout': 90 },
      { function: 'b-fn', queues: 'b1' },
    ]);
    const env = { AWS_REGION: 'us-east-1', WORKERLESS_ROUTES: routes };
    const r = resolveConfig(collectOptions(['--metrics', 'off'], env, OPTIONS).raw, env);
    assert.ok(r.ok);
    assert.deepEqual(
      formatReport(await runChecks(r.config, ports())).filter((l) => !l.startsWith('note')),
      [
        'ok   queue a1 (http://sqs/a1, fifo: no, visibility 90 s (--visibility-timeout))',
        'ok   queue a2 (http://sqs/a2, fifo: no, visibility 90 s (--visibility-timeout))',
        'ok   queue b1 (http://sqs/b1, fifo: no, visibility 30 s)',
        'ok   function a-fn (DryRun invoke allowed)',
        'ok   function b-fn (DryRun invoke allowed)',
      ],
    );
  });

  it('a queue given by URL that GetQueueAttributes refuses names only sqs:GetQueueAttributes', async () => {
    const url = 'https://sqs.us-east-1.amazonaws.com/1/payments';
    const p = ports({
      resolveQueue: async (spec) => {
        throw new QueueResolveError(spec.ref, 'GetQueueAttributes', { kind: 'fatal', code: 'AccessDenied', message: 'no', status: 403 });
      },
    });
    assert.deepEqual(await lines(['--function', 'f', '--queues', url, '--metrics', 'off'], p), [
      'FAIL queue payments: access denied (needs sqs:GetQueueAttributes)',
      'ok   function f (DryRun invoke allowed)',
    ]);
  });

  it('refused credentials are not reported as a missing IAM action', async () => {
    const p = ports({
      putCheckDatum: async () => {
        throw new AwsCallError('PutMetricData', {
          kind: 'fatal',
          code: 'InvalidClientTokenId',
          message: 'The security token included in the request is invalid.',
          status: 403,
        });
      },
    });
    assert.deepEqual(
      (await lines(['--function', 'f', '--queues', 'q'], p))[2],
      'FAIL metrics Workerless-default: credentials refused (InvalidClientTokenId): The security token included in the request is invalid.',
    );
  });

  it('a throttled DryRun passes; an access denial names lambda:InvokeFunction; both functions are checked', async () => {
    const p = ports({ dryRun: async (name) => (name === 'f' ? throttled() : unusable('AccessDeniedException')) });
    assert.deepEqual(
      await lines(['--function', 'f', '--queues', 'q', '--metrics', 'off', '--temporal-task-queues', 'tq', '--temporal-function', 'w'], p),
      [
        'ok   queue q (http://sqs/q, fifo: no, visibility 30 s)',
        'ok   function f (DryRun invoke throttled (TooManyRequestsException), which proves it exists and may be invoked)',
        'FAIL Temporal worker function w: access denied (needs lambda:InvokeFunction)',
        'ok   temporal task queue tq (namespace default at localhost:7233, backlog 6)',
      ],
    );
  });

  it('Temporal: PERMISSION_DENIED names the call; a connection that fails while the port answers points at TLS', async () => {
    const denied = Object.assign(new Error('Request unauthorized.'), { code: 7 });
    const p = ports({
      connectTemporal: async () => ({ read: async (tq) => (tq === 'a' ? stats(0) : Promise.reject(denied)), close: async () => {} }),
    });
    const unloaded = ports({
      connectTemporal: async () => ({
        read: async () => ({ workflow: { backlog: 0, known: false }, activity: { backlog: 0 } }),
        close: async () => {},
      }),
    });
    assert.deepEqual(
      (await lines(['--metrics', 'off', '--temporal-task-queues', 'a', '--temporal-function', 'w'], unloaded))[1],
      'ok   temporal task queue a (namespace default at localhost:7233, backlog unknown (no statistics: an unloaded task queue))',
    );
    assert.deepEqual(await lines(['--metrics', 'off', '--temporal-task-queues', 'a,b', '--temporal-function', 'w'], p), [
      'ok   Temporal worker function w (DryRun invoke allowed)',
      'ok   temporal task queue a (namespace default at localhost:7233, backlog 0)',
      'FAIL temporal task queue b: PERMISSION_DENIED: Request unauthorized. (needs DescribeTaskQueue in namespace default)',
    ]);
    const tls = ports({ connectTemporal: () => Promise.reject(new Error('Failed to connect before the deadline')) });
    assert.deepEqual(
      (await lines(['--metrics', 'off', '--temporal-task-queues', 'a', '--temporal-function', 'w'], tls))[1],
      'FAIL temporal localhost:7233: cannot connect: Failed to connect before the deadline (the port answers: check --temporal-tls, the TLS files and --temporal-api-key)',
    );
  });

  it('metrics off and no queues: no metrics line and no note', async () => {
    const report = await runChecks(config(['--metrics', 'off', '--temporal-task-queues', 'a', '--temporal-function', 'w']), ports());
    assert.deepEqual(report.notes, []);
    assert.deepEqual(
      report.results.map((r) => r.name),
      ['Temporal worker function w', 'temporal task queue a'],
    );
  });

  it('a check that does not answer fails at its deadline, and the others still report', async () => {
    const p = ports({
      resolveQueue: (spec, signal) =>
        new Promise((_, reject) => {
          signal.addEventListener('abort', () =>
            reject(new QueueResolveError(spec.ref, 'GetQueueUrl', { kind: 'retryable', code: 'AbortError', message: 'aborted' })),
          );
        }),
    });
    const report = await runChecks(config(['--function', 'f', '--queues', 'q', '--metrics', 'off']), p, { deadlineMs: 50 });
    assert.deepEqual(formatReport(report).slice(0, 2), [
      'FAIL queue q: cannot reach SQS: timed out (check --endpoint-url / --region and the network)',
      'ok   function f (DryRun invoke allowed)',
    ]);
  });
});
