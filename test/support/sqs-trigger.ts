// Lambda's SQS trigger as LocalStack (with `lambda` in its services) and moto keep it: an IAM role, a function and
// its event source mapping. Neither can run the function here (test/support/lambda-endpoint/ does), which a test
// of what `workerless migrate` reads and switches does not need. Each helper builds its own clients.
import { randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import {
  CreateEventSourceMappingCommand,
  CreateFunctionCommand,
  DeleteEventSourceMappingCommand,
  GetEventSourceMappingCommand,
  LambdaClient,
  type CreateEventSourceMappingCommandInput,
} from '@aws-sdk/client-lambda';
import { localstackEndpoint, TEST_CREDENTIALS, TEST_REGION } from './aws.ts';

/** A server that keeps event source mappings: its endpoint, its account, and the command that starts it. */
export interface MappingServer {
  readonly name: 'LocalStack' | 'moto';
  readonly endpoint: string;
  readonly startCommand: string;
}

/** LocalStack with lambda in its services (LOCALSTACK_ENDPOINT) and moto (MOTO_ENDPOINT, MOTO_PORT), as scripts/test.sh starts them. */
export function mappingServers(): MappingServer[] {
  const env = (name: string) => process.env[name];
  return [
    {
      name: 'LocalStack',
      endpoint: localstackEndpoint(),
      startCommand: 'LOCALSTACK_SERVICES=sqs,cloudwatch,sts,iam,lambda localstack/localstack.sh start',
    },
    {
      name: 'moto',
      endpoint: env('MOTO_ENDPOINT') ?? `http://127.0.0.1:${env('MOTO_PORT') ?? '5055'}`,
      startCommand: 'scripts/sqs-servers.sh start moto',
    },
  ];
}

/** Throws, naming the command that starts it, unless the server answers ListEventSourceMappings. */
export async function ensureMappingServer(server: MappingServer): Promise<void> {
  try {
    await lambdaAt(server.endpoint).send(new (await import('@aws-sdk/client-lambda')).ListEventSourceMappingsCommand({}));
  } catch (error) {
    throw new Error(
      `${server.name} does not answer ListEventSourceMappings at ${server.endpoint} (${(error as Error).message}). Start it with: ${server.startCommand}`,
    );
  }
}

export function lambdaAt(endpoint: string): LambdaClient {
  return new LambdaClient({ endpoint, region: TEST_REGION, credentials: TEST_CREDENTIALS, maxAttempts: 1 });
}

/** Creates a role and a function named `name-<8 hex>` (a zip holding one index.js), returns its name. */
export async function createFunction(endpoint: string, prefix: string): Promise<string> {
  const name = `${prefix}-${randomUUID().slice(0, 8)}`;
  const roleArn = await createRole(endpoint, `${name}-role`);
  await lambdaAt(endpoint).send(
    new CreateFunctionCommand({
      FunctionName: name,
      Runtime: 'nodejs22.x',
      Handler: 'index.handler',
      Role: roleArn,
      Code: { ZipFile: zipOf('index.js', 'exports.handler = async () => {};\n') },
    }),
  );
  return name;
}

/**
 * IAM CreateRole (a Query-protocol call, sent as a form: the project has no IAM client, and neither server checks
 * signatures); returns the role's ARN. moto's CreateFunction needs the role to exist.
 */
async function createRole(endpoint: string, roleName: string): Promise<string> {
  const policy = JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }],
  });
  const response = await fetch(`${endpoint}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `AWS4-HMAC-SHA256 Credential=${TEST_CREDENTIALS.accessKeyId}/20260101/${TEST_REGION}/iam/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body: new URLSearchParams({ Action: 'CreateRole', Version: '2010-05-08', RoleName: roleName, AssumeRolePolicyDocument: policy }),
  });
  const xml = await response.text();
  const arn = /<Arn>([^<]+)<\/Arn>/.exec(xml)?.[1];
  if (!response.ok || arn === undefined) throw new Error(`CreateRole ${roleName} answered HTTP ${response.status}: ${xml.slice(0, 300)}`);
  return arn;
}

/** CreateEventSourceMapping for the function and queue, with the given settings; returns its UUID. */
export async function createMapping(
  endpoint: string,
  input: Omit<CreateEventSourceMappingCommandInput, 'FunctionName' | 'EventSourceArn'> & { functionName: string; queueArn: string },
): Promise<string> {
  const { functionName, queueArn, ...settings } = input;
  const out = await lambdaAt(endpoint).send(
    new CreateEventSourceMappingCommand({ FunctionName: functionName, EventSourceArn: queueArn, ...settings }),
  );
  return out.UUID!;
}

/** The mapping's State (Enabled, Disabling, Disabled, Enabling...). */
export async function mappingState(endpoint: string, uuid: string): Promise<string | undefined> {
  return (await lambdaAt(endpoint).send(new GetEventSourceMappingCommand({ UUID: uuid }))).State;
}

/** DeleteEventSourceMapping: an enabled mapping keeps LocalStack's poller reading its queue. */
export async function deleteMapping(endpoint: string, uuid: string): Promise<void> {
  await lambdaAt(endpoint).send(new DeleteEventSourceMappingCommand({ UUID: uuid }));
}

/** A zip archive of one stored (uncompressed) file: what CreateFunction's ZipFile takes (APPNOTE.TXT 4.3). */
function zipOf(fileName: string, content: string): Uint8Array {
  const name = Buffer.from(fileName);
  const data = Buffer.from(content);
  const crc = crc32(data);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(name.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(name.length, 28);
  const centralOffset = local.length + name.length + data.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + name.length, 12);
  end.writeUInt32LE(centralOffset, 16);
  return Buffer.concat([local, name, data, central, name, end]);
}
