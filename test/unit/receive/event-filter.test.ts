import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileFilter, matchesEvent, matchesRecord, type EventFilter } from '../../../src/receive/event-filter.ts';
import { toRecord } from '../../../src/invoke/sqs-event.ts';
import { message, queue } from '../../support/factories.ts';

function filter(...patterns: unknown[]): EventFilter {
  const { filter: f, problems } = compileFilter(patterns);
  assert.deepEqual(problems, []);
  return f!;
}

/** The SQS record of a message with this body (and attributes), as the payload carries it. */
function record(body: string, attrs: Parameters<typeof message>[0] = {}) {
  return toRecord(message({ Body: body, ...attrs }), queue('q'));
}

const json = (value: unknown) => JSON.stringify(value);

/**
 * The rule table of Lambda's "Control which events Lambda sends to your function" (filter rule syntax), each
 * example applied to an SQS body: [name, rule for the field, bodies that match, bodies that do not].
 */
const DOCUMENTED: [string, Record<string, unknown>, unknown[], unknown[]][] = [
  ['Null', { UserID: [null] }, [{ UserID: null }], [{ UserID: 'x' }, {}, { UserID: '' }]],
  ['Empty', { LastName: [''] }, [{ LastName: '' }], [{ LastName: 'Doe' }, {}, { LastName: null }]],
  ['Equals', { Name: ['Alice'] }, [{ Name: 'Alice' }], [{ Name: 'alice' }, { Name: 'Bob' }, {}]],
  [
    'Equals (ignore case)',
    { Name: [{ 'equals-ignore-case': 'alice' }] },
    [{ Name: 'ALICE' }, { Name: 'Alice' }],
    [{ Name: 'Alicia' }, { Name: 1 }],
  ],
  [
    'And',
    { Location: ['New York'], Day: ['Monday'] },
    [{ Location: 'New York', Day: 'Monday' }],
    [{ Location: 'New York', Day: 'Tuesday' }, { Location: 'New York' }],
  ],
  ['Or', { PaymentType: ['Credit', 'Debit'] }, [{ PaymentType: 'Credit' }, { PaymentType: 'Debit' }], [{ PaymentType: 'Cash' }]],
  ['Not', { Weather: [{ 'anything-but': ['Raining'] }] }, [{ Weather: 'Sunny' }], [{ Weather: 'Raining' }, {}]],
  ['Numeric (equals)', { Price: [{ numeric: ['=', 100] }] }, [{ Price: 100 }, { Price: 100.0 }], [{ Price: 101 }, { Price: '100' }]],
  [
    'Numeric (range)',
    { Price: [{ numeric: ['>', 10, '<=', 20] }] },
    [{ Price: 20 }, { Price: 10.5 }],
    [{ Price: 10 }, { Price: 20.01 }, { Price: '15' }],
  ],
  ['Exists', { ProductName: [{ exists: true }] }, [{ ProductName: 'x' }, { ProductName: '' }], [{}, { Other: 1 }]],
  ['Does not exist', { ProductName: [{ exists: false }] }, [{}, { Other: 1 }], [{ ProductName: 'x' }]],
  ['Begins with', { Region: [{ prefix: 'us-' }] }, [{ Region: 'us-east-1' }], [{ Region: 'eu-west-1' }, { Region: 5 }]],
  ['Ends with', { FileName: [{ suffix: '.png' }] }, [{ FileName: 'photo.png' }], [{ FileName: 'photo.jpg' }]],
];

/**
 * The rows of EventBridge's comparison-operator table that Lambda's table leaves out (EventBridge's grammar, which
 * the trigger's rule syntax refers to), in the same form. `cidr` is the one row not supported.
 */
