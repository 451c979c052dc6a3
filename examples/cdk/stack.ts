import { Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
// In your own app, import the construct from where you keep this repository's cdk/ folder.
import { Workerless } from '../../cdk/src/index.ts';

/**
 * Two queues (payments first, then bulk), each with its DLQ, a function, a failure destination, and workerless
 * in front of them on Fargate with its alarms and backlog autoscaling. `cdk synth` needs no account: see README.md.
 */
export class WorkerlessExampleStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);

    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: 1,
      flowLogs: { all: { trafficType: ec2.FlowLogTrafficType.REJECT } },
    });

    const fn = new lambda.Function(this, 'Handler', {
      runtime: lambda.Runtime.NODEJS_LATEST,
      handler: 'index.handler',
      // A stand-in for your function: it answers every batch with no failures.
      code: lambda.Code.fromInline('exports.handler = async () => ({ batchItemFailures: [] });'),
      timeout: Duration.seconds(30),
    });
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason: "the stand-in function's role only writes its own logs; your function brings its own role",
    });

    const queue = (name: string) => {
      const dlq = new sqs.Queue(this, `${name}Dlq`, { enforceSSL: true, retentionPeriod: Duration.days(14) });
      return new sqs.Queue(this, name, {
        enforceSSL: true,
        // At least the function's timeout (AWS recommends 6x): a second receive starts after the first run ended.
        visibilityTimeout: Duration.minutes(3),
        deadLetterQueue: { queue: dlq, maxReceiveCount: 5 },
      });
    };
    const payments = queue('Payments');
    const bulk = queue('Bulk');
    // The end of the line for a message that failed its last receive: people read it, no consumer that could fail.
    const failures = new sqs.Queue(this, 'Failures', { enforceSSL: true, retentionPeriod: Duration.days(14) });
    Validations.of(failures).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SQS3',
      reason: 'the failure destination is itself the last stop of failed messages (with their reason); a DLQ behind it would hold nothing',
    });

    new Workerless(this, 'Workerless', {
      vpc,
      function: fn,
      queues: [payments, bulk],
      failureDestination: failures,
      // The daemon's own options, typed; a wrong value stops `cdk synth` with its name.
      name: 'example',
      concurrency: 10,
      batchSize: 10,
      batchWindow: '2s',
      shutdownTimeout: 85,
      alarms: {},
      autoscaling: { minTasks: 1, maxTasks: 4, backlogPerTask: 100 },
    });
  }
}
