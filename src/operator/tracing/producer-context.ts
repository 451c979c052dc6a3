import type { Message } from '@aws-sdk/client-sqs';

/**
 * A producer's span context as carried by an SQS message, ready to become a span link. Plain data, so this
 * module needs no OpenTelemetry package: the adapter turns it into a `SpanContext`.
 */
export interface ProducerContext {
  /** 32 lower-case hex digits, not all zero. */
  readonly traceId: string;
  /** 16 lower-case hex digits, not all zero. */
  readonly spanId: string;
  readonly sampled: boolean;
  /** The raw W3C `tracestate` message attribute, when a `traceparent` came with one. */
  readonly traceState?: string;
  readonly source: 'AWSTraceHeader' | 'traceparent';
}

const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;
const ZERO32 = '0'.repeat(32);
const ZERO16 = '0'.repeat(16);

/**
 * Parses the X-Ray header SQS sets as the `AWSTraceHeader` system attribute when the sender was traced
 * (`Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1`). The X-Ray trace id is the
 * 8-digit epoch followed by 24 random digits, which together are the 32-digit W3C trace id. Fields may come in
 * any order and with extra keys (`Lineage`, `Self`); without a `Parent` there is no span to link to.
 * Returns undefined for anything malformed: a bad header from a producer must never fail a batch.
 */
export function parseAwsTraceHeader(header: string): ProducerContext | undefined {
  let root: string | undefined;
  let parent: string | undefined;
  let sampled = false;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 'Root') root = value;
    else if (key === 'Parent') parent = value;
    else if (key === 'Sampled') sampled = value === '1';
  }
  if (root === undefined || parent === undefined) return undefined;
  const m = /^1-([0-9a-fA-F]{8})-([0-9a-fA-F]{24})$/.exec(root);
  if (!m) return undefined;
  const traceId = `${m[1]}${m[2]}`.toLowerCase();
  const spanId = parent.toLowerCase();
  if (!valid(traceId, spanId)) return undefined;
  return { traceId, spanId, sampled, source: 'AWSTraceHeader' };
}

/**
 * Parses a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`). Version ff is invalid; a later version may
 * append fields after the flags, which are ignored as the W3C spec asks. Returns undefined when malformed.
 */
export function parseTraceparent(header: string, traceState?: string): ProducerContext | undefined {
  const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/.exec(header.trim().toLowerCase());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (!valid(traceId!, spanId!)) return undefined;
  const sampled = (Number.parseInt(flags!, 16) & 1) === 1;
  return { traceId: traceId!, spanId: spanId!, sampled, ...(traceState ? { traceState } : {}), source: 'traceparent' };
}

/**
 * Every producer context a message carries: its `traceparent` message attribute (set by OpenTelemetry
 * producers) and its `AWSTraceHeader` system attribute (set by SQS from X-Ray), without duplicates. Reads
 * attributes only, never the body.
 */
export function producerContexts(message: Message): ProducerContext[] {
  const found: ProducerContext[] = [];
  const attrs = message.MessageAttributes ?? {};
  const traceparent = attrs['traceparent']?.StringValue;
  if (traceparent !== undefined) {
    const ctx = parseTraceparent(traceparent, attrs['tracestate']?.StringValue);
    if (ctx) found.push(ctx);
  }
  const xray = message.Attributes?.['AWSTraceHeader'];
  if (xray !== undefined) {
    const ctx = parseAwsTraceHeader(xray);
    if (ctx && !found.some((f) => f.traceId === ctx.traceId && f.spanId === ctx.spanId)) found.push(ctx);
  }
  return found;
}

function valid(traceId: string, spanId: string): boolean {
  return HEX32.test(traceId) && HEX16.test(spanId) && traceId !== ZERO32 && spanId !== ZERO16;
}
