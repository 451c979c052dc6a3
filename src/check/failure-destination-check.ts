import type { Config } from '../config/config.ts';
import { queueNameOf } from '../aws/sqs-source.ts';
import { destinationName } from '../settle/failure-destination.ts';
import { missingLastReceive, MISSING_LAST_RECEIVE } from '../daemon/startup-checks.ts';
import type { CheckPorts, CheckResult } from './check.ts';

/**
 * One line per queue with a failure destination: which receive is a message's last (its RedrivePolicy
 * maxReceiveCount, or --max-attempts), or FAIL when neither is set, which a run refuses at start-up. A queue that
 * cannot be read is left to its own queue check. sqs:SendMessage and sns:Publish on the destination are not
 * checked: only sending a message could prove them.
 */
export async function checkFailureDestinations(config: Config, ports: CheckPorts, deadline: () => AbortSignal): Promise<CheckResult[]> {
  const checks = config.routes.flatMap((route) =>
    route.queues.queues.flatMap((spec) => {
      const own = route.queueOptions.get(queueNameOf(spec.ref));
      const destination = own?.failureDestination ?? route.failureDestination;
      return destination === undefined ? [] : [{ route, spec, destination, maxAttempts: own?.maxAttempts ?? route.maxAttempts }];
    }),
  );
  const results = await Promise.all(
    checks.map(async ({ route, spec, destination, maxAttempts }): Promise<CheckResult | undefined> => {
      const name = `failure destination of queue ${queueNameOf(spec.ref)}`;
      const queue = await ports.resolveQueue(spec, deadline()).catch(() => undefined);
      if (queue === undefined) return undefined;
      if (missingLastReceive(route, queue)) return { name, ok: false, detail: MISSING_LAST_RECEIVE };
      const after =
        queue.maxReceiveCount !== undefined
          ? `after ${queue.maxReceiveCount} receives (its maxReceiveCount)`
          : `after ${maxAttempts} receives (--max-attempts)`;
      const action = destination.kind === 'sqs' ? 'sqs:SendMessage' : 'sns:Publish';
      return { name, ok: true, detail: `${destinationName(destination)}, ${after}; ${action} not checked` };
    }),
  );
  return results.filter((r): r is CheckResult => r !== undefined);
}
