/**
 * Alarms on the metrics the dashboards read (deploy/dashboards, names from src/core/telemetry/metric-names.ts):
 * the function paused, throttled invokes, failures sent to (or refused by) the failure destination, and the age of
 * each queue's oldest message (SQS's own ApproximateAgeOfOldestMessage).
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { Config } from '../../src/config/config.ts';
import { AGGREGATED_QUEUE, FUNCTION_METRICS, SQS_METRICS } from '../../src/core/telemetry/metric-names.ts';

export interface WorkerlessAlarmProps {
  /** What an alarm does when it fires (and when it is OK again), e.g. an SnsAction. Default: nothing. */
  readonly action?: cloudwatch.IAlarmAction;
  /** Throttled invokes in 5 minutes, over every queue, that raise the alarm. Default: 10. */
  readonly throttledInvokes?: number;
  /** Age of a queue's oldest message that raises its alarm. Default: 15 minutes. */
  readonly oldestMessageAge?: Duration;
}

interface AlarmInput extends WorkerlessAlarmProps {
  readonly config: Config;
  readonly metricsNamespace: string | undefined;
  /** The Function dimension: the --function value as configured. */
  readonly functionDimension: string;
  readonly queues: readonly sqs.IQueue[];
  readonly failureDestination: boolean;
}

const PERIOD = Duration.minutes(5);

export function workerlessAlarms(scope: Construct, input: AlarmInput): cloudwatch.Alarm[] {
  const namespace = input.metricsNamespace;
  if (namespace === undefined) throw new Error(`Workerless ${scope.node.path}: alarms read the daemon's metrics: leave metrics on`);
  // Per-queue series, or one under `_aggregated` (--metrics-per-queue, src/operator/metrics/queue-series.ts).
  const perQueue = input.config.metricsPerQueue === 'on' || (input.config.metricsPerQueue === 'auto' && input.queues.length <= 200);
  const queueDims = perQueue ? input.queues.map((q) => q.queueName) : [AGGREGATED_QUEUE];
  const overQueues = (metricName: string, label: string) => {
    const metrics = Object.fromEntries(
      queueDims.map((queue, i) => [
        `q${i}`,
        new cloudwatch.Metric({
          namespace,
          metricName,
          dimensionsMap: { Function: input.functionDimension, Queue: queue },
          statistic: 'Sum',
          period: PERIOD,
        }),
      ]),
    );
    return new cloudwatch.MathExpression({
      expression: `SUM([${Object.keys(metrics).join(',')}])`,
      usingMetrics: metrics,
      label,
      period: PERIOD,
    });
  };
  const alarms: cloudwatch.Alarm[] = [
    new cloudwatch.Alarm(scope, 'FunctionPausedAlarm', {
      alarmDescription: 'workerless paused the function as unusable (access denied, deleted, KMS, update in progress): its messages wait',
      metric: new cloudwatch.Metric({
        namespace,
        metricName: FUNCTION_METRICS.paused.cloudwatch,
        dimensionsMap: { Function: input.functionDimension },
        statistic: 'Maximum',
        period: PERIOD,
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
    new cloudwatch.Alarm(scope, 'ThrottledInvokesAlarm', {
      alarmDescription: 'Lambda throttles the invocations of workerless (retried, but the backlog grows)',
      metric: overQueues(SQS_METRICS.throttled.cloudwatch, 'throttled invokes'),
      threshold: input.throttledInvokes ?? 10,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
  ];
  if (input.failureDestination) {
    alarms.push(
      new cloudwatch.Alarm(scope, 'FailuresSentAlarm', {
        alarmDescription: 'messages failed on their last allowed receive and were sent to the failure destination',
        metric: overQueues(SQS_METRICS.failureDelivered.cloudwatch, 'failures sent'),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      new cloudwatch.Alarm(scope, 'FailuresNotDeliveredAlarm', {
        alarmDescription: 'the failure destination refused failed messages: they stay on their queue, under its redrive policy',
        metric: overQueues(SQS_METRICS.failureNotDelivered.cloudwatch, 'failures not delivered'),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
  }
  const age = input.oldestMessageAge ?? Duration.minutes(15);
  input.queues.forEach((queue, i) => {
    alarms.push(
      new cloudwatch.Alarm(scope, `OldestMessageAlarm${i + 1}`, {
        alarmDescription: `the oldest message of queue ${i + 1} waits longer than ${age.toHumanString()}`,
        metric: queue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period: PERIOD }),
        threshold: age.toSeconds(),
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
  });
  if (input.action !== undefined) {
    for (const alarm of alarms) {
      alarm.addAlarmAction(input.action);
      alarm.addOkAction(input.action);
    }
  }
  return alarms;
}
