// The synthesized template: the container as deploy/ecs/ describes it, cdk-nag's AwsSolutions pack with every
// finding acknowledged in code, cfn-lint (AWS CloudFormation Linter) on the construct's and the example's templates.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { WorkerlessExampleStack } from '../../examples/cdk/stack.ts';
import { cfnLint, docsExample, ENV } from './support.ts';

const TASK_DEFINITION = JSON.parse(readFileSync(new URL('../../deploy/ecs/task-definition.json', import.meta.url), 'utf8')) as {
  containerDefinitions: [{ healthCheck: { command: string[] }; linuxParameters: unknown; stopTimeout: number }];
};

/** Every option the construct offers at once: destination, Temporal with its key, a fleet's table, alarms, autoscaling. */
function fullStack(app: App): Stack {
  const stack = new Stack(app, 'Full', { env: ENV });
  docsExample(stack, {
    failureDestination: sqs.Queue.fromQueueArn(stack, 'Dest', 'arn:aws:sqs:us-east-1:123456789012:payments-failed'),
    temporalTaskQueues: 'orders',
    temporalAddress: 'orders.a1b2c.tmprl.cloud:7233',
    temporalNamespace: 'orders.a1b2c',
    temporalFunction: lambda.Function.fromFunctionArn(stack, 'Worker', 'arn:aws:lambda:us-east-1:123456789012:function:worker:live'),
    temporalApiKey: secretsmanager.Secret.fromSecretNameV2(stack, 'ApiKey', 'workerless/temporal-api-key'),
    fleetTable: {},
    fleetConcurrency: 30,
    alarms: {},
    autoscaling: { maxTasks: 4, backlogPerTask: 100 },
  });
  return stack;
}

/** Synthesizes with cdk-nag's AwsSolutions pack as a validation plugin: any unacknowledged finding throws. */
function synthWithNag(app: App): string {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return app.synth().directory;
}

