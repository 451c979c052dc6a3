import { DAEMON_OPTIONS } from './options/daemon.ts';
import { FLEET_OPTIONS } from './options/fleet.ts';
import type { OptionDef } from './options/option-def.ts';
import { ROUTE_OPTIONS } from './options/route.ts';
import { TEMPORAL_OPTIONS } from './options/temporal.ts';

/**
 * Every option the daemon accepts, each defined once: its flag (also its config-file key; the WORKERLESS_* env var
 * is derived from it), kind, range or allowed values, typed default, --help text and docs row, and the nested
 * settings: which route options each route gives itself, and the keys of `queue-options`. Every stage of the
 * configuration reads these (see config.ts): with-defaults.ts reads values by flag through them, --help is
 * generated from them (cli.ts) and so are the option tables of docs/configuration.md (`npm run docs:options`;
 * test/unit/config/options-docs.test.ts fails when the page differs).
 *
 * The tables live in options/, one file each (issue 39): the route options (options/route.ts), the daemon-wide
 * ones (options/daemon.ts), the fleet's (options/fleet.ts), the `queue-options` keys (options/queue-settings.ts) and Temporal's
 * (options/temporal.ts), with what a definition is and the helpers that read one in options/option-def.ts. This
 * file puts them together in --help order and is what the rest of the code imports.
 */

export { camel, defaultText, envName, flagOf, formatMs, kebab, rangeText, type OptionDef } from './options/option-def.ts';
export { ROUTE_GROUPS } from './options/route.ts';
export {
  FILTER_ACTION_DEFAULT,
  QUEUE_SETTINGS,
  queueSettingDef,
  queueSettingRange,
  type FilterAction,
  type NumericQueueSettingDef,
} from './options/queue-settings.ts';
export { TEMPORAL_OPTIONS };

/** The route options, the daemon-wide ones, then the fleet's: every option but Temporal's, in --help and docs table order. */
export const CORE_OPTIONS = [...ROUTE_OPTIONS, ...DAEMON_OPTIONS, ...FLEET_OPTIONS] as const satisfies readonly OptionDef[];

/** Every option, in --help and docs table order. */
export const OPTIONS = [...CORE_OPTIONS, ...TEMPORAL_OPTIONS] as const satisfies readonly OptionDef[];

type Defined = (typeof OPTIONS)[number];
/** A flag the daemon accepts. */
export type Flag = Defined['flag'];
type DefOf<F extends Flag> = Extract<Defined, { flag: F }>;
type KindValue<D> = D extends { kind: 'integer' | 'number' | 'duration' }
  ? number
  : D extends { kind: 'boolean' }
    ? boolean
    : D extends { kind: 'enum'; values: readonly (infer V)[] }
      ? V
      : string;
/** The value read for a flag: undefined only when the option has no fixed default. */
export type OptionValue<F extends Flag> = DefOf<F> extends { default: unknown } ? KindValue<DefOf<F>> : KindValue<DefOf<F>> | undefined;

const BY_FLAG: ReadonlyMap<string, OptionDef> = new Map(OPTIONS.map((d) => [d.flag, d]));

/** The definition of a flag. */
export function optionDef(flag: Flag): OptionDef {
  return BY_FLAG.get(flag)!;
}

/** The option's fixed default (undefined when it has none). */
export function defaultOf<F extends Flag>(flag: F): OptionValue<F> {
  const d = optionDef(flag);
  return ('default' in d ? d.default : undefined) as OptionValue<F>;
}
