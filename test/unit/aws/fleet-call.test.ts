// How a failed fleet call reads (src/aws/fleet-call.ts): one line naming the operation, the table and the endpoint,
// for the SDK errors DynamoDB's calls end in.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AwsCallError, callErrorOf } from '../../../src/core/errors.ts';
import { fleetCallError, isConditionRefused } from '../../../src/aws/fleet-call.ts';

const AT = 'http://127.0.0.1:8000';
const sdkError = (name: string, message: string, status: number) =>
  Object.assign(new Error(message), { name, $metadata: { httpStatusCode: status } });
const line = (err: unknown, operation: 'PutItem' | 'Query' | 'DeleteItem' | 'DescribeTable' = 'PutItem') =>
  fleetCallError(err, operation, 't', AT).message;

describe('fleet call errors', () => {
  it('an unreachable endpoint: cannot reach, with what the connection said', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' });
    assert.equal(line(refused), `cannot reach DynamoDB at ${AT} (PutItem on table t): connect ECONNREFUSED 127.0.0.1:8000`);
    const noAnswer = Object.assign(
      new Error('@smithy/node-http-handler - [ERROR] a request has exceeded the configured 5000 ms requestTimeout.'),
      { name: 'TimeoutError', code: 'ETIMEDOUT' },
    );
    assert.equal(
      line(noAnswer, 'Query'),
      `cannot reach DynamoDB at ${AT} (Query on table t): a request has exceeded the configured 5000 ms requestTimeout.`,
    );
    const noConnection = Object.assign(new Error('Socket timed out without establishing a connection within 3000 ms'), {
      name: 'TimeoutError',
    });
    assert.equal(
      line(noConnection),
      `cannot reach DynamoDB at ${AT} (PutItem on table t): Socket timed out without establishing a connection within 3000 ms`,
    );
  });

  it('a refusal: DynamoDB code and first line; access denied names the IAM action', () => {
    assert.equal(
      line(sdkError('ResourceNotFoundException', 'Requested resource not found\nmore', 400), 'DescribeTable'),
      `DynamoDB refused DescribeTable on table t at ${AT}: ResourceNotFoundException: Requested resource not found`,
    );
    assert.equal(
      line(sdkError('AccessDeniedException', 'User is not authorized', 400), 'DeleteItem'),
      `DynamoDB refused DeleteItem on table t at ${AT}: access denied (needs dynamodb:DeleteItem): AccessDeniedException: User is not authorized`,
    );
  });

  it('throttled past the retries, a server failure, no credentials', () => {
    assert.equal(
      line(sdkError('ProvisionedThroughputExceededException', 'Rate exceeded', 400)),
      `DynamoDB throttled PutItem on table t at ${AT} past its retries: ProvisionedThroughputExceededException: Rate exceeded`,
    );
    assert.equal(
      line(sdkError('InternalServerError', 'Internal error', 500), 'Query'),
      `DynamoDB failed Query on table t at ${AT}: InternalServerError: Internal error`,
    );
    const noCredentials = Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' });
    assert.equal(
      line(noCredentials),
      `no AWS credentials for DynamoDB (PutItem on table t at ${AT}): Could not load credentials from any providers`,
    );
  });

  it('is an AwsCallError, classified once; wrapping twice keeps the first', () => {
    const err = fleetCallError(sdkError('InternalServerError', 'x', 500), 'Query', 't', AT);
    assert.ok(err instanceof AwsCallError);
    assert.equal(callErrorOf(err).kind, 'retryable');
    assert.equal(err.table, 't');
    assert.equal(err.endpoint, AT);
    assert.equal(fleetCallError(err, 'PutItem', 'other', 'elsewhere'), err);
  });

  it('knows a refused condition, and only that', () => {
    assert.ok(
      isConditionRefused(
        fleetCallError(sdkError('ConditionalCheckFailedException', 'The conditional request failed', 400), 'PutItem', 't', AT),
      ),
    );
    assert.ok(!isConditionRefused(fleetCallError(sdkError('ValidationException', 'bad', 400), 'PutItem', 't', AT)));
    assert.ok(!isConditionRefused(sdkError('ConditionalCheckFailedException', 'raw, not classified', 400)));
  });
});
