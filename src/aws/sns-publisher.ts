import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import { AwsCallError, classifyAwsError, withDeadline } from '../core/errors.ts';
import { DESTINATION_DEADLINE_MS, type OutgoingMessage } from '../core/queue.ts';
import { messageAttributesOf } from './destination-send.ts';

/**
 * SNS Publish on the AWS SDK's SNSClient, for a failure destination that is a topic. Only loaded when one is
 * configured (the SNS client costs resident memory that most runs never need), and built by
 * src/aws/clients.ts with the daemon's region, endpoint and credential rules. Failures are classified once,
 * here, as an AwsCallError, as the SQS adapters' are.
 */
export class SnsPublisher {
  readonly #client: SNSClient;

  constructor(client: SNSClient) {
    this.#client = client;
  }

  /** Resolves with the new message's id once SNS accepted it. */
  async publish(topicArn: string, message: OutgoingMessage, signal?: AbortSignal): Promise<string> {
    const command = new PublishCommand({
      TopicArn: topicArn,
      Message: message.body,
      ...(message.groupId !== undefined ? { MessageGroupId: message.groupId } : {}),
      ...(message.deduplicationId !== undefined ? { MessageDeduplicationId: message.deduplicationId } : {}),
      ...(message.attributes !== undefined ? { MessageAttributes: messageAttributesOf(message) } : {}),
    });
    const abortSignal = withDeadline(DESTINATION_DEADLINE_MS, signal);
    try {
      return (await this.#client.send(command, { abortSignal })).MessageId ?? '';
    } catch (err) {
      throw new AwsCallError('Publish', classifyAwsError(err, abortSignal));
    }
  }
}
