import type { Logger } from 'pino';
import type { Invoke, InvokeWrapper } from './invoke.ts';

/** The SDK's name for Lambda's 409 on a start under a name that has an execution with another payload. */
export const ALREADY_STARTED = 'DurableExecutionAlreadyStartedException';

/**
 * An asynchronous durable start (InvocationType Event with a DurableExecutionName) that Lambda refuses with
 * DurableExecutionAlreadyStartedException has started already: an execution under the message's name exists, so
 * the message's work is Lambda's now, and the message is settled as an accepted start (deleted). Only the payload
 * can differ (Invoke API reference, DurableExecutionName; the same payload gets the existing execution and 202),
 * and workerless sends the same bytes for every delivery (src/invoke/durable-event.ts); it still counts as started,
 * for a start whose payload differs (an event built by another version) is the same message, and starting it again
 * is what the name is there to prevent.
 *
 * A synchronous start is left as it is (a rejected Invoke: the message stays for its redrive policy), since its
 * caller waits for the execution's result, which this answer does not give. Any other call goes straight
 * through, without a step of its own (it runs for every Invoke).
 */
export function withDurableStart(logger: Logger, functionName: string): InvokeWrapper {
  return (next: Invoke): Invoke => {
    const asyncStart: Invoke = async (payload, ctx, signal) => {
      const result = await next(payload, ctx, signal);
      const name = ctx.params?.durableExecutionName;
      if (result.ok || name === undefined || result.error.code !== ALREADY_STARTED) return result;
      logger.info(
        { queue: ctx.queue.name, messageIds: ctx.unsettledIds, function: functionName, durableExecutionName: name },
        'durable execution already started under this name; counted as started',
      );
      return { ok: true, response: { payload: undefined, functionError: undefined } };
    };
    return (payload, ctx, signal) => (ctx.params?.async === true ? asyncStart(payload, ctx, signal) : next(payload, ctx, signal));
  };
}