const EVENTBRIDGE: [string, Record<string, unknown>, unknown[], unknown[]][] = [
  [
    'Begins with (ignore case)',
    { service: [{ prefix: { 'equals-ignore-case': 'eventb' } }] },
    [{ service: 'EventBridge' }, { service: 'EVENTBUS' }],
    [{ service: 'Event-Bridge' }, { service: 'bridge' }],
  ],
  [
    'Ends with (ignore case)',
    { service: [{ suffix: { 'equals-ignore-case': 'tBridge' } }] },
    [{ service: 'EventBridge' }, { service: 'EVENTBRIDGE' }, { service: 'tbridge' }],
    [{ service: 'EventBridges' }, { service: 'bridge' }],
  ],
  [
    'Anything-but (begins with)',
    { Region: [{ 'anything-but': { prefix: 'us-' } }] },
    [{ Region: 'eu-west-1' }, { Region: 'US-east-1' }],
    [{ Region: 'us-east-1' }, {}],
  ],
  [
    'Anything-but (ends with)',
    { FileName: [{ 'anything-but': { suffix: '.png' } }] },
    [{ FileName: 'photo.jpg' }],
    [{ FileName: 'photo.png' }, {}],
  ],
  [
    'Anything-but (ignore case)',
    { state: [{ 'anything-but': { 'equals-ignore-case': 'initializing' } }] },
    [{ state: 'running' }],
    [{ state: 'INITIALIZING' }, { state: 'initializing' }],
  ],
  [
    'Anything-but using a wildcard',
    { FilePath: [{ 'anything-but': { wildcard: '*/lib/*' } }] },
    [{ FilePath: '/usr/bin/node' }, { FilePath: 'lib/x' }],
    [{ FilePath: '/usr/lib/node' }, { FilePath: '/lib/' }],
  ],
  [
    'Wildcard',
    { FileName: [{ wildcard: '*.png' }] },
    [{ FileName: 'photo.png' }, { FileName: '.png' }],
    [{ FileName: 'photo.PNG' }, { FileName: 'photo.png.bak' }, { FileName: 1 }],
  ],
  [
    'Or ($or)',
    { $or: [{ Location: ['New York'] }, { Day: ['Monday'] }] },
    [{ Location: 'New York' }, { Day: 'Monday' }, { Location: 'Paris', Day: 'Monday' }],
    [{ Location: 'Paris', Day: 'Tuesday' }, {}],
  ],
];

