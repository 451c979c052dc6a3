/** The parts of the ARNs a mapping names (Lambda and SQS ARN formats, "Amazon Resource Names" in the IAM guide). */

export interface QueueArn {
  readonly region: string;
  readonly account: string;
  readonly name: string;
}

export interface FunctionArn {
  readonly region: string;
  readonly account: string;
  readonly name: string;
  /** The alias or version, when the ARN is qualified. */
  readonly qualifier?: string | undefined;
}

/** arn:aws:sqs:us-east-1:123456789012:orders; undefined for any other ARN (Kinesis, DynamoDB, Kafka, MQ...). */
export function parseQueueArn(arn: string): QueueArn | undefined {
  const m = /^arn:aws[a-zA-Z-]*:sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_-]{1,80}(\.fifo)?)$/.exec(arn);
  return m ? { region: m[1]!, account: m[2]!, name: m[3]! } : undefined;
}

/** arn:aws:lambda:us-east-1:123456789012:function:my-fn[:qualifier]. */
export function parseFunctionArn(arn: string): FunctionArn | undefined {
  const m = /^arn:aws[a-zA-Z-]*:lambda:([a-z0-9-]+):(\d{12}):function:([a-zA-Z0-9_-]{1,64})(?::([a-zA-Z0-9$_-]{1,128}))?$/.exec(arn);
  return m ? { region: m[1]!, account: m[2]!, name: m[3]!, qualifier: m[4] } : undefined;
}
