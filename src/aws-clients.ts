import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Config } from './config.ts';

export interface AwsClients {
  readonly sqs: SQSClient;
  readonly lambda: LambdaClient;
  readonly cloudwatch: CloudWatchClient;
  /** Releases every client's sockets. */
  readonly destroy: () => void;
}

/**
 * The SDK clients, built one way for a run and for `workerless check`, so the check proves what a run will do.
 * `env`: the process environment, read only to learn whether SQS has a custom endpoint.
 */
export function createAwsClients(config: Pick<Config, 'region' | 'endpointUrl'>, env: NodeJS.ProcessEnv, maxSockets = 50): AwsClients {
  const base = { region: config.region, ...(config.endpointUrl ? { endpoint: config.endpointUrl } : {}) };
  const requestHandler = { httpAgent: { keepAlive: true, maxSockets }, httpsAgent: { keepAlive: true, maxSockets } };
  // With a custom endpoint (LocalStack, ElasticMQ) the queue URLs' hosts may not resolve: always talk to the
  // endpoint. On AWS the SDK sends each call to its queue URL's host, which serves cross-region queue URLs.
  const customSqsEndpoint = Boolean(config.endpointUrl || env['AWS_ENDPOINT_URL_SQS'] || env['AWS_ENDPOINT_URL']);
  const sqs = new SQSClient({ ...base, requestHandler, useQueueUrlAsEndpoint: !customSqsEndpoint });
  // Our own loop retries invocations (and knows when a retry is safe), so the SDK must not retry them too.
  const lambda = new LambdaClient({ ...base, requestHandler, maxAttempts: 1 });
  const cloudwatch = new CloudWatchClient(base);
  return {
    sqs,
    lambda,
    cloudwatch,
    destroy: () => {
      sqs.destroy();
      lambda.destroy();
      cloudwatch.destroy();
    },
  };
}
