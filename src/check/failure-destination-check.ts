import { destinationName } from '../settle/failure-destination.ts';
import { missingLastReceive, MISSING_LAST_RECEIVE } from '../settle/failure-destination.ts';
import type { QueueCheck } from './check-ports.ts';

/**
 * A queue with a failure destination: after which receive its messages leave (its RedrivePolicy maxReceiveCount,
 * or --max-attempts), or FAIL when neither is set, which a run refuses at start-up. sqs:SendMessage and
 * sns:Publish on the destination are not checked: only sending a message could prove them.
 */
export const failureDestinationCovered: QueueCheck = ({ route, queue }) => {
  const own = route.queueOptions.get(queue.name);
  const destination = own?.failureDestination ?? route.failureDestination;
  if (destination === undefined) return undefined;
  const name = `queue ${queue.name} failure destination`;
  if (missingLastReceive(route, queue)) return { name, ok: false, detail: MISSING_LAST_RECEIVE };
  const after =
    queue.maxReceiveCount !== undefined
      ? `after ${queue.maxReceiveCount} receives (its maxReceiveCount)`
      : `after ${own?.maxAttempts ?? route.maxAttempts} receives (--max-attempts)`;
  const action = destination.kind === 'sqs' ? 'sqs:SendMessage' : 'sns:Publish';
  return { name, ok: true, detail: `${destinationName(destination)}, ${after}; ${action} not checked` };
};
