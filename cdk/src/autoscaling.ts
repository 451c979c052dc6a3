/**
 * Service autoscaling on visible messages per running task, as deploy/ecs/service-autoscaling.json does it: target
 * tracking on metric math (sum of the queues' ApproximateNumberOfMessagesVisible over Container Insights'
 * RunningTaskCount). CDK's TargetTrackingScalingPolicy takes a single metric only, hence the Cfn resource.
 */
import { Duration } from 'aws-cdk-lib';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

export interface WorkerlessScalingProps {
  /** At least 1: target tracking cannot divide by zero running tasks. Default: 1. */
  readonly minTasks?: number;
  /** Keep maxTasks x concurrency within the function's reserved concurrency: more tasks only add throttles. */
  readonly maxTasks: number;
  /** Visible messages one task may have waiting: acceptable wait (s) x messages one task processes per second. */
  readonly backlogPerTask: number;
  /** Default: 1 minute. */
  readonly scaleOutCooldown?: Duration;
  /** Default: 5 minutes, so a task stopped (and drained) is not needed again a minute later. */
  readonly scaleInCooldown?: Duration;
}

interface ScalingInput extends WorkerlessScalingProps {
  readonly service: ecs.FargateService;
  readonly cluster: ecs.ICluster;
  readonly queues: readonly sqs.IQueue[];
}

export function backlogScaling(scope: Construct, input: ScalingInput): appscaling.CfnScalingPolicy {
  const minTasks = input.minTasks ?? 1;
  if (!Number.isInteger(minTasks) || minTasks < 1) {
    throw new Error(
      `Workerless ${scope.node.path}: autoscaling.minTasks must be an integer of at least 1 (target tracking divides by running tasks), got ${minTasks}`,
    );
  }
  if (!Number.isInteger(input.maxTasks) || input.maxTasks < minTasks) {
    throw new Error(
      `Workerless ${scope.node.path}: autoscaling.maxTasks must be an integer of at least minTasks (${minTasks}), got ${input.maxTasks}`,
    );
  }
  if (!(input.backlogPerTask > 0)) {
    throw new Error(`Workerless ${scope.node.path}: autoscaling.backlogPerTask must be above 0, got ${input.backlogPerTask}`);
  }
  const target = new appscaling.ScalableTarget(scope, 'ScalableTarget', {
    serviceNamespace: appscaling.ServiceNamespace.ECS,
    scalableDimension: 'ecs:service:DesiredCount',
    resourceId: `service/${input.cluster.clusterName}/${input.service.serviceName}`,
    minCapacity: minTasks,
    maxCapacity: input.maxTasks,
  });
  const queueMetrics = input.queues.map((queue, i) => ({
    id: `q${i}`,
    returnData: false,
    metricStat: {
      metric: {
        namespace: 'AWS/SQS',
        metricName: 'ApproximateNumberOfMessagesVisible',
        dimensions: [{ name: 'QueueName', value: queue.queueName }],
      },
      stat: 'Sum',
    },
  }));
  return new appscaling.CfnScalingPolicy(scope, 'BacklogPerTaskPolicy', {
    policyName: `${scope.node.addr}-sqs-backlog-per-task`,
    policyType: 'TargetTrackingScaling',
    scalingTargetId: target.scalableTargetId,
    targetTrackingScalingPolicyConfiguration: {
      targetValue: input.backlogPerTask,
      scaleOutCooldown: (input.scaleOutCooldown ?? Duration.minutes(1)).toSeconds(),
      scaleInCooldown: (input.scaleInCooldown ?? Duration.minutes(5)).toSeconds(),
      customizedMetricSpecification: {
        metrics: [
          ...queueMetrics,
          {
            id: 'tasks',
            returnData: false,
            metricStat: {
              metric: {
                namespace: 'ECS/ContainerInsights',
                metricName: 'RunningTaskCount',
                dimensions: [
                  { name: 'ClusterName', value: input.cluster.clusterName },
                  { name: 'ServiceName', value: input.service.serviceName },
                ],
              },
              stat: 'Average',
            },
          },
          {
            id: 'backlogPerTask',
            label: 'Visible messages per running task',
            expression: `(${queueMetrics.map((m) => m.id).join(' + ')}) / tasks`,
            returnData: true,
          },
        ],
      },
    },
  });
}
