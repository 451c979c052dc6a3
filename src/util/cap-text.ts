/**
 * Text that came from the function (its `errorMessage`, an unknown `itemIdentifier`, a Temporal failure) can hold
 * payload data and be of any size. Everything that logs, counts, shows or forwards such text caps it first, with
 * one rule: at most `maxBytes` of UTF-8, cut on a character boundary, with the number of bytes cut appended so a
 * reader knows the text is not whole.
 */
export const TEXT_CAP_BYTES = 1024;

export function capText(text: string, maxBytes: number = TEXT_CAP_BYTES): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return text;
  const encoded = Buffer.from(text, 'utf8');
  let end = maxBytes;
  // A UTF-8 continuation byte is 10xxxxxx: step back to the start of the character it belongs to.
  while (end > 0 && ((encoded[end] ?? 0) & 0xc0) === 0x80) end--;
  return `${encoded.subarray(0, end).toString('utf8')}…[${bytes - end} bytes cut]`;
}
