/**
 * Event filtering with the grammar of the Lambda trigger's FilterCriteria (the EventBridge pattern subset
 * Lambda documents): a message is invoked when it matches at least one of up to 5 patterns (OR); within a
 * pattern every field must match (AND); a field's list of rules matches when any rule does (OR).
 *
 * Rules: a string, number, boolean or null (equals); `{ "prefix": s }`, `{ "suffix": s }` (either also as
 * `{ "prefix": { "equals-ignore-case": s } }`), `{ "equals-ignore-case": s }`, `{ "wildcard": "a*b" }`;
 * `{ "numeric": [">", 0, "<=", 5] }` (one or two comparisons, JSON numbers only); `{ "exists": true|false }`
 * (leaf fields); `{ "anything-but": v | [v...] | { "prefix"|"suffix"|"equals-ignore-case"|"wildcard": s } }`
 * (the field must exist). When an event field is a list, the rule matches if any element does.
 *
 * `"$or": [pattern, pattern, ...]` (EventBridge's or-matching), at any level of a pattern: at least two
 * alternatives, each an object of fields at that same level; the event must match one of them as well as the
 * sibling fields (`{"a": [1], "$or": [{"b": [2]}, {"c": [3]}]}` is a AND (b OR c)). Alternatives nest. Event
 * Ruler reads a malformed `$or` as a field named "$or"; we reject it instead, since a typo would otherwise
 * filter out every message.
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
 * `wildcard`, `anything-but` with prefix/suffix/equals-ignore-case/wildcard, and suffix or prefix ignoring case
 * are in EventBridge's grammar but listed neither in Lambda's filter rule table nor (the anything-but forms) as
 * supported by EventBridge Pipes, whose filters Lambda's share: with them a pattern may not carry over to the
 * trigger. `cidr` is not supported.
 */

/** The trigger's default quota of filters per event source mapping. */
export const MAX_PATTERNS = 5;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

type Comparison = { op: '<' | '<=' | '=' | '>' | '>='; value: number };

/** A test on a string value; for wildcard, `parts` are the literal texts between its asterisks. */
type TextTest = {
  op: 'prefix' | 'suffix' | 'equals-ignore-case' | 'wildcard';
  value: string;
  ignoreCase: boolean;
  parts?: string[];
};

type Rule =
  | { kind: 'equals'; value: null | boolean | number | string }
  | { kind: 'text'; test: TextTest }
  | { kind: 'numeric'; comparisons: Comparison[] }
  | { kind: 'exists'; value: boolean }
  | { kind: 'anything-but'; values: (string | number)[] }
  | { kind: 'anything-but-text'; test: TextTest };

/** An object of fields, AND-ed, and the alternatives of its `$or` (one of them must match too). */
type Fields = { kind: 'fields'; fields: Map<string, Node>; anyOf?: Fields[] };

/** A compiled pattern node: rules for a leaf, or fields for an object. */
type Node = { kind: 'rules'; rules: Rule[] } | Fields;

/** Compiled patterns, OR-ed. */
export interface EventFilter {
  readonly patterns: readonly Fields[];
}

const OR_KEY = '$or';
const OPERATORS = 'prefix, suffix, equals-ignore-case, wildcard, numeric, exists, anything-but';
const NUMERIC_OPS = new Set(['<', '<=', '=', '>', '>=']);

/**
 * Compiles the patterns (objects, or JSON strings as in `{"Pattern": "..."}`), reporting every problem with
 * its place (`pattern 2: body.amount: ...`). Accepts the trigger's `{ "Pattern": "..." }` entries too.
 */
export function compileFilter(patterns: readonly unknown[]): { filter?: EventFilter; problems: string[] } {
  const problems: string[] = [];
  if (patterns.length === 0) problems.push('needs at least one pattern');
  if (patterns.length > MAX_PATTERNS) problems.push(`takes at most ${MAX_PATTERNS} patterns (the trigger's limit), got ${patterns.length}`);
  const compiled: Fields[] = [];
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
    compiled.push(compileFields(value, where, '', problems));
  });
  return problems.length > 0 ? { problems } : { filter: { patterns: compiled }, problems };
}

