import { App, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Workerless, type WorkerlessProps } from '../src/index.ts';

/** A fixed account and region: synthesis needs no credentials and ARNs come out literal. */
export const ENV = { account: '123456789012', region: 'us-east-1' } as const;

/** An image URI: no asset to stage. */
export const IMAGE = ecs.ContainerImage.fromRegistry('123456789012.dkr.ecr.us-east-1.amazonaws.com/workerless:0.1.0');

export function testStack(): Stack {
  return new Stack(new App(), 'Test', { env: ENV });
}

/** A VPC without resources of its own, so the template holds the construct's resources only. */
export function importedVpc(stack: Stack): ec2.IVpc {
  return ec2.Vpc.fromVpcAttributes(stack, 'Vpc', {
    vpcId: 'vpc-0123456789abcdef0',
    availabilityZones: ['us-east-1a', 'us-east-1b'],
    privateSubnetIds: ['subnet-0123456789abcdef0', 'subnet-0123456789abcdef1'],
  });
}

/** The docs' example (docs/deployment.md, "IAM permissions"): my-fn:live, the queues payments and default. */
export function docsExample(stack: Stack, props: Partial<WorkerlessProps> = {}): Workerless {
  return new Workerless(stack, 'Workerless', {
    function: lambda.Function.fromFunctionArn(stack, 'Fn', 'arn:aws:lambda:us-east-1:123456789012:function:my-fn:live'),
    queues: [
      sqs.Queue.fromQueueArn(stack, 'Payments', 'arn:aws:sqs:us-east-1:123456789012:payments'),
      sqs.Queue.fromQueueArn(stack, 'Default', 'arn:aws:sqs:us-east-1:123456789012:default'),
    ],
    vpc: importedVpc(stack),
    image: IMAGE,
    ...props,
  });
}
