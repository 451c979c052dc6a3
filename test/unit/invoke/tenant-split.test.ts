import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { parseTenantSource, splitByTenant, tenantIdOf, type TenantSplit } from '../../../src/invoke/tenant-split.ts';
import { message } from '../../support/factories.ts';

const GROUP = parseTenantSource('group');
const ATTRIBUTE = parseTenantSource('attribute:tenant');

/** A message of `group` whose `tenant` attribute is `tenant` (a String attribute; none when undefined). */
function msg(id: string, group: string | undefined, tenant?: string): Message {
  return message({
    MessageId: id,
    Attributes: { ApproximateReceiveCount: '1', ...(group !== undefined ? { MessageGroupId: group } : {}) },
    ...(tenant !== undefined ? { MessageAttributes: { tenant: { DataType: 'String', StringValue: tenant } } } : {}),
  });
}

/** The split as ids: `tenant: id id`, one string per run, then the untenanted and the held-back ids. */
function shape(split: TenantSplit): { runs: string[]; untenanted: string[]; heldBehind: string[] } {
  return {
    runs: split.runs.map((r) => `${r.tenantId}: ${r.messages.map((m) => m.MessageId).join(' ')}`),
    untenanted: split.untenanted.map((u) => `${u.message.MessageId} (${u.reason})`),
    heldBehind: split.heldBehind.map((m) => m.MessageId ?? ''),
  };
}

/** Every group's messages, in the order the runs invoke them. */
function orderPerGroup(split: TenantSplit): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of split.runs.flatMap((r) => r.messages)) {
    const g = m.Attributes?.MessageGroupId ?? '';
    out.set(g, [...(out.get(g) ?? []), m.MessageId ?? '']);
  }
  return out;
}

describe('parseTenantSource', () => {
  it('reads group and attribute:NAME', () => {
    assert.deepEqual(GROUP, { kind: 'group' });
    assert.deepEqual(parseTenantSource('attribute:a.b-c_1'), { kind: 'attribute', name: 'a.b-c_1' });
  });
});

describe('tenantIdOf', () => {
  it('group: the MessageGroupId (the tenant key of a fair queue, or a FIFO group)', () => {
    assert.deepEqual(tenantIdOf(msg('1', 'acme'), GROUP), { tenantId: 'acme' });
    assert.deepEqual(tenantIdOf(msg('1', undefined), GROUP), { reason: 'missing' });
  });

  it('attribute: the String attribute of that name, also a custom String type (String.tenant)', () => {
    assert.deepEqual(tenantIdOf(msg('1', 'g', 'blue'), ATTRIBUTE), { tenantId: 'blue' });
    const custom = message({ MessageAttributes: { tenant: { DataType: 'String.tenant', StringValue: 'red' } } });
    assert.deepEqual(tenantIdOf(custom, ATTRIBUTE), { tenantId: 'red' });
  });

  it('an absent or empty attribute is missing; a Number or Binary one is not a String attribute', () => {
    assert.deepEqual(tenantIdOf(msg('1', 'g'), ATTRIBUTE), { reason: 'missing' });
    assert.deepEqual(tenantIdOf(msg('1', 'g', ''), ATTRIBUTE), { reason: 'missing' });
    const number = message({ MessageAttributes: { tenant: { DataType: 'Number', StringValue: '42' } } });
    assert.deepEqual(tenantIdOf(number, ATTRIBUTE), { reason: 'not a String attribute' });
    const binary = message({ MessageAttributes: { tenant: { DataType: 'Binary', BinaryValue: new Uint8Array([1]) } } });
    assert.deepEqual(tenantIdOf(binary, ATTRIBUTE), { reason: 'not a String attribute' });
  });

  it('a value HTTP cannot carry unchanged as X-Amz-Tenant-Id is not used: non-ASCII, control characters, spaces at the ends', () => {
    for (const bad of ['tenant-é', 'a\nb', ' blue', 'blue ', '\t'])
      assert.deepEqual(tenantIdOf(msg('1', 'g', bad), ATTRIBUTE), { reason: 'not a header value' }, JSON.stringify(bad));
    for (const good of ['a', 'acme corp', 'x/y:z=1+2@3', '~!'.repeat(64)])
      assert.deepEqual(tenantIdOf(msg('1', 'g', good), ATTRIBUTE), { tenantId: good });
  });
});

