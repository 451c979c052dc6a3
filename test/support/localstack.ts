// Integration tests need a running LocalStack; this fails fast with the command that starts it.
import { localstackEndpoint } from './aws.ts';

const REQUIRED_SERVICES = ['sqs', 'cloudwatch'] as const;

/** Why LocalStack is not usable, or undefined when it is. */
async function problem(endpoint: string): Promise<string | undefined> {
  let body: { services?: Record<string, string> };
  try {
    const response = await fetch(`${endpoint}/_localstack/health`, { signal: AbortSignal.timeout(3000) });
    if (!response.ok) return `health check answered HTTP ${response.status}`;
    body = (await response.json()) as { services?: Record<string, string> };
  } catch (error) {
    return `health check failed: ${(error as Error).message}`;
  }
  const down = REQUIRED_SERVICES.filter((s) => !['available', 'running'].includes(body.services?.[s] ?? ''));
  return down.length === 0 ? undefined : `services not available: ${down.map((s) => `${s}=${body.services?.[s] ?? 'missing'}`).join(', ')}`;
}

/** True when LocalStack answers at localstackEndpoint() with SQS and CloudWatch available. */
export async function localStackAvailable(): Promise<boolean> {
  return (await problem(localstackEndpoint())) === undefined;
}

/** Throws a clear error (with the command to run) unless LocalStack is up with SQS and CloudWatch. */
export async function ensureLocalStack(): Promise<void> {
  const endpoint = localstackEndpoint();
  const reason = await problem(endpoint);
  if (reason !== undefined) {
    throw new Error(
      `LocalStack is not usable at ${endpoint} (${reason}). Start it with: localstack/localstack.sh start ` +
        '(or set LOCALSTACK_ENDPOINT to a running one).',
    );
  }
}
