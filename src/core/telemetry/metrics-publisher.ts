import type { PutMetricDataInput } from '@aws-sdk/client-cloudwatch';

/** One PutMetricData request: the SDK's input shape, whichever client sends it. */
export type PutMetricDataRequest = Required<Pick<PutMetricDataInput, 'Namespace' | 'MetricData'>>;

/**
 * CloudWatch's PutMetricData, sent by the lean client (src/aws/cloudwatch-http.ts, the default) or the
 * SDK's (src/aws/cloudwatch-sdk.ts, `--aws-client sdk`). `signal` is the call's only deadline; a failure is an AwsCallError.
 */
export interface MetricsPublisher {
  putMetricData(request: PutMetricDataRequest, signal: AbortSignal): Promise<void>;
}
