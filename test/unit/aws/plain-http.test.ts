// A plain http:// endpoint or queue URL on a host that is not this machine is warned about at start-up: the
// session token (X-Amz-Security-Token) and the messages would cross the network in clear text. SigV4 itself
// keeps the secret key off the wire ("Signing AWS API requests", https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AwsEndpoints, ServiceEndpoint } from '../../../src/aws/endpoints.ts';
import { directNetwork } from '../../../src/aws/network.ts';
import { plainHttpWarnings } from '../../../src/aws/plain-http.ts';

const aws = (service: string): ServiceEndpoint => ({ url: new URL(`https://${service}.eu-west-1.amazonaws.com`), custom: false });
const endpoints = (overrides: Partial<AwsEndpoints> = {}): AwsEndpoints => ({
  region: 'eu-west-1',
  useFips: false,
  useDualStack: false,
  sqs: aws('sqs'),
  lambda: aws('lambda'),
  cloudwatch: aws('monitoring'),
  network: directNetwork(),
  ...overrides,
});
const custom = (url: string): ServiceEndpoint => ({ url: new URL(url), custom: true });

describe('plain http warnings', () => {
  it('warns for a plain http endpoint on another host, once per service', () => {
    const remote = custom('http://localstack:4566');
    assert.deepEqual(plainHttpWarnings(endpoints({ sqs: remote, lambda: remote }), []), [
      'the sqs endpoint http://localstack:4566 is plain http on a host that is not local: the session token and the messages travel in clear text (use https)',
      'the lambda endpoint http://localstack:4566 is plain http on a host that is not local: the session token and the messages travel in clear text (use https)',
    ]);
  });

  it('stays quiet for https and for this machine (127.0.0.0/8, ::1, localhost)', () => {
    for (const url of [
      'https://proxy.example:8443',
      'http://127.0.0.1:4566',
      'http://127.8.9.1',
      'http://[::1]:4566',
      'http://localhost:9324',
      'http://sqs.localhost',
    ])
      assert.deepEqual(plainHttpWarnings(endpoints({ sqs: custom(url), lambda: custom(url), cloudwatch: custom(url) }), []), [], url);
  });

  it('warns for a plain http queue URL only where calls go to it: when SQS has no configured endpoint', () => {
    const queue = 'http://sqs.internal.example/123456789012/jobs';
    assert.deepEqual(plainHttpWarnings(endpoints(), [queue, 'jobs', queue]), [
      `the queue URL ${queue} is plain http on a host that is not local: the session token and the messages travel in clear text (use https)`,
    ]);
    assert.deepEqual(plainHttpWarnings(endpoints({ sqs: custom('https://vpce.example') }), [queue]), []);
    assert.deepEqual(plainHttpWarnings(endpoints(), ['http://127.0.0.1:4566/000000000000/jobs']), []);
  });
});
