// The test Lambda endpoint's model of tenant isolation mode (test/support/lambda-endpoint/tenancy.ts), as
// @aws-sdk/client-lambda sees it, and the daemon's start-up DryRun against such a function with both clients.
// AWS's pages behind each behaviour:
// - "Invoking Lambda functions with tenant isolation" (Developer Guide): a tenant id must be provided on every
//   invoke of such a function (X-Amz-Tenant-Id);
// - "Tenant isolation" (Developer Guide): its execution environments serve one tenant only;
// - "Accessing tenant identifier in Lambda function code" (Developer Guide): context.tenantId;
// - Invoke (API reference): DryRun validates the parameter values; InvalidParameterValueException (400) for a
//   parameter that is not valid (the guide does not name the refusal of a missing tenant id; tenancy.ts says so).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InvalidParameterValueException, InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { lambdaClient } from '../support/aws.ts';
import { createAwsAdapters, type AwsAdapters, type AwsClientKind } from '../../src/aws/adapters.ts';
import { resolveAwsEndpoints } from '../../src/aws/endpoints.ts';
import { checkFunction } from '../../src/daemon/function-check.ts';
import { DRY_RUN_TENANT_ID } from '../../src/check/dry-run.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

describe('test Lambda endpoint: tenant isolation mode', () => {
  let endpoint: LambdaEndpoint;
  let client: LambdaClient;

  before(async () => {
    endpoint = await startLambdaEndpoint({
      handlerOutput: 'ignore',
      functions: {
        isolated: { handler: functionFixture('tenant.mjs'), tenancy: { TenantIsolationMode: 'PER_TENANT' } },
        plain: { handler: functionFixture('tenant.mjs') },
      },
    });
    client = lambdaClient(endpoint.url);
  });

  after(async () => {
    client.destroy();
    await endpoint.stop();
  });

  it('refuses an Invoke without a tenant id: 400 InvalidParameterValueException, as the SDK classes it; nothing runs', async () => {
    for (const InvocationType of ['RequestResponse', 'Event', 'DryRun'] as const) {
      endpoint.reset();
      const err = await client.send(new InvokeCommand({ FunctionName: 'isolated', InvocationType })).then(
        () => assert.fail(`${InvocationType} without a tenant id was accepted`),
        (e: unknown) => e,
      );
      assert.ok(err instanceof InvalidParameterValueException, `${InvocationType}: ${String(err)}`);
      assert.equal(err.$metadata.httpStatusCode, 400);
      assert.equal(endpoint.invocations.length, 0);
      assert.deepEqual(
        endpoint.rejected.map((r) => [r.statusCode, r.errorType]),
        [[400, 'InvalidParameterValueException']],
      );
    }
  });

  it('runs an Invoke with a tenant id, records it, and gives it to the handler as context.tenantId', async () => {
    endpoint.reset();
    const out = await client.send(new InvokeCommand({ FunctionName: 'isolated', TenantId: 'blue', Payload: Buffer.from('{}') }));
    assert.equal(out.StatusCode, 200);
    assert.equal(out.FunctionError, undefined, 'tenant.mjs throws unless context.tenantId is set');
    assert.deepEqual(
      endpoint.invocations.map((i) => [i.tenantId, i.status]),
      [['blue', 'success']],
    );
    const dry = await client.send(new InvokeCommand({ FunctionName: 'isolated', TenantId: 'blue', InvocationType: 'DryRun' }));
    assert.equal(dry.StatusCode, 204);
  });

  it("never gives one tenant's execution environment to another", async () => {
    endpoint.reset();
    for (const tenant of ['t1', 't2', 't1', 't3', 't2']) {
      const out = await client.send(new InvokeCommand({ FunctionName: 'isolated', TenantId: tenant, Payload: Buffer.from('{}') }));
      // tenant.mjs throws in an environment that served another tenant before.
      assert.equal(out.FunctionError, undefined, `tenant ${tenant}: ${Buffer.from(out.Payload ?? []).toString()}`);
    }
    assert.deepEqual(
      endpoint.invocations.map((i) => [i.tenantId, i.coldStart]),
      [
        ['t1', true],
        ['t2', true],
        ['t1', false],
        ['t3', true],
        ['t2', false],
      ],
    );
  });

  it('a function without tenancy runs an Invoke without a tenant id, and its handler sees none', async () => {
    const out = await client.send(new InvokeCommand({ FunctionName: 'plain', Payload: Buffer.from('{}') }));
    assert.equal(out.FunctionError, 'Unhandled');
    assert.match(Buffer.from(out.Payload ?? []).toString(), /invoked without a tenant id/);
  });

  describe("the daemon's start-up DryRun, with both clients", () => {
    const adapters = new Map<AwsClientKind, AwsAdapters>();
    const saved = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] };
    before(async () => {
      // Both clients read credentials from the environment, as a run does.
      process.env['AWS_ACCESS_KEY_ID'] ??= 'test';
      process.env['AWS_SECRET_ACCESS_KEY'] ??= 'test';
      for (const kind of ['lean', 'sdk'] as const)
        adapters.set(
          kind,
          await createAwsAdapters(
            kind,
            { region: 'us-east-1', endpointUrl: endpoint.url },
            await resolveAwsEndpoints('us-east-1', endpoint.url),
            { maxSockets: 2 },
          ),
        );
    });
    after(() => {
      for (const a of adapters.values()) a.destroy();
      if (saved.id === undefined) delete process.env['AWS_ACCESS_KEY_ID'];
      if (saved.secret === undefined) delete process.env['AWS_SECRET_ACCESS_KEY'];
    });

    for (const kind of ['lean', 'sdk'] as const) {
      it(`${kind}: passes with the dry-run tenant id; without one it fails in one line that points at --tenant-id-from`, async () => {
        endpoint.reset();
        const invoker = adapters.get(kind)!.invoker('isolated');
        await checkFunction(invoker, 'isolated', undefined, 'function', endpoint.url, { tenantId: DRY_RUN_TENANT_ID });
        assert.deepEqual(
          endpoint.rejected.map((r) => [r.statusCode, r.errorType]),
          [[204, 'DryRun']],
        );
        assert.equal(endpoint.invocations.length, 0, 'a DryRun runs nothing');
        await assert.rejects(checkFunction(invoker, 'isolated', undefined, 'function', endpoint.url), {
          name: 'StartupError',
          message:
            /^function isolated: cannot invoke: InvalidParameterValueException: .*\(if the function is in tenant isolation mode, set --tenant-id-from\)$/,
        });
      });
    }
  });
});
