/**
 * Event filtering with the grammar of the Lambda trigger's FilterCriteria (the EventBridge pattern subset
 * Lambda documents): a message is invoked when it matches at least one of up to 5 patterns (OR); within a
 * pattern every field must match (AND); a field's list of rules matches when any rule does (OR).
 *
 * Rules: a string, number, boolean or null (equals); `{ "prefix": s }`, `{ "suffix": s }`,
 * `{ "equals-ignore-case": s }`; `{ "numeric": [">", 0, "<=", 5] }` (one or two comparisons, JSON numbers only);
 * `{ "exists": true|false }` (leaf fields); `{ "anything-but": v | [v...] | { "prefix"|"suffix"|"equals-ignore-case": s } }`
 * (the field must exist). When an event field is a list, the rule matches if any element does.
 *
 * Patterns apply to the SQS record as the function would receive it (`body`, `attributes`, `messageAttributes`,
 * `messageId`, ...). `body`, as on the trigger:
 * - a pattern object under `body` (`{"body": {"type": ["order"]}}`) matches only a body that is JSON (an
 *   object or list); the body is parsed and matched field by field;
 * - a list of rules under `body` (`{"body": [{"prefix": "Result: "}]}`) matches only a body that is a plain
 *   string (not JSON), against the whole text;
 * - any other combination does not match (the trigger drops such a message).
 * The trigger itself filters SQS on `body` only; patterns on the other record fields are a workerless extension.
 * Attribute values are strings in the record, so `numeric` never matches them (as in EventBridge).
 */

/** The trigger's default quota of filters per event source mapping. */
export const MAX_PATTERNS = 5;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

type Comparison = { op: '<' | '<=' | '=' | '>' | '>='; value: number };

type Rule =
  | { kind: 'equals'; value: null | boolean | number | string }
  | { kind: 'prefix' | 'suffix' | 'equals-ignore-case'; value: string }
  | { kind: 'numeric'; comparisons: Comparison[] }
  | { kind: 'exists'; value: boolean }
  | { kind: 'anything-but'; values: (string | number)[] }
  | { kind: 'anything-but-text'; test: 'prefix' | 'suffix' | 'equals-ignore-case'; value: string };

/** A compiled pattern node: rules for a leaf, or fields for an object. */
type Node = { kind: 'rules'; rules: Rule[] } | { kind: 'fields'; fields: Map<string, Node> };

/** Compiled patterns, OR-ed. */
export interface EventFilter {
  readonly patterns: readonly Node[];
}

const TEXT_OPS = ['prefix', 'suffix', 'equals-ignore-case'] as const;
const NUMERIC_OPS = new Set(['<', '<=', '=', '>', '>=']);

/**
 * Compiles the patterns (objects, or JSON strings as in `{"Pattern": "..."}`), reporting every problem with
 * its place (`pattern 2: body.amount: ...`). Accepts the trigger's `{ "Pattern": "..." }` entries too.
 */
export function compileFilter(patterns: readonly unknown[]): { filter?: EventFilter; problems: string[] } {
  const problems: string[] = [];
  if (patterns.length === 0) problems.push('needs at least one pattern');
  if (patterns.length > MAX_PATTERNS) problems.push(`takes at most ${MAX_PATTERNS} patterns (the trigger's limit), got ${patterns.length}`);
  const compiled: Node[] = [];
  patterns.forEach((raw, i) => {
    const where = `pattern ${i + 1}`;
    let value = raw;
    if (isObject(value) && Object.keys(value).length === 1 && typeof value['Pattern'] === 'string') value = value['Pattern'];
    if (typeof value === 'string') {
      try {
        value = JSON.parse(value) as unknown;
      } catch {
        problems.push(`${where} is not valid JSON`);
        return;
      }
    }
    if (!isObject(value) || Object.keys(value).length === 0) {
      problems.push(`${where} must be a non-empty object such as {"body": {"type": ["order"]}}`);
      return;
    }
    const node = compileFields(value, where, '', problems);
    if (node) compiled.push(node);
  });
  return problems.length > 0 ? { problems } : { filter: { patterns: compiled }, problems };
}

