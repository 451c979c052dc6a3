// runChecks with fake ports: what each outcome means for the operator, without AWS or Temporal.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { AwsCallError } from '../../../src/core/errors.ts';
import { allPassed, formatReport, runChecks } from '../../../src/check/check.ts';
import { type CheckPorts } from '../../../src/check/check-ports.ts';
import type { FunctionConfiguration } from '../../../src/check/function-fit.ts';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig, type Config } from '../../../src/config/config.ts';
import { QueueResolveError } from '../../../src/aws/resolve-queues.ts';
import { ok, throttled, unusable } from '../../support/factories.ts';

function config(argv: string[]): Config {
  const env = { AWS_REGION: 'us-east-1' };
  const r = resolveConfig(collectOptions(argv, env, OPTIONS).raw, env);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.config;
}

/** What GetFunctionConfiguration reads of a plain function with a 5 s timeout, unless overridden. */
const configuration = (overrides: Partial<FunctionConfiguration> = {}): FunctionConfiguration => ({
  version: '$LATEST',
  timeoutSec: 5,
  codeSha256: 'abc=',
  managedInstances: undefined,
  tenantIsolationMode: undefined,
  durable: undefined,
  ...overrides,
});

const NO_RESERVED = "no reserved concurrency, so it shares the account's unreserved concurrency";

const stats = (backlog: number) => ({ workflow: { backlog }, activity: { backlog } });

