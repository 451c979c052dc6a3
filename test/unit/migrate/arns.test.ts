// Which mappings belong to the function the caller named (Lambda's FunctionName forms: name, name:qualifier,
// partial ARN, full ARN; "ListEventSourceMappings" in the Lambda API reference).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isFunction } from '../../../src/migrate/arns.ts';

const ARN = 'arn:aws:lambda:us-east-1:123456789012:function:orders-fn';

describe('isFunction', () => {
  it('matches the name in every form, and a qualifier only when asked for', () => {
    for (const requested of ['orders-fn', ARN, '123456789012:function:orders-fn']) assert.ok(isFunction(requested, ARN), requested);
    assert.ok(isFunction('orders-fn', `${ARN}:live`), 'an unqualified name covers its aliases');
    assert.ok(isFunction('orders-fn:live', `${ARN}:live`));
    assert.ok(!isFunction('orders-fn:live', ARN));
    assert.ok(!isFunction('orders-fn:live', `${ARN}:blue`));
    assert.ok(isFunction('orders-fn:$LATEST', ARN));
  });

  it('never matches another function whose name starts with it', () => {
    assert.ok(!isFunction('orders-fn', `${ARN}-admin`));
    assert.ok(!isFunction('orders', ARN));
  });
});