describe('the template', () => {
  it('runs the container as deploy/ecs/task-definition.json does: read-only root, no capability, non-root, /healthz, 120 s drain', () => {
    const template = Template.fromStack(fullStack(new App()));
    const ecsContainer = TASK_DEFINITION.containerDefinitions[0];
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      RequiresCompatibilities: ['FARGATE'],
      Volumes: [{ Name: 'tmp' }],
      ContainerDefinitions: [
        Match.objectLike({
          ReadonlyRootFilesystem: true,
          User: '1000',
          StopTimeout: ecsContainer.stopTimeout,
          LinuxParameters: Match.objectLike({ Capabilities: { Drop: ['ALL'] } }),
          MountPoints: [{ ContainerPath: '/tmp', ReadOnly: false, SourceVolume: 'tmp' }],
          HealthCheck: Match.objectLike({ Command: ecsContainer.healthCheck.command }),
          PortMappings: [{ ContainerPort: 8080, Name: 'http', Protocol: 'tcp' }],
          Secrets: [{ Name: 'WORKERLESS_TEMPORAL_API_KEY', ValueFrom: Match.anyValue() }],
          Environment: Match.not(Match.arrayWith([Match.objectLike({ Name: 'WORKERLESS_TEMPORAL_API_KEY' })])),
        }),
      ],
    });
  });

  it('lets the execution role, not the task role, read the Temporal API key secret', () => {
    const template = Template.fromStack(fullStack(new App()));
    const policies = template.findResources('AWS::IAM::Policy');
    const actionsOf = (prefix: string) => JSON.stringify(Object.entries(policies).find(([id]) => id.startsWith(prefix))?.[1]);
    assert.match(actionsOf('WorkerlessTaskDefinitionExecutionRoleDefaultPolicy'), /secretsmanager:GetSecretValue/);
    assert.doesNotMatch(actionsOf('WorkerlessTaskRoleDefaultPolicy'), /secretsmanager/);
  });

  it("warns at synth when the drain cannot end before Fargate's SIGKILL (shutdownTimeout + pollFor > 120 s)", () => {
    const warnings = (props: Parameters<typeof docsExample>[1]) => {
      const stack = new Stack(new App(), 'Drain', { env: ENV });
      docsExample(stack, props);
      return Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('stopTimeout'));
    };
    assert.equal(warnings({ shutdownTimeout: 85 }).length, 0);
    assert.equal(warnings({ shutdownTimeout: 101 }).length, 1);
  });

  it('admits nothing: the security group has no ingress rule (the HTTP port has no authentication)', () => {
    const template = Template.fromStack(fullStack(new App()));
    template.resourceCountIs('AWS::EC2::SecurityGroupIngress', 0);
    const groups = Object.values(template.findResources('AWS::EC2::SecurityGroup'));
    assert.equal(groups.length, 1);
    assert.equal((groups[0] as { Properties: Record<string, unknown> }).Properties['SecurityGroupIngress'], undefined);
  });

  it("alarms on the dashboards' metrics and scales on visible messages per running task", () => {
    const template = Template.fromStack(fullStack(new App()));
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'FunctionPaused',
      Namespace: 'Workerless-default',
      Dimensions: [{ Name: 'Function', Value: 'arn:aws:lambda:us-east-1:123456789012:function:my-fn:live' }],
    });
    for (const metric of [
      'ThrottledInvokeCount',
      'OnFailureDestinationDeliveredEventCount',
      'OnFailureDestinationDeliveryFailedEventCount',
    ]) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Metrics: Match.arrayWith([
          Match.objectLike({ MetricStat: Match.objectLike({ Metric: Match.objectLike({ MetricName: metric }) }) }),
        ]),
      });
    }
    template.resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { MetricName: 'ApproximateAgeOfOldestMessage' }, 2);
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalingPolicy', {
      TargetTrackingScalingPolicyConfiguration: Match.objectLike({
        TargetValue: 100,
        CustomizedMetricSpecification: {
          Metrics: Match.arrayWith([Match.objectLike({ Id: 'backlogPerTask', Expression: '(q0 + q1) / tasks' })]),
        },
      }),
    });
    template.hasResourceProperties('AWS::ECS::Cluster', { ClusterSettings: [{ Name: 'containerInsights', Value: 'enabled' }] });
  });

  it('passes cdk-nag AwsSolutions with every finding acknowledged in code, and cfn-lint', () => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'workerless-cdk-')) });
    fullStack(app);
    const dir = synthWithNag(app);
    const lint = cfnLint(join(dir, 'Full.template.json'));
    assert.equal(lint.status, 0, lint.out);
  });

  it('keeps the example app (examples/cdk) free of findings, offline: its image asset is staged, not built', () => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'workerless-cdk-')) });
    // Env-agnostic, as `cdk synth` without credentials makes it: the AZs stay Fn::GetAZs.
    new WorkerlessExampleStack(app, 'Example');
    const dir = synthWithNag(app);
    const assets = JSON.parse(readFileSync(join(dir, 'Example.assets.json'), 'utf8')) as {
      dockerImages: Record<string, { source: { directory: string } }>;
    };
    const images = Object.values(assets.dockerImages);
    assert.equal(images.length, 1);
    assert.ok(existsSync(join(dir, images[0]!.source.directory, 'Dockerfile')), 'the Dockerfile is staged with its context');
    // The task role receives from both of the example's queues, each by its own ARN.
    const template = JSON.parse(readFileSync(join(dir, 'Example.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const policy = Object.entries(template.Resources).find(([id]) => id.startsWith('WorkerlessTaskRoleDefaultPolicy'))![1];
    const receive = (
      policy.Properties['PolicyDocument'] as { Statement: { Sid: string; Resource: { 'Fn::GetAtt': [string, string] }[] }[] }
    ).Statement.find((s) => s.Sid === 'ReceiveAndSettle')!;
    const queueIds = receive.Resource.map((r) => r['Fn::GetAtt'][0]);
    assert.equal(new Set(queueIds).size, 2);
    for (const id of queueIds) assert.equal(template.Resources[id]?.Type, 'AWS::SQS::Queue', id);
    const lint = cfnLint(join(dir, 'Example.template.json'));
    assert.equal(lint.status, 0, lint.out);
  });

  it('fails cfn-lint on a broken template (the linter is really run)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'workerless-cdk-'));
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, JSON.stringify({ Resources: { Q: { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: 'soon' } } } }));
    assert.notEqual(cfnLint(broken).status, 0);
  });
});
