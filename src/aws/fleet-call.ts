// What the fleet's DynamoDB adapters (src/aws/fleet-heartbeat.ts, fleet-members.ts, fleet-leave.ts, fleet-table.ts)
// send their calls through, and how a failed call reads: one line naming the table, the operation and the endpoint
// that was tried, for the log of every heartbeat round, the start-up and `workerless check`.
import type {
  DeleteItemCommandInput,
  DeleteItemCommandOutput,
  DescribeTableCommandInput,
  DescribeTableCommandOutput,
  PutItemCommandInput,
  PutItemCommandOutput,
  QueryCommandInput,
  QueryCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { AwsCallError, classifyAwsError, firstLine, unreachableReason, type ClassifiedError } from '../core/errors.ts';

/** The DynamoDB operations the fleet makes, with their input and output. */
export interface DynamoOperations {
  PutItem: { input: PutItemCommandInput; output: PutItemCommandOutput };
  Query: { input: QueryCommandInput; output: QueryCommandOutput };
  DeleteItem: { input: DeleteItemCommandInput; output: DeleteItemCommandOutput };
  DescribeTable: { input: DescribeTableCommandInput; output: DescribeTableCommandOutput };
}
export type DynamoOperation = keyof DynamoOperations;

/** One fleet's partition of one table, as the adapters reach it (src/aws/fleet-store.ts builds it). */
export interface FleetTableCalls {
  /** The table's name (--fleet-table). */
  readonly table: string;
  /** The fleet's name (--fleet-name): the partition key of each of its items. */
  readonly fleet: string;
  /** Sends one call, with the SDK's retries; a failure is thrown as a FleetCallError. */
  send<O extends DynamoOperation>(operation: O, input: DynamoOperations[O]['input']): Promise<DynamoOperations[O]['output']>;
}

/**
 * A failed DynamoDB call of the fleet, classified once (`error`, as every adapter's AwsCallError), its message one
 * line for the operator.
 */
export class FleetCallError extends AwsCallError {
  readonly table: string;
  /** The endpoint the call went to, as the message names it. */
  readonly endpoint: string;

  constructor(operation: DynamoOperation, error: ClassifiedError, table: string, endpoint: string) {
    super(operation, error);
    this.table = table;
    this.endpoint = endpoint;
    this.message = fleetCallMessage(operation, error, table, endpoint);
  }
}

/** `err` (what the SDK threw) as the FleetCallError of `operation` on `table` at `endpoint`. */
export function fleetCallError(err: unknown, operation: DynamoOperation, table: string, endpoint: string): FleetCallError {
  return err instanceof FleetCallError ? err : new FleetCallError(operation, classifyAwsError(err), table, endpoint);
}

/** DynamoDB refused the write's condition: the item was written by another process since `previous`. */
export function isConditionRefused(err: unknown): boolean {
  return err instanceof AwsCallError && err.error.code === 'ConditionalCheckFailedException';
}

/** What NodeHttpHandler puts before its timeout message; the operator needs only what follows. */
const HANDLER_PREFIX = /^@smithy\/node-http-handler - \[\w+\] /;

/**
 * The one line: unreachable (a network error or no answer in time), no credentials, access denied naming the IAM
 * action, throttled past the retries, a server failure, or any other refusal with DynamoDB's code and message.
 */
export function fleetCallMessage(operation: DynamoOperation, e: ClassifiedError, table: string, endpoint: string): string {
  const call = `${operation} on table ${table}`;
  const said = firstLine(e.message).replace(HANDLER_PREFIX, '');
  if (unreachableReason(e) !== undefined) return `cannot reach DynamoDB at ${endpoint} (${call}): ${said === '' ? e.code : said}`;
  if (e.code === 'CredentialsProviderError' || e.code === 'TokenProviderError')
    return `no AWS credentials for DynamoDB (${call} at ${endpoint}): ${said}`;
  if (/^AccessDenied(Exception)?$/.test(e.code))
    return `DynamoDB refused ${call} at ${endpoint}: access denied (needs dynamodb:${operation}): ${e.code}: ${said}`;
  if (e.kind === 'throttled') return `DynamoDB throttled ${call} at ${endpoint} past its retries: ${e.code}: ${said}`;
  if (e.kind === 'retryable') return `DynamoDB failed ${call} at ${endpoint}: ${e.code}: ${said}`;
  return `DynamoDB refused ${call} at ${endpoint}: ${e.code}: ${said}`;
}
