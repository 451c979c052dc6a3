/**
 * The task role's policy, as docs/deployment.md ("IAM permissions") states it: one statement per need, each
 * naming exact ARNs. Pure (plain strings in, plain statements out) so test/docs-policy.test.ts can hold the page's
 * example to it. Tokens pass through as strings; CDK resolves them in the template.
 */
export interface PolicyStatementSpec {
  readonly sid: string;
  readonly actions: readonly string[];
  readonly resources: readonly string[];
  readonly conditions?: Readonly<Record<string, Readonly<Record<string, string>>>>;
}

export interface TaskPolicyInput {
  /** ARNs of the queues the daemon receives from. */
  readonly queueArns: readonly string[];
  /** ARNs of the customer managed KMS keys of encrypted source queues (receiving decrypts). */
  readonly queueKeyArns: readonly string[];
  /** ARNs the daemon invokes, qualifier included: the function, and the Temporal worker function. */
  readonly functionArns: readonly string[];
  /** The failure destination: an SQS queue or an SNS topic, and its customer managed key when encrypted. */
  readonly failureDestination?: { readonly kind: 'sqs' | 'sns'; readonly arn: string; readonly keyArn?: string };
  /** Workerless-<--name>, or undefined with --metrics off. */
  readonly metricsNamespace?: string;
  /** ARN of the fleet's DynamoDB table (--fleet-table), or undefined without a fleet. */
  readonly fleetTableArn?: string;
}

/** The actions of receiving from and settling messages on a queue. DeleteMessageBatch and ChangeMessageVisibilityBatch are authorised by the single-message actions. */
export const RECEIVE_ACTIONS = [
  'sqs:ReceiveMessage',
  'sqs:DeleteMessage',
  'sqs:ChangeMessageVisibility',
  'sqs:GetQueueUrl',
  'sqs:GetQueueAttributes',
] as const;

/**
 * What a fleet's replica does on its table, and nothing more (src/aws/fleet-*.ts): DescribeTable at start-up (the
 * key schema), PutItem for its heartbeat, Query for the members, DeleteItem when it leaves. `workerless check`
 * proves the same four (src/check/fleet-check.ts).
 */
export const FLEET_TABLE_ACTIONS = ['dynamodb:DescribeTable', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:DeleteItem'] as const;

export function taskPolicy(input: TaskPolicyInput): PolicyStatementSpec[] {
  const statements: PolicyStatementSpec[] = [];
  if (input.queueArns.length > 0) statements.push({ sid: 'ReceiveAndSettle', actions: RECEIVE_ACTIONS, resources: input.queueArns });
  if (input.functionArns.length > 0) {
    statements.push({ sid: 'InvokeTheFunction', actions: ['lambda:InvokeFunction'], resources: input.functionArns });
  }
  if (input.metricsNamespace !== undefined) {
    // PutMetricData has no resource ARN; the namespace condition is what keeps the role to its own metrics.
    statements.push({
      sid: 'Metrics',
      actions: ['cloudwatch:PutMetricData'],
      resources: ['*'],
      conditions: { StringEquals: { 'cloudwatch:namespace': input.metricsNamespace } },
    });
  }
  if (input.fleetTableArn !== undefined) {
    // The table's ARN only: the Query reads the table itself, never an index.
    statements.push({ sid: 'FleetTable', actions: FLEET_TABLE_ACTIONS, resources: [input.fleetTableArn] });
  }
  const dest = input.failureDestination;
  if (dest !== undefined) {
    statements.push({
      sid: 'FailureDestination',
      actions: [dest.kind === 'sqs' ? 'sqs:SendMessage' : 'sns:Publish'],
      resources: [dest.arn],
    });
  }
  // Receiving from a queue under SSE-KMS decrypts with its key; sending to an encrypted destination also makes a
  // data key ("Key management", Amazon SQS Developer Guide; "Securing Amazon SNS data with server-side encryption").
  if (input.queueKeyArns.length > 0) {
    statements.push({ sid: 'DecryptQueues', actions: ['kms:Decrypt'], resources: [...new Set(input.queueKeyArns)] });
  }
  if (dest?.keyArn !== undefined) {
    statements.push({ sid: 'EncryptFailureDestination', actions: ['kms:GenerateDataKey', 'kms:Decrypt'], resources: [dest.keyArn] });
  }
  return statements;
}
