import { PutMetricDataCommand, type CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { AwsCallError, classifyAwsError } from '../core/errors.ts';
import type { MetricsPublisher, PutMetricDataRequest } from '../core/telemetry/metrics-publisher.ts';

/** PutMetricData through the SDK's CloudWatchClient (`--aws-client sdk`): its retries, classified once here. */
export class CloudWatchSdkPublisher implements MetricsPublisher {
  readonly #client: CloudWatchClient;

  constructor(client: CloudWatchClient) {
    this.#client = client;
  }

  async putMetricData(request: PutMetricDataRequest, signal: AbortSignal): Promise<void> {
    try {
      await this.#client.send(new PutMetricDataCommand(request), { abortSignal: signal });
    } catch (err) {
      throw new AwsCallError('PutMetricData', classifyAwsError(err, signal));
    }
  }
}