describe("event filter (the trigger's FilterCriteria grammar)", () => {
  for (const [name, rule, pass, fail] of [...DOCUMENTED, ...EVENTBRIDGE]) {
    it(`documented rule: ${name}`, () => {
      const f = filter({ body: rule });
      for (const body of pass) assert.equal(matchesRecord(f, record(json(body))), true, `${name} should match ${json(body)}`);
      for (const body of fail) assert.equal(matchesRecord(f, record(json(body))), false, `${name} should not match ${json(body)}`);
    });
  }

  it('the SQS page examples: RequestCode "BBBB" and RecordNumber > 9999', () => {
    const code = filter(JSON.parse('{ "body" : { "RequestCode" : [ "BBBB" ] } }'));
    assert.equal(matchesRecord(code, record(json({ RecordNumber: 1234, TimeStamp: 't', RequestCode: 'BBBB' }))), true);
    assert.equal(matchesRecord(code, record(json({ RecordNumber: 1234, TimeStamp: 't', RequestCode: 'AAAA' }))), false);
    const number = filter('{ "body" : { "RecordNumber" : [ { "numeric": [ ">", 9999 ] } ] } }');
    assert.equal(matchesRecord(number, record(json({ RecordNumber: 10000 }))), true);
    assert.equal(matchesRecord(number, record(json({ RecordNumber: 9999 }))), false);
  });

  it('accepts FilterCriteria entries as the trigger takes them: {"Pattern": "<json>"}', () => {
    const f = filter({ Pattern: '{"body":{"kind":["a"]}}' });
    assert.equal(matchesRecord(f, record('{"kind":"a"}')), true);
  });

  it('OR of patterns: a message matching any of them is kept', () => {
    const f = filter({ body: { kind: ['a'] } }, { body: { kind: ['b'] } }, { body: { n: [{ numeric: ['>=', 5] }] } });
    assert.equal(matchesRecord(f, record('{"kind":"a"}')), true);
    assert.equal(matchesRecord(f, record('{"kind":"b"}')), true);
    assert.equal(matchesRecord(f, record('{"kind":"c","n":5}')), true);
    assert.equal(matchesRecord(f, record('{"kind":"c","n":4}')), false);
  });

  describe('$or (EventBridge or-matching), with the examples of its documentation and of Event Ruler', () => {
    it('"Normal Or": source AND (metricName OR namespace)', () => {
      const f = filter({
        source: ['aws.cloudwatch'],
        $or: [{ metricName: ['CPUUtilization', 'ReadLatency'] }, { namespace: ['AWS/EC2', 'AWS/ES'] }],
      });
      assert.equal(matchesEvent(f, { source: 'aws.cloudwatch', metricName: 'CPUUtilization' }), true);
      assert.equal(matchesEvent(f, { source: 'aws.cloudwatch', namespace: 'AWS/ES' }), true);
      assert.equal(matchesEvent(f, { source: 'aws.cloudwatch', metricName: 'Other', namespace: 'AWS/S3' }), false);
      assert.equal(matchesEvent(f, { source: 'aws.ec2', metricName: 'CPUUtilization' }), false);
    });

    it('"Parallel Or": an $or at the top and another inside detail, AND-ed', () => {
      const f = filter({
        $or: [{ metricName: ['CPUUtilization', 'ReadLatency'] }, { namespace: ['AWS/EC2', 'AWS/ES'] }],
        detail: { $or: [{ source: ['aws.cloudwatch'] }, { 'detail-type': ['CloudWatch Alarm State Change'] }] },
      });
      assert.equal(matchesEvent(f, { metricName: 'CPUUtilization', detail: { source: 'aws.cloudwatch' } }), true);
      assert.equal(matchesEvent(f, { namespace: 'AWS/EC2', detail: { 'detail-type': 'CloudWatch Alarm State Change' } }), true);
      assert.equal(matchesEvent(f, { metricName: 'CPUUtilization', detail: { source: 'aws.ec2' } }), false);
      assert.equal(matchesEvent(f, { detail: { source: 'aws.cloudwatch' } }), false);
    });

    it('"Or has an And inside": an alternative with two fields needs both', () => {
      const f = filter({
        source: ['aws.cloudwatch'],
        $or: [
          { metricName: ['CPUUtilization', 'ReadLatency'] },
          { metricType: ['MetricType'], namespace: ['AWS/EC2', 'AWS/ES'] },
          { scope: ['Service'] },
        ],
      });
      assert.equal(matchesEvent(f, { source: 'aws.cloudwatch', metricType: 'MetricType', namespace: 'AWS/EC2' }), true);
      assert.equal(matchesEvent(f, { source: 'aws.cloudwatch', metricType: 'MetricType' }), false);
      assert.equal(matchesEvent(f, { source: 'aws.cloudwatch', scope: 'Service' }), true);
    });

    it('"Nested Or and And": an $or inside an alternative', () => {
      const f = filter({
        source: ['aws.cloudwatch'],
        $or: [
          { metricName: ['CPUUtilization', 'ReadLatency'] },
          { metricType: ['MetricType'], namespace: ['AWS/EC2', 'AWS/ES'], $or: [{ metricId: [1234] }, { spaceId: [1000] }] },
          { scope: ['Service'] },
        ],
      });
      const base = { source: 'aws.cloudwatch', metricType: 'MetricType', namespace: 'AWS/ES' };
      assert.equal(matchesEvent(f, { ...base, spaceId: 1000 }), true);
      assert.equal(matchesEvent(f, { ...base, metricId: 1234 }), true);
      assert.equal(matchesEvent(f, base), false);
      assert.equal(matchesEvent(f, { ...base, metricId: '1234' }), false);
      assert.equal(matchesEvent(f, { source: 'aws.cloudwatch', metricName: 'ReadLatency' }), true);
    });

    it("EventBridge's example: detail.$or over three numeric fields", () => {
      const f = filter({
        detail: {
          $or: [
            { 'c-count': [{ numeric: ['>', 0, '<=', 5] }] },
            { 'd-count': [{ numeric: ['<', 10] }] },
            { 'x-limit': [{ numeric: ['=', 3.018e2] }] },
          ],
        },
      });
      assert.equal(matchesEvent(f, { detail: { 'c-count': 3 } }), true);
      assert.equal(matchesEvent(f, { detail: { 'd-count': 9 } }), true);
      assert.equal(matchesEvent(f, { detail: { 'x-limit': 301.8 } }), true);
      assert.equal(matchesEvent(f, { detail: { 'c-count': 6, 'd-count': 10, 'x-limit': 300 } }), false);
      assert.equal(matchesEvent(f, { other: 1 }), false);
    });

    it('on SQS records: a top-level $or over body and message attributes, each alternative with its own body format', () => {
      const attrs = { MessageAttributes: { type: { DataType: 'String', StringValue: 'order' } } };
      const f = filter({ $or: [{ body: { kind: ['a'] } }, { messageAttributes: { type: { stringValue: ['order'] } } }] });
      assert.equal(matchesRecord(f, record('{"kind":"a"}')), true);
      assert.equal(matchesRecord(f, record('plain text', attrs)), true);
      assert.equal(matchesRecord(f, record('{"kind":"b"}')), false);
      assert.equal(matchesRecord(f, record('plain text')), false);
      const formats = filter({ $or: [{ body: { kind: ['a'] } }, { body: [{ prefix: 'Result: ' }] }] });
      assert.equal(matchesRecord(formats, record('{"kind":"a"}')), true);
      assert.equal(matchesRecord(formats, record('Result: ok')), true);
      assert.equal(matchesRecord(formats, record('Error: no')), false);
      assert.equal(matchesRecord(formats, record('{"kind":"b"}')), false);
    });

    it('under body, with sibling keys merged in; in a list of objects, one element holds a whole alternative', () => {
      const f = filter({ body: { type: ['order'], $or: [{ amount: [{ numeric: ['>=', 100] }] }, { priority: ['high'] }] } });
      assert.equal(matchesRecord(f, record(json({ type: 'order', amount: 150 }))), true);
      assert.equal(matchesRecord(f, record(json({ type: 'order', priority: 'high' }))), true);
      assert.equal(matchesRecord(f, record(json({ type: 'refund', priority: 'high' }))), false);
      assert.equal(matchesRecord(f, record(json({ type: 'order', amount: 99 }))), false);
      const items = filter({ items: { kind: ['x'], $or: [{ sku: ['A1'] }, { qty: [{ numeric: ['>', 5] }] }] } });
      assert.equal(
        matchesEvent(items, {
          items: [
            { kind: 'y', sku: 'A1' },
            { kind: 'x', qty: 6 },
          ],
        }),
        true,
      );
      assert.equal(
        matchesEvent(items, {
          items: [
            { kind: 'y', sku: 'A1' },
            { kind: 'x', qty: 1 },
          ],
        }),
        false,
      );
    });
  });

  describe('body that is not JSON (the trigger compares formats)', () => {
    it('a plain-string pattern matches a plain body', () => {
      const f = filter({ body: [{ prefix: 'Result: ' }] });
      assert.equal(matchesRecord(f, record('Result: ok')), true);
      assert.equal(matchesRecord(f, record('Error: no')), false);
      assert.equal(matchesRecord(filter({ body: ['exact text'] }), record('exact text')), true);
    });

    it('a JSON pattern never matches a plain body, and a plain pattern never matches a JSON body', () => {
      assert.equal(matchesRecord(filter({ body: { kind: [{ exists: false }] } }), record('not json')), false);
      assert.equal(matchesRecord(filter({ body: [{ prefix: '{' }] }), record('{"kind":"a"}')), false);
      assert.equal(matchesRecord(filter({ body: [{ 'anything-but': 'x' }] }), record('[1,2]')), false);
    });

    it('a body that parses to a JSON scalar is a plain string', () => {
      assert.equal(matchesRecord(filter({ body: ['42'] }), record('42')), true);
      assert.equal(matchesRecord(filter({ body: { a: [{ exists: false }] } }), record('"text"')), false);
    });

    it('a pattern without body ignores the body format', () => {
      const f = filter({ attributes: { ApproximateReceiveCount: ['1'] } });
      assert.equal(matchesRecord(f, record('not json')), true);
      assert.equal(matchesRecord(f, record('{"a":1}')), true);
    });
  });

  describe('attributes and message attributes (a workerless extension)', () => {
    const attrs = {
      Attributes: { ApproximateReceiveCount: '3', SentTimestamp: '1', MessageGroupId: 'g1' },
      MessageAttributes: { type: { DataType: 'String', StringValue: 'order' }, priority: { DataType: 'Number', StringValue: '5' } },
    };

    it("match the record's fields: attributes, messageAttributes.<name>.stringValue", () => {
      const r = record('x', attrs);
      assert.equal(matchesRecord(filter({ messageAttributes: { type: { stringValue: ['order'] } } }), r), true);
      assert.equal(matchesRecord(filter({ messageAttributes: { type: { stringValue: ['refund'] } } }), r), false);
      assert.equal(matchesRecord(filter({ messageAttributes: { missing: [{ exists: false }] } }), r), true);
      assert.equal(matchesRecord(filter({ attributes: { MessageGroupId: [{ prefix: 'g' }] } }), r), true);
      assert.equal(matchesRecord(filter({ eventSourceARN: [{ suffix: ':q' }] }), r), true);
    });

    it('attribute values are strings, so numeric never matches them', () => {
      const r = record('x', attrs);
      assert.equal(matchesRecord(filter({ attributes: { ApproximateReceiveCount: [{ numeric: ['>', 1] }] } }), r), false);
      assert.equal(matchesRecord(filter({ attributes: { ApproximateReceiveCount: ['3'] } }), r), true);
    });

    it('body and attributes in one pattern are AND-ed', () => {
      const f = filter({ body: { kind: ['a'] }, messageAttributes: { type: { stringValue: ['order'] } } });
      assert.equal(matchesRecord(f, record('{"kind":"a"}', attrs)), true);
      assert.equal(matchesRecord(f, record('{"kind":"b"}', attrs)), false);
      assert.equal(matchesRecord(f, record('{"kind":"a"}')), false);
    });
  });

  describe('matching details', () => {
    it('nested fields, and lists in the event match when any element does', () => {
      const f = filter({ order: { items: { sku: ['A1'] } }, tags: ['red'] });
      assert.equal(matchesEvent(f, { order: { items: [{ sku: 'B2' }, { sku: 'A1' }] }, tags: ['blue', 'red'] }), true);
      assert.equal(matchesEvent(f, { order: { items: [{ sku: 'B2' }] }, tags: ['red'] }), false);
      assert.equal(matchesEvent(f, { order: 'A1', tags: ['red'] }), false);
    });

    it('exists applies to leaves: an object field neither exists nor is missing', () => {
      assert.equal(matchesEvent(filter({ a: [{ exists: true }] }), { a: { b: 1 } }), false);
      assert.equal(matchesEvent(filter({ a: [{ exists: false }] }), { a: { b: 1 } }), false);
      assert.equal(matchesEvent(filter({ a: [{ exists: true }] }), { a: null }), true);
      assert.equal(matchesEvent(filter({ a: [{ exists: true }] }), { a: [] }), false);
      assert.equal(matchesEvent(filter({ a: { b: [{ exists: false }] } }), {}), true);
    });

    it('anything-but: a value, a list, numbers, prefix/suffix/equals-ignore-case; a missing field never matches', () => {
      assert.equal(matchesEvent(filter({ s: [{ 'anything-but': 'x' }] }), { s: 'y' }), true);
      assert.equal(matchesEvent(filter({ s: [{ 'anything-but': 'x' }] }), { s: 'x' }), false);
      assert.equal(matchesEvent(filter({ n: [{ 'anything-but': [1, 2] }] }), { n: 3 }), true);
      assert.equal(matchesEvent(filter({ n: [{ 'anything-but': [1, 2] }] }), { n: 2 }), false);
      assert.equal(matchesEvent(filter({ s: [{ 'anything-but': { prefix: 'init' } }] }), { s: 'initial' }), false);
      assert.equal(matchesEvent(filter({ s: [{ 'anything-but': { prefix: 'init' } }] }), { s: 'final' }), true);
      assert.equal(matchesEvent(filter({ s: [{ 'anything-but': { suffix: '.tmp' } }] }), { s: 'a.tmp' }), false);
      assert.equal(matchesEvent(filter({ s: [{ 'anything-but': { 'equals-ignore-case': 'X' } }] }), { s: 'x' }), false);
      assert.equal(matchesEvent(filter({ s: [{ 'anything-but': 'x' }] }), {}), false);
      assert.equal(matchesEvent(filter({ s: [{ 'anything-but': 'x' }] }), { s: ['y', 'x'] }), false);
      assert.equal(matchesEvent(filter({ s: [{ 'anything-but': 'x' }] }), { s: ['y', 'z'] }), true);
    });

    it('numeric: every comparison, both ends of a range, JSON numbers only', () => {
      const cases: [unknown[], number, boolean][] = [
        [['<', 5], 4.9, true],
        [['<', 5], 5, false],
        [['<=', 5], 5, true],
        [['>=', 5], 5, true],
        [['>', 5], 5, false],
        [['>=', 0, '<', 1], 0, true],
        [['>=', 0, '<', 1], 1, false],
        [['>', -1, '<=', -0.5], -0.5, true],
      ];
      for (const [range, value, expected] of cases) {
        assert.equal(matchesEvent(filter({ n: [{ numeric: range }] }), { n: value }), expected, `${json(range)} ${value}`);
      }
      assert.equal(matchesEvent(filter({ n: [{ numeric: ['>', 0] }] }), { n: true }), false);
    });

    it('literal types are distinct: "5" is not 5, true is not "true"', () => {
      assert.equal(matchesEvent(filter({ v: [5] }), { v: '5' }), false);
      assert.equal(matchesEvent(filter({ v: [true] }), { v: 'true' }), false);
      assert.equal(matchesEvent(filter({ v: [true] }), { v: true }), true);
    });
  });

  describe('validation', () => {
    const problemsOf = (...patterns: unknown[]) => compileFilter(patterns).problems;

    it('reports every problem with where it is', () => {
      assert.deepEqual(problemsOf({ body: { a: [{ cidr: '10.0.0.0/24' }], b: 'x' } }, 'not json', {}, { n: [{ numeric: ['>', 'x'] }] }), [
        'pattern 1: body.a: unknown operator "cidr" (known: prefix, suffix, equals-ignore-case, wildcard, numeric, exists, anything-but)',
        'pattern 1: body.b must be a list of rules or an object of fields, got "x"',
        'pattern 2 is not valid JSON',
        'pattern 3 must be a non-empty object such as {"body": {"type": ["order"]}}',
        'pattern 4: n: "numeric" takes [op, number] or a range [op, number, op, number] with ops < <= = > >=, got [">","x"]',
      ]);
    });

    it('an invalid $or is refused: not a list, fewer than 2 alternatives, an alternative that is not an object of fields', () => {
      const needs = 'must be a list of at least 2 alternatives, each an object of fields';
      assert.deepEqual(problemsOf({ body: { $or: { a: ['x'] } } }), [`pattern 1: body.$or ${needs}, got {"a":["x"]}`]);
      assert.deepEqual(problemsOf({ $or: [{ a: ['x'] }] }), [`pattern 1: $or ${needs}, got [{"a":["x"]}]`]);
      assert.deepEqual(problemsOf({ $or: [] }), [`pattern 1: $or ${needs}, got []`]);
      assert.deepEqual(problemsOf({ a: ['x'], $or: 'b' }), [`pattern 1: $or ${needs}, got "b"`]);
      assert.deepEqual(problemsOf({ $or: [{ a: ['x'] }, ['b'], {}, 'c'] }), [
        'pattern 1: $or[1] must be a non-empty object of fields, got ["b"]',
        'pattern 1: $or[2] must be a non-empty object of fields, got {}',
        'pattern 1: $or[3] must be a non-empty object of fields, got "c"',
      ]);
      // Problems inside an alternative say which one, nested $or included.
      assert.deepEqual(problemsOf({ body: { $or: [{ a: ['x'] }, { b: { $or: [{ n: [{ numeric: ['>'] }] }, { c: 'd' }] } }] } }), [
        'pattern 1: body.$or[1].b.$or[0].n: "numeric" takes [op, number] or a range [op, number, op, number] with ops < <= = > >=, got [">"]',
        'pattern 1: body.$or[1].b.$or[1].c must be a list of rules or an object of fields, got "d"',
      ]);
    });

    it('wildcard: * for any run of characters, \\* and \\\\ for the characters; ** and other escapes refused', () => {
      const wildcard = (w: string) => filter({ s: [{ wildcard: w }] });
      assert.equal(matchesEvent(wildcard('Simple*Service'), { s: 'SimpleQueueService' }), true);
      assert.equal(matchesEvent(wildcard('Simple*Service'), { s: 'SimpleService' }), true);
      assert.equal(matchesEvent(wildcard('Simple*Service'), { s: 'SimpleQueueServices' }), false);
      assert.equal(matchesEvent(wildcard('a*b*c'), { s: 'abbbc' }), true);
      assert.equal(matchesEvent(wildcard('a*b*c'), { s: 'ac' }), false);
      assert.equal(matchesEvent(wildcard('*ab*ab'), { s: 'abab' }), true);
      assert.equal(matchesEvent(wildcard('a*aa'), { s: 'aa' }), false);
      assert.equal(matchesEvent(wildcard('exact'), { s: 'exact' }), true);
      assert.equal(matchesEvent(wildcard('*'), { s: '' }), true);
      assert.equal(matchesEvent(wildcard('*'), { s: 5 }), false);
      assert.equal(matchesEvent(wildcard('a\\*b'), { s: 'a*b' }), true);
      assert.equal(matchesEvent(wildcard('a\\*b'), { s: 'axb' }), false);
      assert.equal(matchesEvent(wildcard('a\\\\*'), { s: 'a\\tail' }), true);
      assert.equal(matchesEvent(wildcard('a.c'), { s: 'abc' }), false);
      assert.deepEqual(
        problemsOf({ s: [{ wildcard: 'a**b' }] }, { s: [{ wildcard: 'a\\b' }] }, { s: [{ wildcard: 'a\\' }] }, { s: [{ wildcard: 1 }] }),
        [
          'pattern 1: s: "wildcard" takes a string without two * in a row, got "a**b"',
          'pattern 2: s: "wildcard" takes a string in which a backslash escapes only * or \\, got "a\\\\b"',
          'pattern 3: s: "wildcard" takes a string in which a backslash escapes only * or \\, got "a\\\\"',
          'pattern 4: s: "wildcard" takes a string, got 1',
        ],
      );
      assert.deepEqual(problemsOf({ s: [{ 'anything-but': { wildcard: 'x**' } }] }), [
        'pattern 1: s: "anything-but": "wildcard" takes a string without two * in a row, got "x**"',
      ]);
    });

    it('at most 5 patterns, at least one', () => {
      assert.deepEqual(problemsOf(...Array.from({ length: 6 }, () => ({ a: ['x'] }))), [
        "takes at most 5 patterns (the trigger's limit), got 6",
      ]);
      assert.deepEqual(problemsOf(), ['needs at least one pattern']);
    });

    it('operator arguments are checked', () => {
      assert.equal(problemsOf({ a: [{ prefix: 1 }] }).length, 1);
      assert.equal(problemsOf({ a: [{ exists: 'yes' }] }).length, 1);
      assert.equal(problemsOf({ a: [{ 'anything-but': [] }] }).length, 1);
      assert.equal(problemsOf({ a: [{ 'anything-but': { cidr: 'x' } }] }).length, 1);
      assert.equal(problemsOf({ a: [{ 'anything-but': { prefix: { 'equals-ignore-case': 'x' } } }] }).length, 1);
      assert.equal(problemsOf({ a: [{ prefix: { 'equals-ignore-case': 1 } }] }).length, 1);
      assert.equal(problemsOf({ a: [{ suffix: { 'equals-ignore-case': 'x', other: 'y' } }] }).length, 1);
      assert.equal(problemsOf({ a: [{ numeric: ['=', 1, '<', 2] }] }).length, 1);
      assert.equal(problemsOf({ a: [] }).length, 1);
      assert.equal(problemsOf({ a: [{ prefix: 'x', suffix: 'y' }] }).length, 1);
    });
  });
});
