import type { OptionDef } from './option-def.ts';

/**
 * The fleet's options (docs/fleet.md): replicas that share one DynamoDB table share the queues' idle polls, one
 * concurrency budget and the Temporal task queues. Without --fleet-table a replica is on its own, as before, and
 * any other fleet option is an error.
 */

const FLEET = 'Fleet:';

/** DynamoDB table names: 3-255 of these (the DynamoDB API reference, CreateTable's TableName). */
const TABLE_PATTERN = /^[A-Za-z0-9_.-]{3,255}$/;
/** A fleet's name is the table's partition key: any 1-256 printable characters without spaces. */
const FLEET_NAME_PATTERN = /^[\x21-\x7e]{1,256}$/;

export const FLEET_OPTIONS = [
  {
    flag: 'fleet-table',
    group: FLEET,
    kind: 'string',
    pattern: TABLE_PATTERN,
    mismatch: 'must be a DynamoDB table name: 3-255 of A-Z a-z 0-9 _ . -',
    describe:
      'DynamoDB table the replicas of a fleet share (partition key fleet, sort key member, both strings): each idle queue is polled by one replica, and --fleet-concurrency is shared',
    doc: 'the DynamoDB table (partition key `fleet`, sort key `member`, both strings) the replicas of a fleet heartbeat in: each idle queue is long-polled by one live replica, busy queues by all, and `--fleet-concurrency` is shared. See [the fleet](fleet.md)',
    defaultText: 'no fleet: this replica polls every queue itself',
    valuesText: 'a table name',
  },
  {
    flag: 'fleet-name',
    group: FLEET,
    kind: 'string',
    pattern: FLEET_NAME_PATTERN,
    mismatch: 'must be 1-256 printable characters without spaces',
    describe: "The fleet's name (the table's partition key): replicas with the same name share the work",
    doc: "the fleet's name, the table's partition key: the replicas that give the same one share the work; one table may hold several fleets",
    defaultText: "the routes' function names, joined with +",
    valuesText: '1-256 printable, no spaces',
  },
  {
    flag: 'fleet-concurrency',
    group: FLEET,
    kind: 'integer',
    min: 1,
    max: 100_000,
    describe: 'Invocations at once for the whole fleet, shared among the live replicas (each still at most its own --concurrency)',
    doc: "invocations at once, all live replicas together: each takes its share (the total over the live members, the remainder to the first ids), at most its own `--concurrency`; a share moves when a member joins (which takes none for its first 2 heartbeats) or leaves. With several routes it applies to each route: each route's invocations at once, all replicas together",
    defaultText: 'no fleet budget: each replica its --concurrency',
  },
  {
    flag: 'fleet-heartbeat',
    group: FLEET,
    kind: 'duration',
    minMs: 1_000,
    maxMs: 60_000,
    default: 4_000,
    describe: 'How often a replica writes its heartbeat and reads the members; a member silent for 3 heartbeats is gone',
    doc: "how often each replica writes its item and reads the members (a PutItem and a Query: 30 calls a minute at 4 s); a member whose counter did not change for 3 heartbeats on an observer's own clock is gone, and its queues are re-placed",
  },
] as const satisfies readonly OptionDef[];
