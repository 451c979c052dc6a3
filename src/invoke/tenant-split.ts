import type { Message } from '@aws-sdk/client-sqs';
import { messageGroupOf } from '../core/message.ts';

/**
 * Where a message's tenant id comes from (--tenant-id-from): its MessageGroupId, or a String message attribute.
 * The receivers ask SQS for every system attribute and every message attribute (src/aws/sqs-*-source.ts,
 * `All`), so both are on the message without a change to the receive.
 */
export type TenantSource = { readonly kind: 'group' } | { readonly kind: 'attribute'; readonly name: string };

/** The option's text: `group` or `attribute:NAME` (SQS message attribute names: 1-256 of A-Z a-z 0-9 _ - .). */
export const TENANT_SOURCE_PATTERN = /^(group|attribute:[A-Za-z0-9_.-]{1,256})$/;

/** The source the option's text names; the text matched TENANT_SOURCE_PATTERN (the option table checks it). */
export function parseTenantSource(text: string): TenantSource {
  return text === 'group' ? { kind: 'group' } : { kind: 'attribute', name: text.slice('attribute:'.length) };
}

/** The option's text for `source`, as the log names it. */
export function tenantSourceText(source: TenantSource): string {
  return source.kind === 'group' ? 'group' : `attribute:${source.name}`;
}

/** Why a message has no usable tenant id, as the log line says it. */
export type NoTenantReason = 'missing' | 'not a String attribute' | 'not a header value';

/**
 * A tenant id travels as the X-Amz-Tenant-Id header, so it must be a value HTTP carries unchanged: printable
 * ASCII, without spaces at either end (which HTTP strips). A MessageGroupId always is (SQS allows 1-128 of
 * ASCII 33-126); an attribute may hold any Unicode, which neither client could send.
 */
const HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** The message's tenant id, or why it has none. */
export function tenantIdOf(message: Message, source: TenantSource): { tenantId: string } | { reason: NoTenantReason } {
  let value: string | undefined;
  if (source.kind === 'group') value = message.Attributes?.MessageGroupId;
  else {
    const attribute = message.MessageAttributes?.[source.name];
    if (attribute !== undefined && !(attribute.DataType ?? '').startsWith('String')) return { reason: 'not a String attribute' };
    value = attribute?.StringValue;
  }
  if (value === undefined || value === '') return { reason: 'missing' };
  return HEADER_VALUE.test(value) ? { tenantId: value } : { reason: 'not a header value' };
}

/** The messages of one tenant that one invocation (or, over the payload limit, several in a row) carries. */
export interface TenantRun {
  readonly tenantId: string;
  readonly messages: Message[];
}

export interface TenantSplit {
  /** In the order they are invoked; on a FIFO queue each message group's messages keep their order across runs. */
  readonly runs: TenantRun[];
  /** Messages without a usable tenant id: not invoked, left to the queue's redrive. */
  readonly untenanted: { readonly message: Message; readonly reason: NoTenantReason }[];
  /** FIFO only: messages of a group behind an untenanted one, which must not overtake it; left on the queue too. */
  readonly heldBehind: Message[];
}

/**
 * Splits a batch so that each invocation carries exactly one tenant (a function in tenant isolation mode runs an
 * invocation in the environment of the one tenant its Invoke names).
 *
 * A standard queue has no order: one run per tenant, in order of first appearance. On a FIFO queue a message
 * group's messages must run in order: a message joins the last run of its tenant only if no message of its group
 * sits in a later run; otherwise it starts a new run. With `group` as the source each group is one tenant, so this
 * is one run per tenant; with an attribute that changes within a group, the group is cut where it changes. A FIFO
 * message without a tenant stops its group: the later messages of that group in the batch stay on the queue
 * behind it, as behind a failure (src/settle/fifo-rule.ts).
 */
export function splitByTenant(messages: readonly Message[], source: TenantSource, fifo: boolean): TenantSplit {
  const runs: { tenantId: string; messages: Message[] }[] = [];
  const untenanted: { message: Message; reason: NoTenantReason }[] = [];
  const heldBehind: Message[] = [];
  /** Each tenant's last run, by index. */
  const lastRunOf = new Map<string, number>();
  /** FIFO: the run holding each group's latest message so far. */
  const groupRun = new Map<string, number>();
  /** FIFO: groups stopped by a message without a tenant. */
  const stopped = new Set<string>();
  for (const message of messages) {
    const group = messageGroupOf(message);
    if (fifo && stopped.has(group)) {
      heldBehind.push(message);
      continue;
    }
    const found = tenantIdOf(message, source);
    if ('reason' in found) {
      untenanted.push({ message, reason: found.reason });
      if (fifo) stopped.add(group);
      continue;
    }
    const last = lastRunOf.get(found.tenantId);
    const mayJoin = last !== undefined && (!fifo || last >= (groupRun.get(group) ?? -1));
    const index = mayJoin ? last : runs.push({ tenantId: found.tenantId, messages: [] }) - 1;
    runs[index]!.messages.push(message);
    lastRunOf.set(found.tenantId, index);
    if (fifo) groupRun.set(group, index);
  }
  return { runs, untenanted, heldBehind };
}
