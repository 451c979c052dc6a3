// The test Lambda endpoint's GetFunctionConfiguration and GetFunctionConcurrency (function-configuration.ts), as
// @aws-sdk/client-lambda reads them: what `workerless check` meets from AWS. Each behaviour names its AWS page.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import {
  GetFunctionConcurrencyCommand,
  GetFunctionConfigurationCommand,
  LambdaClient,
  LambdaServiceException,
  ResourceNotFoundException,
} from '@aws-sdk/client-lambda';
import { lambdaClient } from '../support/aws.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

const CAPACITY_PROVIDER = 'arn:aws:lambda:us-east-1:000000000000:capacity-provider:fleet';

describe('test Lambda endpoint: GetFunctionConfiguration and GetFunctionConcurrency through @aws-sdk/client-lambda', () => {
  let endpoint: LambdaEndpoint;
  let client: LambdaClient;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      handlerOutput: 'ignore',
      functions: {
        plain: { handler: functionFixture('record.mjs'), timeoutSec: 45, reservedConcurrency: 5 },
        managed: {
          handler: functionFixture('record.mjs'),
          timeoutSec: 60,
          configuration: {
            managedInstances: {
              capacityProviderArn: CAPACITY_PROVIDER,
              perExecutionEnvironmentMaxConcurrency: 64,
              published: { timeoutSec: 30, codeSha256: 'older' },
            },
          },
        },
        unpublished: {
          handler: functionFixture('record.mjs'),
          configuration: { managedInstances: { capacityProviderArn: CAPACITY_PROVIDER, published: null } },
        },
        locked: {
          handler: functionFixture('record.mjs'),
          configuration: { deny: ['GetFunctionConfiguration', 'GetFunctionConcurrency'] },
        },
      },
    });
    client = lambdaClient(endpoint.url);
  });
  after(async () => {
    client.destroy();
    await endpoint.stop();
  });

  it("a function's $LATEST: its timeout, version and code hash, no CapacityProviderConfig (API_GetFunctionConfiguration)", async () => {
    const out = await client.send(new GetFunctionConfigurationCommand({ FunctionName: 'plain' }));
    assert.equal(out.Timeout, 45);
    assert.equal(out.Version, '$LATEST');
    assert.equal(out.FunctionArn, 'arn:aws:lambda:us-east-1:000000000000:function:plain');
    assert.equal(
      out.CodeSha256,
      createHash('sha256')
        .update(readFileSync(functionFixture('record.mjs')))
        .digest('base64'),
    );
    assert.equal(out.CapacityProviderConfig, undefined);
    assert.equal(out.State, 'Active');
  });

  it('a Managed Instances function: CapacityProviderConfig, and $LATEST.PUBLISHED as its own version (lambda-managed-instances-version-publishing)', async () => {
    const latest = await client.send(new GetFunctionConfigurationCommand({ FunctionName: 'managed' }));
    assert.deepEqual(latest.CapacityProviderConfig, {
      LambdaManagedInstancesCapacityProviderConfig: { CapacityProviderArn: CAPACITY_PROVIDER, PerExecutionEnvironmentMaxConcurrency: 64 },
    });
    assert.equal(latest.Timeout, 60);
    const published = await client.send(new GetFunctionConfigurationCommand({ FunctionName: 'managed', Qualifier: '$LATEST.PUBLISHED' }));
    assert.equal(published.Version, '$LATEST.PUBLISHED');
    assert.equal(published.FunctionArn, 'arn:aws:lambda:us-east-1:000000000000:function:managed:$LATEST.PUBLISHED');
    assert.equal(published.Timeout, 30);
    assert.equal(published.CodeSha256, 'older');
    // The qualifier in the name works as in the query, as Lambda's name formats allow.
    const inName = await client.send(new GetFunctionConfigurationCommand({ FunctionName: 'managed:$LATEST.PUBLISHED' }));
    assert.equal(inName.Version, '$LATEST.PUBLISHED');
  });

  it('$LATEST.PUBLISHED of a function that never published it, or is not Managed Instances: ResourceNotFoundException', async () => {
    for (const name of ['unpublished', 'plain']) {
      await assert.rejects(
        client.send(new GetFunctionConfigurationCommand({ FunctionName: name, Qualifier: '$LATEST.PUBLISHED' })),
        (err: unknown) => err instanceof ResourceNotFoundException && err.$metadata.httpStatusCode === 404,
      );
    }
    await assert.rejects(client.send(new GetFunctionConfigurationCommand({ FunctionName: 'nope' })), ResourceNotFoundException);
  });

  it('GetFunctionConcurrency: ReservedConcurrentExecutions, left out when there is none (API_GetFunctionConcurrency)', async () => {
    assert.equal((await client.send(new GetFunctionConcurrencyCommand({ FunctionName: 'plain' }))).ReservedConcurrentExecutions, 5);
    endpoint.setReservedConcurrency('plain', 2);
    assert.equal((await client.send(new GetFunctionConcurrencyCommand({ FunctionName: 'plain' }))).ReservedConcurrentExecutions, 2);
    endpoint.setReservedConcurrency('plain', 5);
    assert.equal(
      (await client.send(new GetFunctionConcurrencyCommand({ FunctionName: 'managed' }))).ReservedConcurrentExecutions,
      undefined,
    );
  });

  it('a denied read: 403 AccessDeniedException, which the SDK surfaces under that name (no class of its own)', async () => {
    const denied = (err: unknown) =>
      err instanceof LambdaServiceException &&
      err.name === 'AccessDeniedException' &&
      err.$metadata.httpStatusCode === 403 &&
      err.message.includes('is not authorized to perform: lambda:');
    await assert.rejects(client.send(new GetFunctionConfigurationCommand({ FunctionName: 'locked' })), denied);
    await assert.rejects(client.send(new GetFunctionConcurrencyCommand({ FunctionName: 'locked' })), denied);
  });

  it('records every read with its qualifier and status', async () => {
    endpoint.reset();
    await client.send(new GetFunctionConfigurationCommand({ FunctionName: 'managed', Qualifier: '$LATEST.PUBLISHED' }));
    await client.send(new GetFunctionConcurrencyCommand({ FunctionName: 'plain' }));
    assert.deepEqual(
      endpoint.reads.map((r) => [r.operation, r.functionName, r.qualifier, r.statusCode]),
      [
        ['GetFunctionConfiguration', 'managed', '$LATEST.PUBLISHED', 200],
        ['GetFunctionConcurrency', 'plain', undefined, 200],
      ],
    );
    assert.deepEqual(endpoint.invocations, []);
  });
});
