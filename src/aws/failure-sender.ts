import type { SNSClient } from '@aws-sdk/client-sns';
import type { DestinationSender } from '../settle/deliver-failures.ts';
import type { MessageSender } from '../core/queue.ts';

/**
 * The failure destination's sender: SQS SendMessage through the daemon's own SQS client (lean or SDK, as
 * --aws-client says), SNS Publish through the SDK's SNSClient, whose package is imported on the first record
 * for a topic, so a run without an SNS destination never loads it.
 */
export function failureSender(sqs: MessageSender, sns: () => Promise<SNSClient>): DestinationSender {
  let publisher: Promise<import('./sns-publisher.ts').SnsPublisher> | undefined;
  return async (destination, message, signal) => {
    if (destination.kind === 'sqs') {
      await sqs.sendMessage(destination.url, message, signal);
      return;
    }
    publisher ??= Promise.all([import('./sns-publisher.ts'), sns()]).then(([{ SnsPublisher }, client]) => new SnsPublisher(client));
    // A failed first load is not kept: the next record tries again.
    publisher.catch(() => (publisher = undefined));
    await (await publisher).publish(destination.arn, message, signal);
  };
}