describe('splitByTenant', () => {
  it('one tenant: one run of the whole batch, in order', () => {
    const split = splitByTenant([msg('1', 'a'), msg('2', 'a'), msg('3', 'a')], GROUP, false);
    assert.deepEqual(shape(split), { runs: ['a: 1 2 3'], untenanted: [], heldBehind: [] });
  });

  it('a standard queue (fair queue): one run per tenant, in order of first appearance', () => {
    const split = splitByTenant([msg('1', 'a'), msg('2', 'b'), msg('3', 'a'), msg('4', 'c'), msg('5', 'b')], GROUP, false);
    assert.deepEqual(shape(split), { runs: ['a: 1 3', 'b: 2 5', 'c: 4'], untenanted: [], heldBehind: [] });
  });

  it('a FIFO queue with the group as tenant: one run per group, each in its order', () => {
    const split = splitByTenant([msg('1', 'a'), msg('2', 'b'), msg('3', 'a'), msg('4', 'b'), msg('5', 'a')], GROUP, true);
    assert.deepEqual(shape(split), { runs: ['a: 1 3 5', 'b: 2 4'], untenanted: [], heldBehind: [] });
  });

  it('a FIFO group whose tenant attribute changes is cut where it changes, so no message overtakes an earlier one of its group', () => {
    // Group g: 1 (t1), 2 (t2), 3 (t1). Joining 3 to the first run would run it before 2.
    const split = splitByTenant([msg('1', 'g', 't1'), msg('2', 'g', 't2'), msg('3', 'g', 't1'), msg('4', 'h', 't1')], ATTRIBUTE, true);
    assert.deepEqual(shape(split).runs, ['t1: 1', 't2: 2', 't1: 3 4']);
    assert.deepEqual(orderPerGroup(split).get('g'), ['1', '2', '3']);
  });

  it('the same batch on a standard queue has no order to keep: one run per tenant', () => {
    const split = splitByTenant([msg('1', 'g', 't1'), msg('2', 'g', 't2'), msg('3', 'g', 't1')], ATTRIBUTE, false);
    assert.deepEqual(shape(split).runs, ['t1: 1 3', 't2: 2']);
  });

  it('a standard queue: a message without a tenant id is left out alone', () => {
    const split = splitByTenant([msg('1', 'g', 't1'), msg('2', 'g'), msg('3', 'g', 't1'), msg('4', 'g', 'é')], ATTRIBUTE, false);
    assert.deepEqual(shape(split), { runs: ['t1: 1 3'], untenanted: ['2 (missing)', '4 (not a header value)'], heldBehind: [] });
  });

  it('a FIFO queue: a message without a tenant id stops its group (the later ones stay behind it); other groups carry on', () => {
    const batch = [msg('1', 'g', 't1'), msg('2', 'g'), msg('3', 'h', 't2'), msg('4', 'g', 't1'), msg('5', 'h', 't2'), msg('6', 'g', 't3')];
    assert.deepEqual(shape(splitByTenant(batch, ATTRIBUTE, true)), {
      runs: ['t1: 1', 't2: 3 5'],
      untenanted: ['2 (missing)'],
      heldBehind: ['4', '6'],
    });
  });

  it('every message lands exactly once: in a run, untenanted or held behind (a seeded random walk over batches)', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 300; round++) {
      const fifo = round % 2 === 0;
      const batch = Array.from({ length: 1 + Math.floor(random() * 10) }, (_, i) => {
        const tenant = random() < 0.1 ? undefined : `t${Math.floor(random() * 3)}`;
        return msg(`${round}-${i}`, `g${Math.floor(random() * 3)}`, tenant);
      });
      const split = splitByTenant(batch, ATTRIBUTE, fifo);
      const placed = [...split.runs.flatMap((r) => r.messages), ...split.untenanted.map((u) => u.message), ...split.heldBehind];
      assert.deepEqual(placed.map((m) => m.MessageId).sort(), batch.map((m) => m.MessageId).sort());
      for (const run of split.runs) {
        assert.ok(run.messages.length > 0);
        for (const m of run.messages) assert.equal(m.MessageAttributes?.['tenant']?.StringValue, run.tenantId);
      }
      if (!fifo) continue;
      // Each group's invoked messages are a prefix of that group in receive order: nothing overtakes, nothing skips a gap.
      for (const [group, invoked] of orderPerGroup(split)) {
        const ofGroup = batch.filter((m) => m.Attributes?.MessageGroupId === group).map((m) => m.MessageId);
        assert.deepEqual(invoked, ofGroup.slice(0, invoked.length), `group ${group} of ${JSON.stringify(shape(split))}`);
      }
    }
  });
});