function compileFields(obj: Record<string, unknown>, where: string, path: string, problems: string[]): Fields {
  const fields = new Map<string, Node>();
  let anyOf: Fields[] | undefined;
  for (const [key, value] of Object.entries(obj)) {
    const at = path === '' ? key : `${path}.${key}`;
    if (key === OR_KEY) {
      anyOf = compileOr(value, where, at, problems);
    } else if (Array.isArray(value)) {
      const rules = value.map((r) => compileRule(r, `${where}: ${at}`, problems)).filter((r): r is Rule => r !== undefined);
      if (value.length === 0) problems.push(`${where}: ${at} has an empty list of rules`);
      fields.set(key, { kind: 'rules', rules });
    } else if (isObject(value) && Object.keys(value).length > 0) {
      fields.set(key, compileFields(value, where, at, problems));
    } else {
      problems.push(`${where}: ${at} must be a list of rules or an object of fields, got ${JSON.stringify(value)}`);
    }
  }
  return anyOf ? { kind: 'fields', fields, anyOf } : { kind: 'fields', fields };
}

/** `"$or": [{...}, {...}]`: each alternative is an object of fields at the level of the `$or` itself. */
function compileOr(value: unknown, where: string, at: string, problems: string[]): Fields[] | undefined {
  if (!Array.isArray(value) || value.length < 2) {
    problems.push(`${where}: ${at} must be a list of at least 2 alternatives, each an object of fields, got ${JSON.stringify(value)}`);
    return undefined;
  }
  const alternatives: Fields[] = [];
  value.forEach((alternative: unknown, i) => {
    // Fields inside an alternative sit at the level of the $or; the index only locates problems.
    const label = `${at}[${i}]`;
    if (isObject(alternative) && Object.keys(alternative).length > 0) alternatives.push(compileFields(alternative, where, label, problems));
    else problems.push(`${where}: ${label} must be a non-empty object of fields, got ${JSON.stringify(alternative)}`);
  });
  return alternatives.length === value.length ? alternatives : undefined;
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
    case 'suffix': {
      // A string, or { "equals-ignore-case": string } to compare the start or end in any case.
      if (typeof arg === 'string') return { kind: 'text', test: { op, value: arg, ignoreCase: false } };
      if (isObject(arg) && Object.keys(arg).length === 1 && typeof arg['equals-ignore-case'] === 'string')
        return { kind: 'text', test: { op, value: arg['equals-ignore-case'], ignoreCase: true } };
      return bad(`${where}: "${op}" takes a string or {"equals-ignore-case": string}, got ${JSON.stringify(arg)}`);
    }
    case 'equals-ignore-case':
      return typeof arg === 'string'
        ? { kind: 'text', test: { op, value: arg, ignoreCase: true } }
        : bad(`${where}: "${op}" takes a string, got ${JSON.stringify(arg)}`);
    case 'wildcard': {
      const test = compileWildcard(arg, where, problems);
      return test && { kind: 'text', test };
    }
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
        if ((test === 'prefix' || test === 'suffix' || test === 'equals-ignore-case') && typeof value === 'string')
          return { kind: 'anything-but-text', test: { op: test, value, ignoreCase: test === 'equals-ignore-case' } };
        if (test === 'wildcard') {
          const wildcard = compileWildcard(value, `${where}: "anything-but"`, problems);
          return wildcard && { kind: 'anything-but-text', test: wildcard };
        }
      }
      return bad(
        `${where}: "anything-but" takes a string, a number, a list of them, or {"prefix"|"suffix"|"equals-ignore-case"|"wildcard": string}, got ${JSON.stringify(arg)}`,
      );
    }
    default:
      return bad(`${where}: unknown operator "${op}" (known: ${OPERATORS})`);
  }
  function bad(problem: string): undefined {
    problems.push(problem);
    return undefined;
  }
}

