import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { interpretResult } from '../../../src/settle/invoke-result.ts';

const ids = ['a', 'b', 'c', 'd'];
const ok = (payload: unknown) => ({
  payload: payload === undefined ? undefined : typeof payload === 'string' ? payload : JSON.stringify(payload),
  functionError: undefined,
});

describe('interpretResult', () => {
  it('treats no result, null, an empty or null list, and any non-report result as full success', () => {
    for (const payload of [undefined, 'null', {}, { batchItemFailures: [] }, { batchItemFailures: null }, '"ok"', 42, [1]]) {
      const v = interpretResult(ok(payload), ids, false);
      assert.equal(v.kind, 'success', JSON.stringify(payload));
      assert.deepEqual(v.deleteIds, ids);
      assert.deepEqual(v.keepIds, []);
    }
  });

  it('keeps exactly the listed messages', () => {
    const v = interpretResult(ok({ batchItemFailures: [{ itemIdentifier: 'b' }, { itemIdentifier: 'd' }] }), ids, false);
    assert.equal(v.kind, 'partial');
    assert.deepEqual(v.deleteIds, ['a', 'c']);
    assert.deepEqual(v.keepIds, ['b', 'd']);
  });

  it('FIFO: keeps the first failure and everything after it', () => {
    const v = interpretResult(ok({ batchItemFailures: [{ itemIdentifier: 'b' }] }), ids, true);
    assert.deepEqual(v.deleteIds, ['a']);
    assert.deepEqual(v.keepIds, ['b', 'c', 'd']);
  });

  it('fails the whole batch for an invalid report', () => {
    const cases: [unknown, string][] = [
      ['{not json', 'the response is not valid JSON'],
      [{ batchItemFailures: 'b' }, 'batchItemFailures is not a list'],
      [{ batchItemFailures: [{ itemIdentifier: '' }] }, 'a batchItemFailures entry has no itemIdentifier'],
      [{ batchItemFailures: [{ itemIdentifier: null }] }, 'a batchItemFailures entry has no itemIdentifier'],
      [{ batchItemFailures: [{ itemId: 'a' }] }, 'a batchItemFailures entry has no itemIdentifier'],
      [{ batchItemFailures: [null] }, 'a batchItemFailures entry has no itemIdentifier'],
      [{ batchItemFailures: [{ itemIdentifier: 'zzz' }] }, 'an itemIdentifier of 3 characters is not in the batch'],
    ];
    for (const [payload, reason] of cases) {
      const v = interpretResult(ok(payload), ids, false);
      assert.equal(v.kind, 'invalid-response', JSON.stringify(payload));
      assert.deepEqual(v.deleteIds, []);
      assert.deepEqual(v.keepIds, ids);
      assert.equal(v.kind === 'invalid-response' && v.reason, reason);
    }
  });

  it('a function error keeps every message and carries errorType and errorMessage', () => {
    const v = interpretResult(
      { payload: JSON.stringify({ errorType: 'TypeError', errorMessage: 'x is undefined', trace: [] }), functionError: 'Unhandled' },
      ids,
      false,
    );
    assert.deepEqual(v, { kind: 'function-error', deleteIds: [], keepIds: ids, errorType: 'TypeError', errorMessage: 'x is undefined' });
    const timeout = interpretResult(
      { payload: '{"errorType":"Sandbox.Timedout","errorMessage":"Task timed out after 3.00 seconds"}', functionError: 'Unhandled' },
      ids,
      false,
    );
    assert.equal(timeout.kind === 'function-error' && timeout.errorType, 'Sandbox.Timedout');
    const opaque = interpretResult({ payload: undefined, functionError: 'Unhandled' }, ids, false);
    assert.equal(opaque.kind === 'function-error' && opaque.errorType, 'Unhandled');
  });
});

describe('interpretResult: retryDelaySeconds (a workerless extension)', () => {
  it('passes each entry’s retryDelaySeconds on as given, by id, and the listed ids as failedIds', () => {
    const v = interpretResult(
      ok({
        batchItemFailures: [
          { itemIdentifier: 'b', retryDelaySeconds: 30 },
          { itemIdentifier: 'c', retryDelaySeconds: 'later' },
          { itemIdentifier: 'd' },
        ],
      }),
      ids,
      false,
    );
    assert.equal(v.kind, 'partial');
    if (v.kind !== 'partial') return;
    assert.deepEqual(v.failedIds, ['b', 'c', 'd']);
    assert.deepEqual(
      [...v.retryDelays],
      [
        ['b', 30],
        ['c', 'later'],
      ],
    );
  });

  it('FIFO: failedIds are the listed ones, keepIds everything from the first failure on', () => {
    const v = interpretResult(ok({ batchItemFailures: [{ itemIdentifier: 'b', retryDelaySeconds: 5 }] }), ids, true);
    assert.equal(v.kind, 'partial');
    if (v.kind !== 'partial') return;
    assert.deepEqual(v.failedIds, ['b']);
    assert.deepEqual(v.keepIds, ['b', 'c', 'd']);
    assert.deepEqual([...v.retryDelays], [['b', 5]]);
  });
});
