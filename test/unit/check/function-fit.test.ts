// The comparisons `workerless check` makes between a route and its function, at their boundaries.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { concurrencyFit, describeFunction, visibilityFit, type FunctionConfiguration } from '../../../src/check/function-fit.ts';
import { splitFunctionRef } from '../../../src/check/function-ref.ts';

const plain: FunctionConfiguration = {
  version: '$LATEST',
  timeoutSec: 30,
  codeSha256: 'a=',
  managedInstances: undefined,
  tenantIsolationMode: undefined,
  durable: undefined,
};

describe('visibilityFit: the visibility timeout against the function timeout', () => {
  // https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html ("Configuring a queue to use with
  // Lambda"): the trigger refuses a visibility timeout below the function timeout and advises 6x.
  it('below the function timeout fails, from it up to below 6x warns, from 6x it passes', () => {
    const verdict = (visibilitySec: number) => visibilityFit(visibilitySec, false, 'f', 30).verdict;
    assert.deepEqual([0, 29, 30, 179, 180, 43_200].map(verdict), ['fail', 'fail', 'warn', 'warn', 'ok', 'ok']);
  });

  it('says where the visibility timeout came from', () => {
    assert.equal(visibilityFit(180, true, 'f', 30).detail, "180 s (--visibility-timeout) is at least 6x function f's timeout of 30 s");
    assert.equal(visibilityFit(180, false, 'f', 30).detail, "180 s is at least 6x function f's timeout of 30 s");
  });
});

describe('concurrencyFit: --concurrency x --replicas against the reserved concurrency', () => {
  it('up to the reserved concurrency passes, over it warns naming both numbers, 0 fails, none passes', () => {
    const load = { concurrency: [5], adaptive: false };
    assert.deepEqual(
      [undefined, 0, 9, 10, 11].map((reserved) => concurrencyFit(load, 2, reserved).verdict),
      ['ok', 'fail', 'warn', 'ok', 'ok'],
    );
    assert.equal(
      concurrencyFit(load, 2, 9).detail,
      '--concurrency 5 x 2 replicas = 10 exceeds its reserved concurrency of 9: Lambda throttles invocations beyond 9 (429, retried); lower --concurrency or --replicas, or set --adaptive-concurrency',
    );
    assert.equal(concurrencyFit(load, 2, 10).detail, '--concurrency 5 x 2 replicas = 10, within its reserved concurrency of 10');
    // A fleet of 3 at --concurrency 15 asks at most --fleet-concurrency 30 of the function, not 45.
    const fleet = { concurrency: [15], adaptive: false, fleetConcurrency: 30 };
    assert.equal(
      concurrencyFit(fleet, 3, 30).detail,
      '--concurrency 15 x 3 replicas, at most --fleet-concurrency 30 = 30, within its reserved concurrency of 30',
    );
    assert.equal(concurrencyFit(fleet, 3, 29).verdict, 'warn');
    assert.ok(concurrencyFit(fleet, 3, 29).detail.endsWith('lower --fleet-concurrency, or set --adaptive-concurrency'));
  });

  it('sums the routes of the function; with --adaptive-concurrency on all of them, says it backs off', () => {
    assert.equal(
      concurrencyFit({ concurrency: [4, 3], adaptive: true }, 1, 5).detail,
      '--concurrency 4 + 3 (2 routes) x 1 replica = 7 exceeds its reserved concurrency of 5: Lambda throttles invocations beyond 5 (429, retried); --adaptive-concurrency backs off while it throttles',
    );
  });
});

describe('describeFunction: what the function is and which version runs', () => {
  const managedInstances = {
    capacityProviderArn: 'arn:aws:lambda:us-east-1:123456789012:capacity-provider:fleet',
    perEnvironmentMaxConcurrency: 8,
  };
  const managed = { ...plain, managedInstances };

  it('a plain function: its timeout and version; tenancy and durability are named', () => {
    assert.deepEqual(describeFunction('f', undefined, plain), { verdict: 'ok', detail: 'timeout 30 s, runs $LATEST' });
    assert.equal(
      describeFunction('f', undefined, { ...plain, tenantIsolationMode: 'PER_TENANT', durable: { executionTimeoutSec: 86_400 } }).detail,
      'tenant isolation PER_TENANT, durable (execution timeout 86400 s); timeout 30 s, runs $LATEST',
    );
  });

  // https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-version-publishing.html: "When you invoke a
  // Lambda Managed Instances function using an unqualified ARN, Lambda implicitly invokes the $LATEST.PUBLISHED version".
  it('an unqualified Managed Instances function runs $LATEST.PUBLISHED: missing fails, other code than $LATEST warns, same passes', () => {
    assert.equal(describeFunction('f', undefined, managed, undefined).verdict, 'fail');
    assert.equal(describeFunction('f', undefined, managed, { ...managed, version: '$LATEST.PUBLISHED', codeSha256: 'b=' }).verdict, 'warn');
    assert.deepEqual(describeFunction('f', undefined, managed, { ...managed, version: '$LATEST.PUBLISHED', timeoutSec: 60 }), {
      verdict: 'ok',
      detail:
        'Lambda Managed Instances (capacity provider fleet, up to 8 invocations per execution environment); an unqualified invoke runs $LATEST.PUBLISHED (timeout 60 s)',
    });
  });

  it('$LATEST.PUBLISHED that cannot be read (not for its absence): a warning that names why, and the function still named', () => {
    assert.deepEqual(describeFunction('f', undefined, managed, { unreadable: 'InvalidParameterValueException: bad qualifier' }), {
      verdict: 'warn',
      detail:
        'Lambda Managed Instances (capacity provider fleet, up to 8 invocations per execution environment); an unqualified invoke runs $LATEST.PUBLISHED, which could not be read (InvalidParameterValueException: bad qualifier): its timeout is not compared',
    });
  });

  it('a qualified Managed Instances function runs the version its qualifier names', () => {
    assert.equal(
      describeFunction('f:live', 'live', { ...managed, version: '4' }).detail,
      'Lambda Managed Instances (capacity provider fleet, up to 8 invocations per execution environment); timeout 30 s, runs 4',
    );
  });
});

describe('splitFunctionRef: the name formats Lambda accepts', () => {
  it('splits off the qualifier of a name, partial ARN or ARN', () => {
    const cases: [string, string, string | undefined][] = [
      ['f', 'f', undefined],
      ['f:live', 'f', 'live'],
      ['f:$LATEST.PUBLISHED', 'f', '$LATEST.PUBLISHED'],
      ['123456789012:function:f', '123456789012:function:f', undefined],
      ['123456789012:function:f:7', '123456789012:function:f', '7'],
      ['arn:aws:lambda:us-east-1:123456789012:function:f', 'arn:aws:lambda:us-east-1:123456789012:function:f', undefined],
      [
        'arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:f:live',
        'arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:f',
        'live',
      ],
    ];
    for (const [ref, fn, qualifier] of cases) assert.deepEqual(splitFunctionRef(ref), { function: fn, qualifier }, ref);
  });
});
