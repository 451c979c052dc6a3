// `workerless check` with --fleet-table: the table a fleet's replicas share (docs/fleet.md) is there with the
// fleet's key schema (DescribeTable), the fleet's members can be read (Query), and an item can be written and
// deleted (PutItem, DeleteItem): the four actions a replica needs. The probe item is written in a partition of its
// own, never the fleet's, so a running fleet never counts it as a member (a phantom member would own queues that
// nobody polls until it expired).
import { randomBytes } from 'node:crypto';
import type { FleetConfig } from '../fleet/options.ts';
import type { CheckPorts, CheckResult, FleetTablePorts } from './check-ports.ts';

/** The partition the probe item goes to: no fleet's name (a fleet takes its name's partition only). */
export const FLEET_PROBE_PARTITION = 'workerless-check-probe';

/** The check's one line: every step, or the first that failed in the words of its call's error. */
export async function checkFleetTable(ports: CheckPorts, fleet: FleetConfig, signal: AbortSignal): Promise<CheckResult> {
  const name = `fleet table ${fleet.table}`;
  if (ports.fleetTable === undefined) return { name, ok: true, warning: true, detail: 'not checked here' };
  const table = ports.fleetTable(fleet);
  try {
    return await untilAborted(probe(table, name, fleet), signal, name);
  } finally {
    table.destroy();
  }
}

async function probe(table: FleetTablePorts, name: string, fleet: FleetConfig): Promise<CheckResult> {
  const problem = await table.checkTable();
  if (problem !== undefined) return { name, ok: false, detail: problem };
  try {
    const members = await table.members();
    const id = `workerless-check-${randomBytes(4).toString('hex')}`;
    const expiresAt = Math.ceil(Date.now() / 1000) + 3600;
    await table.probe.heartbeat({ id, heartbeat: 0, expiresAtEpochSeconds: expiresAt }, undefined);
    await table.probe.leave(id);
    return {
      name,
      ok: true,
      detail:
        `key schema fleet + member; fleet ${fleet.name}: ${members.length} member item${members.length === 1 ? '' : 's'} (Query); ` +
        `wrote and deleted the probe item ${id} in partition ${FLEET_PROBE_PARTITION} (PutItem, DeleteItem)`,
    };
  } catch (err) {
    return { name, ok: false, detail: err instanceof Error ? err.message : String(err) };
  }
}

/** The check's deadline ends it with a line; the calls themselves are bounded by the store's own limits. */
function untilAborted(work: Promise<CheckResult>, signal: AbortSignal, name: string): Promise<CheckResult> {
  if (signal.aborted) return Promise.resolve({ name, ok: false, detail: 'no answer before the check deadline' });
  return new Promise((resolve) => {
    const onAbort = () => resolve({ name, ok: false, detail: 'no answer before the check deadline' });
    signal.addEventListener('abort', onAbort, { once: true });
    void work.then((r) => {
      signal.removeEventListener('abort', onAbort);
      resolve(r);
    });
  });
}