/** Every port succeeds unless overridden. */
function ports(overrides: Partial<CheckPorts> = {}): CheckPorts {
  return {
    findQueues: async () => ({ found: [], unreadable: [] }),
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
    functionConfiguration: async () => configuration(),
    reservedConcurrency: async () => undefined,
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
        'ok   function a-fn configuration (timeout 5 s, runs $LATEST)',
        'ok   function b-fn (DryRun invoke allowed)',
        'ok   function b-fn configuration (timeout 5 s, runs $LATEST)',
        "ok   queue a1 visibility (90 s (--visibility-timeout) is at least 6x function a-fn's timeout of 5 s)",
        "ok   queue a2 visibility (90 s (--visibility-timeout) is at least 6x function a-fn's timeout of 5 s)",
        "ok   queue b1 visibility (30 s is at least 6x function b-fn's timeout of 5 s)",
        `ok   function a-fn concurrency (--concurrency 10 x 1 replica = 10; ${NO_RESERVED})`,
        `ok   function b-fn concurrency (--concurrency 10 x 1 replica = 10; ${NO_RESERVED})`,
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
      'ok   function f configuration (timeout 5 s, runs $LATEST)',
      `ok   function f concurrency (--concurrency 10 x 1 replica = 10; ${NO_RESERVED})`,
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
      (await lines(['--function', 'f', '--queues', 'q'], p)).find((l) => l.includes('metrics')),
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
        'ok   function f configuration (timeout 5 s, runs $LATEST)',
        'FAIL Temporal worker function w: cannot invoke: access denied (needs lambda:InvokeFunction)',
        "ok   queue q visibility (30 s is at least 6x function f's timeout of 5 s)",
        `ok   function f concurrency (--concurrency 10 x 1 replica = 10; ${NO_RESERVED})`,
        'ok   temporal task queue tq (namespace default at localhost:7233, backlog 6)',
      ],
    );
  });

  it('a tenant-isolated route (--tenant-id-from) is checked with a DryRun that names the dry-run tenant, as at start-up', async () => {
    const seen: [string, string | undefined][] = [];
    const p = ports({
      dryRun: async (name, _signal, params) => {
        seen.push([name, params?.tenantId]);
        return ok();
      },
    });
    const config = join(mkdtempSync(join(tmpdir(), 'wl-check-')), 'wl.yaml');
    writeFileSync(
      config,
      'metrics: off\nroutes:\n  - { function: saas, queues: a, tenant-id-from: group }\n  - { function: plain, queues: b }\n',
    );
    assert.deepEqual(
      (await lines(['--config', config], p)).filter((l) => l.includes('DryRun')),
      ['ok   function saas (DryRun invoke allowed (tenant workerless-dry-run))', 'ok   function plain (DryRun invoke allowed)'],
    );
    assert.deepEqual(seen, [
      ['saas', 'workerless-dry-run'],
      ['plain', undefined],
    ]);
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

  it("--temporal-ecs-service: one line for the worker set's ECS service, after the Temporal lines", async () => {
    const args = ['--metrics', 'off', '--temporal-task-queues', 'a', '--temporal-function', 'w', '--temporal-worker-set-max', '4'];
    const seen: unknown[] = [];
    const p = ports({
      ecsService: (ref) => {
        seen.push(ref);
        return Promise.resolve(
          ref.service === 'workers'
            ? { ok: true, detail: 'ACTIVE, desired 2, running 2' }
            : { ok: false, detail: 'not found in cluster prod (MISSING)' },
        );
      },
    });
    assert.deepEqual(
      (await lines([...args, '--temporal-ecs-service', 'prod/workers'], p)).at(-1),
      'ok   ECS service prod/workers (ACTIVE, desired 2, running 2)',
    );
    assert.deepEqual(
      (await lines([...args, '--temporal-ecs-service', 'prod/nope'], p)).at(-1),
      'FAIL ECS service prod/nope: not found in cluster prod (MISSING)',
    );
    assert.deepEqual(seen, [
      { cluster: 'prod', service: 'workers' },
      { cluster: 'prod', service: 'nope' },
    ]);
  });

  it('metrics off and no queues: no metrics line and no note', async () => {
    const report = await runChecks(config(['--metrics', 'off', '--temporal-task-queues', 'a', '--temporal-function', 'w']), ports());
    assert.deepEqual(report.notes, []);
    assert.deepEqual(
      report.results.map((r) => r.name),
      ['Temporal worker function w', 'temporal task queue a'],
    );
  });

  it('checks 1,000 listed queues 64 at a time, each under a deadline of its own from when it starts, reported in order', async () => {
    let open = 0;
    let peak = 0;
    const base = ports();
    const p = ports({
      resolveQueue: async (spec, signal) => {
        open++;
        peak = Math.max(peak, open);
        // Each takes 20 ms: 1,000 at 64 at a time take about 320 ms, twice one deadline of 150 ms. The deadline
        // leaves each check 130 ms of slack for a busy host's late timers (60 ms, a third of that, did not always do).
        await new Promise((resolve) => setTimeout(resolve, 20));
        open--;
        signal.throwIfAborted();
        return base.resolveQueue(spec, signal);
      },
    });
    const names = Array.from({ length: 1_000 }, (_, i) => `q${i}`);
    const started = performance.now();
    const report = await runChecks(config(['--function', 'f', '--queues', names.join(','), '--metrics', 'off']), p, {
      deadlineMs: 150,
    });
    // Longer than one deadline in all: one deadline for every check would have failed the later ones.
    assert.ok(performance.now() - started > 150, `took ${performance.now() - started} ms`);
    assert.equal(peak, 64);
    const queueLines = report.results.filter((r) => /^queue q\d+$/.test(r.name));
    assert.deepEqual(
      queueLines.map((r) => [r.name, r.ok]),
      names.map((n) => [`queue ${n}`, true]),
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

describe('runChecks compares what the SQS trigger compares (function-fit.ts)', () => {
  const denied = (operation: string) =>
    new AwsCallError(operation, { kind: 'fatal', code: 'AccessDeniedException', message: 'not authorized', status: 403 });
  const notFound = (operation: string) =>
    new AwsCallError(operation, { kind: 'fatal', code: 'ResourceNotFoundException', message: 'Function not found', status: 404 });

  it("a queue's visibility timeout shorter than the function's timeout fails (exit 1); --visibility-timeout counts instead", async () => {
    const p = ports({ functionConfiguration: async () => configuration({ timeoutSec: 60 }) });
    const report = await runChecks(config(['--function', 'f', '--queues', 'q', '--metrics', 'off']), p);
    assert.equal(allPassed(report), false);
    assert.equal(
      formatReport(report).find((l) => l.includes('visibility:')),
      "FAIL queue q visibility: 30 s is shorter than function f's timeout of 60 s: a message could be received or invoked again while its invocation still runs (Lambda's SQS trigger refuses this); set it to at least 360 s, 6x, as AWS advises",
    );
    const flagged = await runChecks(config(['--function', 'f', '--queues', 'q', '--metrics', 'off', '--visibility-timeout', '120']), p);
    assert.equal(allPassed(flagged), true);
    assert.equal(
      formatReport(flagged).find((l) => l.includes('visibility:')),
      `warn queue q visibility: 120 s (--visibility-timeout) covers function f's timeout of 60 s but is less than the 6x (360 s) AWS advises for a queue that feeds Lambda ("Configuring a queue to use with Lambda"): less margin when SQS errors keep the lease from extending it`,
    );
  });

  it('--concurrency of every route of a function (any alias) x --replicas against its reserved concurrency, read once unqualified', async () => {
    const asked: string[] = [];
    const p = ports({
      reservedConcurrency: async (fn) => {
        asked.push(fn);
        return 20;
      },
    });
    const routes = JSON.stringify([
      { function: 'f:live', queues: 'a', concurrency: 4 },
      { function: 'f', queues: 'b', concurrency: 3 },
    ]);
    const env = { AWS_REGION: 'us-east-1', WORKERLESS_ROUTES: routes };
    const r = resolveConfig(collectOptions(['--metrics', 'off', '--replicas', '3'], env, OPTIONS).raw, env);
    assert.ok(r.ok);
    const report = await runChecks(r.config, p);
    assert.deepEqual(asked, ['f']);
    assert.equal(allPassed(report), true);
    assert.deepEqual(
      formatReport(report).filter((l) => l.includes('concurrency')),
      [
        'warn function f concurrency: --concurrency 4 + 3 (2 routes) x 3 replicas = 21 exceeds its reserved concurrency of 20: Lambda throttles invocations beyond 20 (429, retried); lower --concurrency or --replicas, or set --adaptive-concurrency',
      ],
    );
  });

  it('a Managed Instances function: reported as such; an unqualified name runs $LATEST.PUBLISHED, whose timeout is compared', async () => {
    const asked: [string, string | undefined][] = [];
    const managedInstances = {
      capacityProviderArn: 'arn:aws:lambda:us-east-1:1:capacity-provider:fleet',
      perEnvironmentMaxConcurrency: 64,
    };
    const p = ports({
      functionConfiguration: async (fn, qualifier) => {
        asked.push([fn, qualifier]);
        return qualifier === '$LATEST.PUBLISHED'
          ? configuration({ version: '$LATEST.PUBLISHED', timeoutSec: 10, managedInstances })
          : configuration({ timeoutSec: 3, managedInstances });
      },
    });
    const got = await lines(['--function', 'arn:aws:lambda:us-east-1:123456789012:function:mi', '--queues', 'q', '--metrics', 'off'], p);
    assert.deepEqual(asked, [
      ['arn:aws:lambda:us-east-1:123456789012:function:mi', undefined],
      ['arn:aws:lambda:us-east-1:123456789012:function:mi', '$LATEST.PUBLISHED'],
    ]);
    assert.deepEqual(
      got.filter((l) => l.includes('configuration') || l.includes('visibility')),
      [
        'ok   queue q (http://sqs/q, fifo: no, visibility 30 s)',
        'ok   function arn:aws:lambda:us-east-1:123456789012:function:mi configuration (Lambda Managed Instances (capacity provider fleet, up to 64 invocations per execution environment); an unqualified invoke runs $LATEST.PUBLISHED (timeout 10 s))',
        // 30 s covers $LATEST's 3 s six times over, but not the 10 s of the version that runs.
        `warn queue q visibility: 30 s covers function arn:aws:lambda:us-east-1:123456789012:function:mi's timeout of 10 s but is less than the 6x (60 s) AWS advises for a queue that feeds Lambda ("Configuring a queue to use with Lambda"): less margin when SQS errors keep the lease from extending it`,
      ],
    );
  });

  it('a Managed Instances function without $LATEST.PUBLISHED fails; with unpublished code in $LATEST warns; by alias runs that version', async () => {
    const managedInstances = {
      capacityProviderArn: 'arn:aws:lambda:us-east-1:1:capacity-provider:fleet',
      perEnvironmentMaxConcurrency: undefined,
    };
    const unpublished = ports({
      functionConfiguration: async (_fn, qualifier) => {
        if (qualifier !== undefined) throw notFound('GetFunctionConfiguration');
        return configuration({ managedInstances });
      },
    });
    const report = await runChecks(config(['--function', 'mi', '--queues', 'q', '--metrics', 'off']), unpublished);
    assert.equal(allPassed(report), false);
    assert.deepEqual(
      formatReport(report).filter((l) => l.includes('mi configuration') || l.includes('visibility:')),
      [
        'FAIL function mi configuration: Lambda Managed Instances (capacity provider fleet); an unqualified invoke runs $LATEST.PUBLISHED, which does not exist (publish it: aws lambda publish-version --function-name mi --publish-to LATEST_PUBLISHED)',
      ],
    );
    const stale = ports({
      functionConfiguration: async (_fn, qualifier) =>
        configuration({ managedInstances, codeSha256: qualifier === undefined ? 'new=' : 'old=', version: qualifier ?? '$LATEST' }),
    });
    assert.equal(
      (await lines(['--function', 'mi', '--queues', 'q', '--metrics', 'off'], stale)).find((l) => l.includes('mi configuration')),
      "warn function mi configuration: Lambda Managed Instances (capacity provider fleet); an unqualified invoke runs $LATEST.PUBLISHED (timeout 5 s), whose code differs from $LATEST's: $LATEST is not what runs (aws lambda publish-version --function-name mi --publish-to LATEST_PUBLISHED)",
    );
    const asked: (string | undefined)[] = [];
    const aliased = ports({
      functionConfiguration: async (fn, qualifier) => {
        asked.push(qualifier);
        return configuration({ managedInstances, version: fn === 'mi:live' ? '7' : '$LATEST' });
      },
    });
    assert.equal(
      (await lines(['--function', 'mi:live', '--queues', 'q', '--metrics', 'off'], aliased)).find((l) => l.includes('configuration')),
      'ok   function mi:live configuration (Lambda Managed Instances (capacity provider fleet); timeout 5 s, runs 7)',
    );
    assert.deepEqual(asked, [undefined], 'an alias names its version: no $LATEST.PUBLISHED read');
  });

  it('$LATEST.PUBLISHED refused for another reason than its absence: the function still named, a warning why, no visibility line', async () => {
    const managedInstances = {
      capacityProviderArn: 'arn:aws:lambda:us-east-1:1:capacity-provider:fleet',
      perEnvironmentMaxConcurrency: undefined,
    };
    const p = ports({
      functionConfiguration: async (_fn, qualifier) => {
        if (qualifier === undefined) return configuration({ managedInstances });
        throw new AwsCallError('GetFunctionConfiguration', {
          kind: 'fatal',
          code: 'InvalidParameterValueException',
          message: 'Invalid qualifier',
          status: 400,
        });
      },
    });
    const report = await runChecks(config(['--function', 'mi', '--queues', 'q', '--metrics', 'off']), p);
    assert.equal(allPassed(report), true);
    assert.deepEqual(
      formatReport(report).filter((l) => l.includes('configuration') || l.includes('visibility:')),
      [
        'warn function mi configuration: Lambda Managed Instances (capacity provider fleet); an unqualified invoke runs $LATEST.PUBLISHED, which could not be read (InvalidParameterValueException: Invalid qualifier): its timeout is not compared',
      ],
    );
  });

  it('GetFunctionConfiguration or GetFunctionConcurrency not allowed: one warn line naming the permission, and the rest goes on (exit 0)', async () => {
    const p = ports({
      functionConfiguration: async () => {
        throw denied('GetFunctionConfiguration');
      },
      reservedConcurrency: async () => {
        throw denied('GetFunctionConcurrency');
      },
    });
    const report = await runChecks(config(['--function', 'f', '--queues', 'q', '--metrics', 'off']), p);
    assert.equal(allPassed(report), true);
    assert.deepEqual(
      formatReport(report).filter((l) => !l.startsWith('note')),
      [
        'ok   queue q (http://sqs/q, fifo: no, visibility 30 s)',
        'ok   function f (DryRun invoke allowed)',
        "warn function f configuration: access denied (needs lambda:GetFunctionConfiguration); so its timeout and version are not checked, nor its queues' visibility timeout against its timeout",
        'warn function f concurrency: access denied (needs lambda:GetFunctionConcurrency); so --concurrency is not compared with its reserved concurrency',
      ],
    );
  });

  it('a function that does not exist: only its DryRun line says so, not the reads too', async () => {
    const p = ports({
      dryRun: async () => unusable('ResourceNotFoundException'),
      functionConfiguration: async () => {
        throw notFound('GetFunctionConfiguration');
      },
      reservedConcurrency: async () => {
        throw notFound('GetFunctionConcurrency');
      },
    });
    assert.deepEqual(await lines(['--function', 'gone', '--queues', 'q', '--metrics', 'off'], p), [
      'ok   queue q (http://sqs/q, fifo: no, visibility 30 s)',
      'FAIL function gone: does not exist (ResourceNotFoundException)',
    ]);
  });
});