function compileFields(obj: Record<string, unknown>, where: string, path: string, problems: string[]): Node | undefined {
  const fields = new Map<string, Node>();
  for (const [key, value] of Object.entries(obj)) {
    const at = path === '' ? key : `${path}.${key}`;
    if (Array.isArray(value)) {
      const rules = value.map((r) => compileRule(r, `${where}: ${at}`, problems)).filter((r): r is Rule => r !== undefined);
      if (value.length === 0) problems.push(`${where}: ${at} has an empty list of rules`);
      fields.set(key, { kind: 'rules', rules });
    } else if (isObject(value) && Object.keys(value).length > 0) {
      const node = compileFields(value, where, at, problems);
      if (node) fields.set(key, node);
    } else {
      problems.push(`${where}: ${at} must be a list of rules or an object of fields, got ${JSON.stringify(value)}`);
    }
  }
  return { kind: 'fields', fields };
}

function compileRule(raw: unknown, where: string, problems: string[]): Rule | undefined {
  if (raw === null || typeof raw === 'string' || typeof raw === 'boolean') return { kind: 'equals', value: raw };
  if (typeof raw === 'number')
    return Number.isFinite(raw) ? { kind: 'equals', value: raw } : bad(`${where}: ${String(raw)} is not a finite number`);
  if (!isObject(raw) || Object.keys(raw).length !== 1)
    return bad(`${where}: a rule must be a value or an object with one operator, got ${JSON.stringify(raw)}`);
  const [op, arg] = Object.entries(raw)[0]!;
  switch (op) {
    case 'prefix':
    case 'suffix':
    case 'equals-ignore-case':
      return typeof arg === 'string' ? { kind: op, value: arg } : bad(`${where}: "${op}" takes a string, got ${JSON.stringify(arg)}`);
    case 'exists':
      return typeof arg === 'boolean'
        ? { kind: 'exists', value: arg }
        : bad(`${where}: "exists" takes true or false, got ${JSON.stringify(arg)}`);
    case 'numeric':
      return compileNumeric(arg, where, problems);
    case 'anything-but': {
      if (typeof arg === 'string' || (typeof arg === 'number' && Number.isFinite(arg))) return { kind: 'anything-but', values: [arg] };
      if (
        Array.isArray(arg) &&
        arg.length > 0 &&
        arg.every((v) => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)))
      ) {
        return { kind: 'anything-but', values: arg as (string | number)[] };
      }
      if (isObject(arg) && Object.keys(arg).length === 1) {
        const [test, value] = Object.entries(arg)[0]!;
        if ((TEXT_OPS as readonly string[]).includes(test) && typeof value === 'string') {
          return { kind: 'anything-but-text', test: test as (typeof TEXT_OPS)[number], value };
        }
      }
      return bad(
        `${where}: "anything-but" takes a string, a number, a list of them, or {"prefix"|"suffix"|"equals-ignore-case": string}, got ${JSON.stringify(arg)}`,
      );
    }
    default:
      return bad(`${where}: unknown operator "${op}" (known: prefix, suffix, equals-ignore-case, numeric, exists, anything-but)`);
  }
  function bad(problem: string): undefined {
    problems.push(problem);
    return undefined;
  }
}

function compileNumeric(arg: unknown, where: string, problems: string[]): Rule | undefined {
  const ok =
    Array.isArray(arg) &&
    (arg.length === 2 || arg.length === 4) &&
    arg.every((v, i) => (i % 2 === 0 ? typeof v === 'string' && NUMERIC_OPS.has(v) : typeof v === 'number' && Number.isFinite(v)));
  if (!ok || (arg.length === 4 && (arg[0] === '=' || arg[2] === '='))) {
    problems.push(
      `${where}: "numeric" takes [op, number] or a range [op, number, op, number] with ops < <= = > >=, got ${JSON.stringify(arg)}`,
    );
    return undefined;
  }
  const comparisons: Comparison[] = [];
  for (let i = 0; i < arg.length; i += 2) comparisons.push({ op: arg[i] as Comparison['op'], value: arg[i + 1] as number });
  return { kind: 'numeric', comparisons };
}

