import type { OutgoingMessage } from '../core/queue.ts';

/** The message's String attributes as SendMessage and Publish take them (MessageAttributeValue); undefined: none. */
export function messageAttributesOf(message: OutgoingMessage): Record<string, { DataType: 'String'; StringValue: string }> | undefined {
  if (message.attributes === undefined) return undefined;
  return Object.fromEntries(Object.entries(message.attributes).map(([name, value]) => [name, { DataType: 'String', StringValue: value }]));
}
