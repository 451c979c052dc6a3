import { fileURLToPath } from 'node:url';
import { Annotations, Duration, Stack, Token, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { workerlessAlarms, type WorkerlessAlarmProps } from './alarms.ts';
import { backlogScaling, type WorkerlessScalingProps } from './autoscaling.ts';
import { defaultOf } from '../../src/config/options.ts';
import { daemonEnvironment, HTTP_PORT, type SetValue, type WorkerlessOptions } from './daemon-environment.ts';
import { createFleetTable, isTable, type WorkerlessFleetTableProps } from './fleet-table.ts';
import { taskPolicy } from './task-policy.ts';

/** A queue to receive from, with its weight (`a:3,b:1`); without weights the queues are read in the order given. */
export interface WorkerlessQueue {
  readonly queue: sqs.IQueue;
  readonly weight?: number;
}

export interface WorkerlessProps extends WorkerlessOptions {
  /** The function to invoke; an alias or version is invoked (and granted) by its qualified ARN. */
  readonly function: lambda.IFunction;
  /** The queues, in priority order, or each with a weight. */
  readonly queues: readonly (sqs.IQueue | WorkerlessQueue)[];
  /** Where a message failing on its last allowed receive is sent before it is deleted (`--failure-destination`). */
  readonly failureDestination?: sqs.IQueue | sns.ITopic;
  /** The Temporal worker function (`--temporal-function`), with the other temporal* options. */
  readonly temporalFunction?: lambda.IFunction;
  /** The Temporal Cloud API key (`WORKERLESS_TEMPORAL_API_KEY`), passed as an ECS secret, never in the environment. */
  readonly temporalApiKey?: secretsmanager.ISecret;
  /**
   * The fleet's table (`--fleet-table`, docs/fleet.md): an existing table, or `{}` (or a name) to create one keyed
   * `fleet` + `member`, on demand, with TTL on `expiresAt`. The tasks then share the idle polls and
   * `fleetConcurrency`; the task role gets DescribeTable, PutItem, Query and DeleteItem on it. Default: no fleet.
   */
  readonly fleetTable?: dynamodb.ITable | WorkerlessFleetTableProps;

  /** The VPC of the service's tasks (they need a route to SQS, Lambda and CloudWatch: NAT or VPC endpoints). */
  readonly vpc: ec2.IVpc;
  /** Subnets of the tasks. Default: the VPC's private subnets. */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /** An existing cluster. Default: a new one with Container Insights (the autoscaling reads its RunningTaskCount). */
  readonly cluster?: ecs.ICluster;
  /** The image. Default: built from this repository's Dockerfile as an image asset (`cdk deploy` needs Docker). */
  readonly image?: ecs.ContainerImage;
  /** Default: 256 (.25 vCPU). */
  readonly cpu?: number;
  /** Default: 512. */
  readonly memoryLimitMiB?: number;
  /** Default: X86_64. */
  readonly cpuArchitecture?: ecs.CpuArchitecture;
  /** Tasks to run when no autoscaling is given. Default: 1. */
  readonly desiredCount?: number;
  /** Default: one month. */
  readonly logRetention?: logs.RetentionDays;
  /** Alarms on the daemon's metrics and the queues' age. Default: none. */
  readonly alarms?: WorkerlessAlarmProps;
  /** Scale the service on visible messages per running task. Default: a fixed desiredCount. */
  readonly autoscaling?: WorkerlessScalingProps;
}

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Fargate's longest stopTimeout: the drain has this long after SIGTERM (deploy/ecs/README.md, "Shutdown"). */
const STOP_TIMEOUT = Duration.seconds(120);
/** The image has no curl: node fetches /healthz, 4 s inside the check's 5 s (deploy/ecs/task-definition.json). */
const HEALTH_CHECK =
  "fetch('http://127.0.0.1:'+process.env.WORKERLESS_HTTP_PORT+'/healthz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))";

function isQueue(x: sqs.IQueue | sns.ITopic): x is sqs.IQueue {
  return 'queueArn' in x;
}

/** A token's placeholder for validation: a literal when CDK knows it, else a made-up value of the right shape. */
function literal(value: string, placeholder: string): SetValue {
  return { value, placeholder: Token.isUnresolved(value) ? placeholder : value };
}

/** The queue's name when the template fixes it (an imported queue, or `queueName` given), else undefined. */
function knownName(queue: sqs.IQueue): string | undefined {
  if (!Token.isUnresolved(queue.queueName)) return queue.queueName;
  const cfn = queue.node.defaultChild;
  const name = cfn instanceof sqs.CfnQueue ? cfn.queueName : undefined;
  return name !== undefined && !Token.isUnresolved(name) ? name : undefined;
}

/**
 * workerless on ECS Fargate, as deploy/ecs/README.md describes it: a service of one-container tasks with a
 * read-only root, every capability dropped, the /healthz check and a 120 s drain; a task role with exactly the
 * grants of docs/deployment.md ("IAM permissions"); a security group that admits nothing.
 */
export class Workerless extends Construct {
  readonly service: ecs.FargateService;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly taskRole: iam.Role;
  readonly securityGroup: ec2.SecurityGroup;
  readonly logGroup: logs.LogGroup;
  readonly cluster: ecs.ICluster;
  /** The alarms, when `alarms` is given. */
  readonly alarms: readonly cloudwatch.Alarm[];
  /** The fleet's table, created or given, when `fleetTable` is given. */
  readonly fleetTable: dynamodb.ITable | undefined;

  constructor(scope: Construct, id: string, props: WorkerlessProps) {
    super(scope, id);
    const {
      function: fn,
      queues: queueProps,
      failureDestination,
      temporalFunction,
      temporalApiKey,
      fleetTable: fleetTableProp,
      vpc,
      vpcSubnets,
      cluster,
      image,
      cpu,
      memoryLimitMiB,
      cpuArchitecture,
      desiredCount,
      logRetention,
      alarms,
      autoscaling,
      ...options
    } = props;
    const stack = Stack.of(this);
    const queues = queueProps.map((q) => ('queue' in q ? q : { queue: q, weight: undefined }));
    if (queues.length === 0) throw new Error(`Workerless ${this.node.path}: queues must list at least one queue`);

    // Placeholders carry the stack's region and account when CDK knows them, as the real values will.
    const region = Token.isUnresolved(stack.region) ? 'us-east-1' : stack.region;
    const account = Token.isUnresolved(stack.account) ? '123456789012' : stack.account;
    const queueList = (entries: { value: string; placeholder: string }[]) => ({
      value: entries.map((e) => e.value).join(','),
      placeholder: entries.map((e) => e.placeholder).join(','),
    });
    const set: Record<string, SetValue> = {
      function: literal(
        fn.functionArn,
        `arn:aws:lambda:${region}:${account}:function:${fn.node.id.replace(/[^A-Za-z0-9_-]/g, '') || 'fn'}`,
      ),
      queues: queueList(
        queues.map(({ queue, weight }, i) => {
          const w = weight !== undefined ? `:${weight}` : '';
          const name = knownName(queue) ?? `queue-${i + 1}${queue.fifo ? '.fifo' : ''}`;
          return { value: `${queue.queueUrl}${w}`, placeholder: `https://sqs.${region}.amazonaws.com/${account}/${name}${w}` };
        }),
      ),
      'http-port': { value: String(HTTP_PORT), placeholder: String(HTTP_PORT) },
      'http-host': { value: '0.0.0.0', placeholder: '0.0.0.0' },
    };
    if (failureDestination !== undefined) {
      set['failure-destination'] = isQueue(failureDestination)
        ? literal(failureDestination.queueUrl, `https://sqs.${region}.amazonaws.com/${account}/failures`)
        : literal(failureDestination.topicArn, `arn:aws:sns:${region}:${account}:failures`);
    }
    if (temporalFunction !== undefined) {
      set['temporal-function'] = literal(temporalFunction.functionArn, `arn:aws:lambda:${region}:${account}:function:temporal-worker`);
    }
    if (fleetTableProp !== undefined && typeof fleetTableProp !== 'object') {
      throw new Error(
        `Workerless ${this.node.path}: fleetTable takes a dynamodb.ITable (dynamodb.Table.fromTableName for one by name) or {} to create one, got ${JSON.stringify(fleetTableProp)}`,
      );
    }
    this.fleetTable =
      fleetTableProp === undefined ? undefined : isTable(fleetTableProp) ? fleetTableProp : createFleetTable(this, fleetTableProp);
    if (this.fleetTable !== undefined) set['fleet-table'] = literal(this.fleetTable.tableName, 'workerless-fleet');
    let env;
    try {
      env = daemonEnvironment({ options, set, region: stack.region, temporalApiKey: temporalApiKey !== undefined });
    } catch (err) {
      throw new Error(`Workerless ${this.node.path}: ${(err as Error).message}`);
    }
    const { environment, config } = env;

    this.cluster =
      cluster ??
      new ecs.Cluster(this, 'Cluster', { vpc, containerInsightsV2: ecs.ContainerInsights.ENABLED, enableFargateCapacityProviders: false });

    this.taskRole = new iam.Role(this, 'TaskRole', {
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'),
      description: 'workerless: receive from its queues, invoke its function, send its metrics',
    });
    const metricsNamespace = config.metricsEnabled
      ? options.name !== undefined && Token.isUnresolved(options.name)
        ? `Workerless-${options.name}`
        : config.metricsNamespace
      : undefined;
    const statements = taskPolicy({
      queueArns: queues.map((q) => q.queue.queueArn),
      queueKeyArns: queues.flatMap((q) => (q.queue.encryptionMasterKey !== undefined ? [q.queue.encryptionMasterKey.keyArn] : [])),
      functionArns: [fn.functionArn, ...(temporalFunction !== undefined ? [temporalFunction.functionArn] : [])],
      failureDestination:
        failureDestination === undefined
          ? undefined
          : isQueue(failureDestination)
            ? { kind: 'sqs', arn: failureDestination.queueArn, keyArn: failureDestination.encryptionMasterKey?.keyArn }
            : { kind: 'sns', arn: failureDestination.topicArn, keyArn: failureDestination.masterKey?.keyArn },
      metricsNamespace,
      fleetTableArn: this.fleetTable?.tableArn,
    });
    for (const s of statements) {
      this.taskRole.addToPrincipalPolicy(
        new iam.PolicyStatement({ sid: s.sid, actions: [...s.actions], resources: [...s.resources], conditions: s.conditions }),
      );
    }
    if (metricsNamespace !== undefined) {
      // cdk-nag (AwsSolutions) and any other policy validation plugin see these acknowledgements.
      Validations.of(this.taskRole).acknowledge({
        id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
        reason:
          'cloudwatch:PutMetricData takes no resource ARN (Service Authorization Reference, Amazon CloudWatch); the cloudwatch:namespace condition keeps it to Workerless-<name>',
      });
    }

    this.logGroup = new logs.LogGroup(this, 'Logs', { retention: logRetention ?? logs.RetentionDays.ONE_MONTH });
    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'TaskDefinition', {
      cpu: cpu ?? 256,
      memoryLimitMiB: memoryLimitMiB ?? 512,
      runtimePlatform: {
        operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
        cpuArchitecture: cpuArchitecture ?? ecs.CpuArchitecture.X86_64,
      },
      taskRole: this.taskRole,
      volumes: [{ name: 'tmp' }],
    });
    const container = this.taskDefinition.addContainer('workerless', {
      containerName: 'workerless',
      image: image ?? ecs.ContainerImage.fromAsset(REPO_ROOT),
      essential: true,
      stopTimeout: STOP_TIMEOUT,
      readonlyRootFilesystem: true,
      // The image's node user: nothing runs as root.
      user: '1000',
      linuxParameters: new ecs.LinuxParameters(this, 'LinuxParameters', { initProcessEnabled: false }),
      portMappings: [{ name: 'http', containerPort: HTTP_PORT, protocol: ecs.Protocol.TCP }],
      environment: { ...environment, AWS_REGION: stack.region },
      secrets: temporalApiKey !== undefined ? { WORKERLESS_TEMPORAL_API_KEY: ecs.Secret.fromSecretsManager(temporalApiKey) } : undefined,
      healthCheck: {
        command: ['CMD', 'node', '-e', HEALTH_CHECK],
        interval: Duration.seconds(15),
        timeout: Duration.seconds(5),
        retries: 3,
        startPeriod: Duration.seconds(30),
      },
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: 'workerless' }),
    });
    container.linuxParameters?.dropCapabilities(ecs.Capability.ALL);
    const executionRole = this.taskDefinition.executionRole;
    if (executionRole !== undefined) {
      Validations.of(executionRole).acknowledge({
        id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
        reason:
          'the execution role CDK makes for an ECR image holds ecr:GetAuthorizationToken, which takes no resource ARN (Service Authorization Reference, Amazon ECR); its pulls and log writes name their repository and log group',
      });
    }
    Validations.of(this.taskDefinition).acknowledge({
      id: 'AwsSolutions::AwsSolutions-ECS2',
      reason:
        'the environment holds the daemon options only (WORKERLESS_*, none secret: the daemon masks its one credential, the Temporal API key, which comes from Secrets Manager through `secrets`)',
    });
    // The drain must end before Fargate's SIGKILL: open polls finish first (deploy/ecs/README.md, "Shutdown").
    const pollFor = options.pollFor ?? defaultOf('poll-for');
    const drainSec = config.shutdownTimeoutMs / 1000 + pollFor;
    if (!Token.isUnresolved(pollFor) && !Token.isUnresolved(options.shutdownTimeout ?? 0) && drainSec > STOP_TIMEOUT.toSeconds()) {
      Annotations.of(this).addWarningV2(
        'workerless:shutdownTimeout',
        `shutdownTimeout plus pollFor is ${drainSec} s, above Fargate's ${STOP_TIMEOUT.toSeconds()} s stopTimeout: SIGKILL may end the drain (deploy/ecs/README.md, "Shutdown")`,
      );
    }
    // The one path written: temporary files of Node and the AWS SDK.
    container.addMountPoints({ sourceVolume: 'tmp', containerPath: '/tmp', readOnly: false });

    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc,
      description: `workerless ${this.node.path}: no ingress; /metrics and the status page on ${HTTP_PORT} have no authentication`,
      allowAllOutbound: true,
    });
    this.service = new ecs.FargateService(this, 'Service', {
      cluster: this.cluster,
      taskDefinition: this.taskDefinition,
      desiredCount: autoscaling !== undefined ? (autoscaling.minTasks ?? 1) : (desiredCount ?? 1),
      securityGroups: [this.securityGroup],
      vpcSubnets: vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
      assignPublicIp: false,
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      circuitBreaker: { rollback: true },
    });

    if (autoscaling !== undefined)
      backlogScaling(this, { service: this.service, cluster: this.cluster, queues: queues.map((q) => q.queue), ...autoscaling });
    this.alarms =
      alarms !== undefined
        ? workerlessAlarms(this, {
            ...alarms,
            config,
            metricsNamespace,
            functionDimension: fn.functionArn,
            queues: queues.map((q) => q.queue),
            failureDestination: failureDestination !== undefined,
          })
        : [];
  }
}