/**
 * `*` stands for any run of characters, none included; `\*` is a literal asterisk and `\\` a backslash.
 * As in EventBridge, two asterisks in a row and a backslash before anything else are refused. Compiled to the
 * literal parts between the asterisks, matched without backtracking (a regular expression with several `.*`
 * can take polynomial time on a 1 MiB body).
 */
function compileWildcard(arg: unknown, where: string, problems: string[]): TextTest | undefined {
  const refuse = (why: string) => {
    problems.push(`${where}: "wildcard" takes a string${why}, got ${JSON.stringify(arg)}`);
    return undefined;
  };
  if (typeof arg !== 'string') return refuse('');
  const parts = [''];
  for (let i = 0; i < arg.length; i++) {
    const c = arg[i]!;
    if (c === '\\') {
      const next = arg[i + 1];
      if (next !== '*' && next !== '\\') return refuse(' in which a backslash escapes only * or \\');
      parts[parts.length - 1] += next;
      i++;
    } else if (c === '*') {
      if (arg[i + 1] === '*') return refuse(' without two * in a row');
      parts.push('');
    } else {
      parts[parts.length - 1] += c;
    }
  }
  return { op: 'wildcard', value: arg, ignoreCase: false, parts };
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
  const matchTop = (pattern: Fields): boolean => {
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
    // A top-level $or's alternatives name record fields too, body included.
    return pattern.anyOf === undefined || pattern.anyOf.some(matchTop);
  };
  return filter.patterns.some(matchTop);
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
  return candidates.some((candidate) =>
    matchFields(node, candidate !== null && typeof candidate === 'object' && !Array.isArray(candidate) ? candidate : undefined),
  );
}

/** Every field, and one alternative of the $or if any, against the same object (so one list element holds them all). */
function matchFields(node: Fields, obj: { readonly [key: string]: Json } | undefined): boolean {
  for (const [key, child] of node.fields) if (!matchNode(child, obj?.[key])) return false;
  return node.anyOf === undefined || node.anyOf.some((alternative) => matchFields(alternative, obj));
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
    case 'text':
      return typeof value === 'string' && textTest(rule.test, value);
    case 'numeric':
      return typeof value === 'number' && rule.comparisons.every((c) => compare(value, c));
    case 'anything-but':
      return (typeof value === 'string' || typeof value === 'number') && !rule.values.includes(value);
    case 'anything-but-text':
      return typeof value === 'string' && !textTest(rule.test, value);
  }
}

function textTest(test: TextTest, value: string): boolean {
  // Case folding as toLowerCase does it: the same for ASCII, close to EventBridge's for the rest.
  const text = test.ignoreCase ? value.toLowerCase() : value;
  const arg = test.ignoreCase ? test.value.toLowerCase() : test.value;
  switch (test.op) {
    case 'prefix':
      return text.startsWith(arg);
    case 'suffix':
      return text.endsWith(arg);
    case 'equals-ignore-case':
      return text === arg;
    case 'wildcard':
      return wildcardMatch(test.parts ?? [test.value], value);
  }
}

/**
 * Whether `text` is parts[0] * parts[1] * ... * parts[n]. Taking each middle part at its first place after
 * the previous one leaves the most room for the rest, so one left-to-right pass decides.
 */
function wildcardMatch(parts: readonly string[], text: string): boolean {
  const first = parts[0]!;
  if (parts.length === 1) return text === first;
  const last = parts[parts.length - 1]!;
  if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  const end = text.length - last.length;
  let from = first.length;
  for (const part of parts.slice(1, -1)) {
    const at = text.indexOf(part, from);
    if (at < 0 || at + part.length > end) return false;
    from = at + part.length;
  }
  return true;
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
