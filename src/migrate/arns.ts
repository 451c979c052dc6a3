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

/**
 * Whether a mapping's FunctionArn is the function the caller named (name, name:qualifier, partial or full ARN): the
 * same name, and the same qualifier when the caller gave one. Lambda's ListEventSourceMappings answers only the
 * function's mappings; LocalStack 4.13 also answers those of every function whose name starts with it, and a
 * cut-over must never disable another function's trigger.
 */
export function isFunction(requested: string, functionArn: string): boolean {
  const arn = parseFunctionArn(functionArn);
  const ref = parseFunctionRef(requested);
  if (arn === undefined || ref === undefined) return false;
  const q = ref.qualifier;
  return arn.name === ref.name && (q === undefined || arn.qualifier === q || (q === '$LATEST' && arn.qualifier === undefined));
}

/** A function as the daemon and Lambda's FunctionName take it (name, name:qualifier, partial or full ARN): its name and qualifier. */
export function parseFunctionRef(ref: string): { readonly name: string; readonly qualifier?: string | undefined } | undefined {
  const m =
    /^(?:arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:|\d{12}:function:)?([a-zA-Z0-9_-]{1,64})(?::([a-zA-Z0-9$_-]{1,128}))?$/.exec(
      ref,
    );
  return m ? { name: m[1]!, qualifier: m[2] } : undefined;
}
