import assert from 'node:assert/strict';
import { test } from 'node:test';
import { capText, TEXT_CAP_BYTES } from '../../../src/util/cap-text.ts';

test('text within the cap is returned whole', () => {
  assert.equal(capText('short'), 'short');
  assert.equal(capText('x'.repeat(TEXT_CAP_BYTES)), 'x'.repeat(TEXT_CAP_BYTES));
});

test('text over the cap keeps at most the cap in bytes and says how much was cut', () => {
  const capped = capText('a'.repeat(1_000_000));
  assert.equal(capped, `${'a'.repeat(TEXT_CAP_BYTES)}…[${1_000_000 - TEXT_CAP_BYTES} bytes cut]`);
});

test('the cut never splits a multi-byte character', () => {
  // "é" is 2 bytes: 3 ASCII bytes + "é" crosses a 4-byte cap, which must end before the "é".
  assert.equal(capText('abcé', 4), 'abc…[2 bytes cut]');
  const emoji = '😀'.repeat(10); // 4 bytes each
  const capped = capText(emoji, 10);
  assert.equal(capped, `${'😀'.repeat(2)}…[32 bytes cut]`);
  assert.ok(!capped.includes('\uFFFD'));
});
