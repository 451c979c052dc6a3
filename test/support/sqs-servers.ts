// The SQS implementations the conformance tests run against: LocalStack (localstack/localstack.sh) and two that
// neither we nor LocalStack wrote, ElasticMQ and moto (scripts/sqs-servers.sh). Each is found at an endpoint
// from the environment, so a test run can point at other instances.
import { localstackEndpoint } from './aws.ts';

export interface SqsServer {
  /** The implementation's name, as the test names say it. */
  readonly name: 'LocalStack' | 'ElasticMQ' | 'moto';
  readonly endpoint: string;
  /** The command that starts it, for the error when it does not answer. */
  readonly startCommand: string;
}

/** LocalStack, ElasticMQ and moto (ELASTICMQ_ENDPOINT, MOTO_ENDPOINT; defaults as scripts/sqs-servers.sh). */
export function sqsServers(): SqsServer[] {
  const env = (name: string, fallback: string) => process.env[name] ?? fallback;
  return [
    { name: 'LocalStack', endpoint: localstackEndpoint(), startCommand: 'localstack/localstack.sh start' },
    {
      name: 'ElasticMQ',
      endpoint: env('ELASTICMQ_ENDPOINT', `http://127.0.0.1:${env('ELASTICMQ_PORT', '9324')}`),
      startCommand: 'scripts/sqs-servers.sh start elasticmq',
    },
    {
      name: 'moto',
      endpoint: env('MOTO_ENDPOINT', `http://127.0.0.1:${env('MOTO_PORT', '5055')}`),
      startCommand: 'scripts/sqs-servers.sh start moto',
    },
  ];
}

/**
 * Throws a clear error (with the command to run) unless the server answers an SQS ListQueues. A server that is
 * not running fails its tests: a conformance run that skipped an implementation would pass silently.
 */
export async function ensureSqsServer(server: SqsServer): Promise<void> {
  let problem: string | undefined;
  try {
    // Unsigned: none of the three checks signatures, and this only asks whether SQS answers at all.
    const response = await fetch(`${server.endpoint}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.ListQueues' },
      body: '{}',
      signal: AbortSignal.timeout(3000),
    });
    await response.arrayBuffer();
    if (!response.ok) problem = `ListQueues answered HTTP ${response.status}`;
  } catch (error) {
    problem = `ListQueues failed: ${(error as Error).message}`;
  }
  if (problem !== undefined) {
    throw new Error(`${server.name} is not usable at ${server.endpoint} (${problem}). Start it with: ${server.startCommand}`);
  }
}
