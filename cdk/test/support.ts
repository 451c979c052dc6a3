import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
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

export type Statement = Record<string, unknown>;

/** The statements of the task role's policy, as synthesized. */
export function taskStatements(stack: Stack): Statement[] {
  const policies = Template.fromStack(stack).findResources('AWS::IAM::Policy');
  const entry = Object.entries(policies).find(([id]) => id.startsWith('WorkerlessTaskRoleDefaultPolicy'));
  assert.ok(entry, 'the task role has a policy');
  return (entry[1] as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument.Statement;
}

const CFN_LINT =
  process.env['WORKERLESS_CFN_LINT'] ??
  join(process.env['WORKERLESS_CACHE_DIR'] ?? join(process.env['HOME'] ?? '', '.cache/workerless'), 'cfn-lint-venv/bin/cfn-lint');

/** cfn-lint (AWS CloudFormation Linter) on a template file: its exit code and what it printed. */
export function cfnLint(template: string): { status: number | null; out: string } {
  assert.ok(existsSync(CFN_LINT), `cfn-lint not found at ${CFN_LINT}: run scripts/cfn-lint.sh ensure`);
  // W3005: CDK adds DependsOn on a Lambda function's role beside its GetAtt; redundant, not wrong.
  const r = spawnSync(CFN_LINT, ['--ignore-checks', 'W3005', '--', template], { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}
