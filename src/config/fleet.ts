// The compile stage of the fleet's options (src/config/options/fleet.ts): a frozen FleetConfig, or undefined when
// --fleet-table is not given, in which case every other fleet option is an error (it would be silently ignored).
import type { RouteConfig } from '../dispatch/route.ts';
import type { FleetConfig } from '../fleet/options.ts';
import { FLEET_OPTIONS } from './options/fleet.ts';
import type { OptionsWithDefaults } from './with-defaults.ts';

/** The fleet's default name: the routes' function names, sorted and joined with `+` (`temporal` with none). */
export function defaultFleetName(routes: readonly RouteConfig[]): string {
  const names = [...new Set(routes.map((r) => r.functionName))].sort();
  return (names.length > 0 ? names.join('+') : 'temporal').slice(0, 256);
}

export function resolveFleetConfig(r: OptionsWithDefaults, routes: readonly RouteConfig[]): FleetConfig | undefined {
  const table = r.read('fleet-table');
  if (table === undefined) {
    for (const d of FLEET_OPTIONS) {
      if (d.flag !== 'fleet-table') r.reject(d.flag, 'is only used with --fleet-table (none given)');
    }
    return undefined;
  }
  return Object.freeze({
    table,
    name: r.read('fleet-name') ?? defaultFleetName(routes),
    concurrency: r.read('fleet-concurrency'),
    heartbeatMs: r.read('fleet-heartbeat'),
  });
}