/**
 * Whether an SQS record (as built for the payload) matches any pattern. `body` is parsed as described above;
 * parsing happens once per record, and only when a pattern looks at the body.
 */
export function matchesRecord(filter: EventFilter, record: { readonly body: string }): boolean {
  const fields = record as unknown as Readonly<Record<string, Json | undefined>>;
  let body: { json: boolean; value: Json } | undefined;
  const parsedBody = () => (body ??= parseBody(record.body));
  return filter.patterns.some((pattern) => {
    if (pattern.kind !== 'fields') return false;
    for (const [key, node] of pattern.fields) {
      if (key === 'body') {
        const b = parsedBody();
        // A JSON pattern needs a JSON body, a plain-string pattern a plain body; a mismatch never matches.
        if ((node.kind === 'fields') !== b.json) return false;
        if (!matchNode(node, b.value)) return false;
      } else if (!matchNode(node, fields[key])) {
        return false;
      }
    }
    return true;
  });
}

/** Matches a compiled pattern against any JSON event (no special body handling). */
export function matchesEvent(filter: EventFilter, event: unknown): boolean {
  return filter.patterns.some((pattern) => matchNode(pattern, event as Json));
}

function parseBody(text: string): { json: boolean; value: Json } {
  try {
    const value = JSON.parse(text) as Json;
    if (value !== null && typeof value === 'object') return { json: true, value };
  } catch {
    // a plain string
  }
  return { json: false, value: text };
}

function matchNode(node: Node, value: Json | undefined): boolean {
  if (node.kind === 'rules') return matchRules(node.rules, value);
  // Object patterns: the field's sub-patterns, over every element when the event holds a list of objects.
  const candidates: (Json | undefined)[] = Array.isArray(value) ? [...value] : [value];
  if (candidates.length === 0) candidates.push(undefined);
  return candidates.some((candidate) => {
    const obj = candidate !== null && typeof candidate === 'object' && !Array.isArray(candidate) ? candidate : undefined;
    for (const [key, child] of node.fields) if (!matchNode(child, obj?.[key])) return false;
    return true;
  });
}

function matchRules(rules: readonly Rule[], value: Json | undefined): boolean {
  return rules.some((rule) => matchRule(rule, value));
}

function matchRule(rule: Rule, value: Json | undefined): boolean {
  if (rule.kind === 'exists') {
    // Leaf fields only: an object is not a value, and an empty list holds none.
    const present = value !== undefined && !(isObject(value) || (Array.isArray(value) && value.length === 0));
    return rule.value ? present : value === undefined;
  }
  if (value === undefined) return false;
  if (Array.isArray(value)) {
    // anything-but on a list: no element may be excluded; the other rules: any element matches.
    if (rule.kind === 'anything-but' || rule.kind === 'anything-but-text')
      return value.length > 0 && value.every((v) => matchRule(rule, v));
    return value.some((v) => matchRule(rule, v));
  }
  switch (rule.kind) {
    case 'equals':
      return value === rule.value;
    case 'prefix':
      return typeof value === 'string' && value.startsWith(rule.value);
    case 'suffix':
      return typeof value === 'string' && value.endsWith(rule.value);
    case 'equals-ignore-case':
      return typeof value === 'string' && value.toLowerCase() === rule.value.toLowerCase();
    case 'numeric':
      return typeof value === 'number' && rule.comparisons.every((c) => compare(value, c));
    case 'anything-but':
      return (typeof value === 'string' || typeof value === 'number') && !rule.values.includes(value);
    case 'anything-but-text':
      return typeof value === 'string' && !textTest(rule.test, value, rule.value);
  }
}

function textTest(test: (typeof TEXT_OPS)[number], value: string, arg: string): boolean {
  if (test === 'prefix') return value.startsWith(arg);
  if (test === 'suffix') return value.endsWith(arg);
  return value.toLowerCase() === arg.toLowerCase();
}

function compare(value: number, c: Comparison): boolean {
  switch (c.op) {
    case '<':
      return value < c.value;
    case '<=':
      return value <= c.value;
    case '=':
      return value === c.value;
    case '>':
      return value > c.value;
    case '>=':
      return value >= c.value;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
