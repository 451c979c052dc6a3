// Spillover's Event invocations read the SQS path's Lambda error classification (src/invoke/lambda-errors.ts),
// through the SDK's own client (aws-sdk-client-mock replaces only the transport's answer).
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import {
  InvokeCommand,
  LambdaClient,
  ResourceConflictException,
  ResourceNotFoundException,
  ServiceException,
  SnapStartNotReadyException,
  TooManyRequestsException,
} from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { createLambdaWorkerInvoker, type WorkerInvocationPayload } from '../../../src/temporal/worker-invoker.ts';

const payload: WorkerInvocationPayload = {
  source: 'workerless.temporal-spillover',
  namespace: 'default',
  taskQueue: 'tq',
  requestedAt: 0,
  expiresAt: 1,
  startBy: 1,
};
const meta = (status: number) => ({ $metadata: { httpStatusCode: status } });

describe('createLambdaWorkerInvoker', () => {
  const lambda = mockClient(LambdaClient);
  afterEach(() => lambda.reset());
  const invoke = () =>
    createLambdaWorkerInvoker(new LambdaClient({ region: 'us-east-1' })).invoke('fn', payload, new AbortController().signal);

  it('invokes with InvocationType Event and returns the request id', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 202, $metadata: { requestId: 'r-1' } });
    assert.deepEqual(await invoke(), { kind: 'invoked', requestId: 'r-1' });
    assert.equal(lambda.commandCalls(InvokeCommand)[0]?.args[0].input.InvocationType, 'Event');
  });

  const cases: [string, Error, string][] = [
    ['TooManyRequestsException (429)', new TooManyRequestsException({ message: 'Rate Exceeded.', ...meta(429) }), 'throttled'],
    [
      // AWS Lambda Developer Guide, "Lambda function states": Pending; passes without anyone acting.
      'ResourceConflictException (409, Pending)',
      new ResourceConflictException({ message: 'The function is currently in the following state: Pending', ...meta(409) }),
      'failed',
    ],
    [
      // AWS Lambda Developer Guide, "Troubleshooting SnapStart errors": wait until the version is Active.
      'SnapStartNotReadyException (409)',
      new SnapStartNotReadyException({ message: 'Lambda is initializing your function.', ...meta(409) }),
      'failed',
    ],
    ['ServiceException (500)', new ServiceException({ message: 'x', ...meta(500) }), 'failed'],
    ['ResourceNotFoundException (404)', new ResourceNotFoundException({ message: 'Function not found', ...meta(404) }), 'refused'],
  ];
  for (const [name, err, kind] of cases) {
    it(`${name}: ${kind}`, async () => {
      lambda.on(InvokeCommand).rejects(err);
      const outcome = await invoke();
      assert.equal(outcome.kind, kind);
      assert.equal(outcome.kind !== 'invoked' && outcome.kind !== 'interrupted' && outcome.code, err.name);
    });
  }

  it('an aborted call (shutdown) is interrupted, not a failure', async () => {
    lambda.on(InvokeCommand).rejects(Object.assign(new Error('aborted'), { name: 'AbortError' }));
    const stop = new AbortController();
    stop.abort();
    const outcome = await createLambdaWorkerInvoker(new LambdaClient({ region: 'us-east-1' })).invoke('fn', payload, stop.signal);
    assert.deepEqual(outcome, { kind: 'interrupted' });
  });
});
