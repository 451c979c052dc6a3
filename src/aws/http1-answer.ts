import type { IncomingHttpHeaders } from 'node:http';
import { answerTooLarge } from '../core/answer-caps.ts';
import { BodyPieces } from './body-pieces.ts';

/**
 * One HTTP/1.1 answer (RFC 9112), read from the bytes of a connection as they come: the pure core of the lean
 * transport's client (src/aws/http1-pool.ts). It keeps what node:http's parser (llhttp) enforces where an AWS
 * answer could differ:
 * - the head (status line and fields) at most HEAD_MAX_BYTES, Node's default --max-http-header-size, else an
 *   HPE_HEADER_OVERFLOW error, so a server that sends fields forever is cut off;
 * - interim answers (1xx) skipped; 204, 304 and the answer to nothing else without a body;
 * - the body framed by `Transfer-Encoding: chunked` (whose extensions and trailer fields are read and dropped,
 *   each line at most HEAD_MAX_BYTES), else by `Content-Length` (two different values are an error), else by the
 *   end of the connection;
 * - the connection kept for the next request unless the answer says `Connection: close`, is HTTP/1.0 without
 *   `Connection: keep-alive`, or ends with the connection.
 * On top, the body is capped at `maxBodyBytes` (src/core/answer-caps.ts): a Content-Length above the cap is
 * refused before a byte of the body is read, and a body that grows past it as soon as it does; the body is held at
 * the cost of its bytes, however small the chunks or reads it comes in (src/aws/body-pieces.ts).
 */

/** Node's default --max-http-header-size: the status line and all fields of one answer. */
export const HEAD_MAX_BYTES = 16 * 1024;

export interface Http1Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** The connection may carry the next request. */
  readonly keepAlive: boolean;
  /** The server's idle limit for the connection (`Keep-Alive: timeout=N`), in ms; undefined when not given. */
  readonly keepAliveMs: number | undefined;
}

/** A malformed answer, with the code llhttp gives the same fault (HPE_...). */
export function parseError(code: string, reason: string): Error {
  return Object.assign(new Error(`Parse Error: ${reason}`), { code });
}

const EMPTY = Buffer.alloc(0);
const CRLF = Buffer.from('\r\n');
const END_OF_HEAD = Buffer.from('\r\n\r\n');

type Framing = { kind: 'length'; left: number } | { kind: 'chunked' } | { kind: 'close' };

export class Http1AnswerReader {
  readonly #maxBodyBytes: number;
  /** Bytes read but not yet consumed (a head, a chunk-size line, a trailer line in pieces). */
  #pending: Buffer = Buffer.alloc(0);
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  #framing: Framing | undefined;
  /** In a chunked body: the bytes of the current chunk still to come (-1: at a size line; -2: in the trailer). */
  #chunkLeft = -1;
  /** After a chunk's data: its CRLF still to skip. */
  #chunkCrlf = false;
  /** The body so far, held at the cost of its bytes however small its pieces (src/aws/body-pieces.ts). */
  readonly #body = new BodyPieces();
  #done: Http1Answer | undefined;

  constructor(maxBodyBytes: number) {
    this.#maxBodyBytes = maxBodyBytes;
  }

  /** Whether the head is read (the server has started to answer). */
  get started(): boolean {
    return this.#framing !== undefined;
  }

  /**
   * Reads `bytes`. Returns the answer once it is complete (any bytes past its end dropped, and the connection
   * then not kept), else undefined. Throws a parse error, or an AnswerTooLarge error.
   */
  read(bytes: Buffer): Http1Answer | undefined {
    if (this.#done) return this.#done;
    let data = this.#pending.length > 0 ? Buffer.concat([this.#pending, bytes]) : bytes;
    this.#pending = EMPTY;
    while (this.#done === undefined && data.length > 0) {
      if (this.#framing === undefined) data = this.#readHead(data);
      else if (this.#framing.kind === 'chunked') data = this.#readChunked(data);
      else data = this.#readBody(data);
    }
    // Bytes past the answer's end: nothing a server sends unasked on HTTP/1.1, so the connection is not reused.
    if (this.#done !== undefined && data.length > 0) this.#done = withoutKeepAlive(this.#done);
    return this.#done;
  }

  /** The connection ended: completes an answer framed by the end of the connection, else undefined (cut short). */
  end(): Http1Answer | undefined {
    if (this.#done) return this.#done;
    if (this.#framing?.kind === 'close') this.#finish(false);
    return this.#done;
  }

  #readHead(data: Buffer): Buffer {
    const at = data.indexOf(END_OF_HEAD);
    if (at < 0) {
      if (data.length > HEAD_MAX_BYTES) throw parseError('HPE_HEADER_OVERFLOW', 'Header overflow');
      this.#pending = data;
      return EMPTY;
    }
    if (at + 4 > HEAD_MAX_BYTES) throw parseError('HPE_HEADER_OVERFLOW', 'Header overflow');
    const lines = data.toString('latin1', 0, at).split('\r\n');
    const rest = data.subarray(at + 4);
    const statusLine = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(lines[0]!);
    if (!statusLine) throw parseError('HPE_INVALID_CONSTANT', 'Expected HTTP/');
    const status = Number(statusLine[2]);
    const headers: IncomingHttpHeaders = {};
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0 || !TOKEN.test(line.slice(0, colon))) throw parseError('HPE_INVALID_HEADER_TOKEN', 'Invalid header token');
      const name = line.slice(0, colon).toLowerCase();
      const value = line.slice(colon + 1).trim();
      const seen = headers[name];
      if (seen === undefined) headers[name] = value;
      else if (name === 'content-length') {
        if (seen !== value) throw parseError('HPE_UNEXPECTED_CONTENT_LENGTH', 'Duplicate Content-Length');
      } else headers[name] = `${String(seen)}, ${value}`;
    }
    // An interim answer (100 Continue, 103 Early Hints): the real one follows.
    if (status >= 100 && status < 200 && status !== 101) return rest;
    this.#status = status;
    this.#headers = headers;
    const http10 = statusLine[1] === '0';
    const connection = String(headers['connection'] ?? '').toLowerCase();
    this.#keepAlive = http10 ? /\bkeep-alive\b/.test(connection) : !/\bclose\b/.test(connection);
    const te = headers['transfer-encoding'];
    const length = headers['content-length'];
    if (status === 204 || status === 304 || (status >= 100 && status < 200)) this.#framing = { kind: 'length', left: 0 };
    else if (te !== undefined) {
      if (!/(^|,)\s*chunked\s*$/i.test(String(te)))
        throw parseError('HPE_INVALID_TRANSFER_ENCODING', 'Request has invalid `Transfer-Encoding`');
      this.#framing = { kind: 'chunked' };
    } else if (length !== undefined) {
      if (!/^\d{1,15}$/.test(String(length))) throw parseError('HPE_INVALID_CONTENT_LENGTH', 'Invalid character in Content-Length');
      const announced = Number(length);
      if (announced > this.#maxBodyBytes) throw answerTooLarge(announced, this.#maxBodyBytes, true);
      this.#framing = { kind: 'length', left: announced };
    } else {
      this.#framing = { kind: 'close' };
      this.#keepAlive = false;
    }
    if (this.#framing.kind === 'length' && this.#framing.left === 0) this.#finish(this.#keepAlive);
    return rest;
  }

  #keepAlive = true;

  #readBody(data: Buffer): Buffer {
    const framing = this.#framing as Exclude<Framing, { kind: 'chunked' }>;
    const take = framing.kind === 'length' ? Math.min(framing.left, data.length) : data.length;
    this.#append(data.subarray(0, take));
    if (framing.kind === 'length') {
      framing.left -= take;
      if (framing.left === 0) this.#finish(this.#keepAlive);
    }
    return data.subarray(take);
  }

  #readChunked(data: Buffer): Buffer {
    if (this.#chunkLeft > 0) {
      const take = Math.min(this.#chunkLeft, data.length);
      this.#append(data.subarray(0, take));
      this.#chunkLeft -= take;
      if (this.#chunkLeft === 0) {
        this.#chunkLeft = -1;
        this.#chunkCrlf = true;
      }
      return data.subarray(take);
    }
    const at = data.indexOf(CRLF);
    if (at < 0) {
      if (data.length > HEAD_MAX_BYTES) throw parseError('HPE_CHUNK_EXTENSIONS_OVERFLOW', 'Chunk line overflow');
      this.#pending = data;
      return EMPTY;
    }
    const line = data.toString('latin1', 0, at);
    const rest = data.subarray(at + 2);
    if (this.#chunkCrlf) {
      // The CRLF that ends a chunk's data.
      if (at !== 0) throw parseError('HPE_STRICT', 'Expected LF after chunk data');
      this.#chunkCrlf = false;
      return rest;
    }
    if (this.#chunkLeft === -2) {
      // A trailer field, dropped; an empty line ends the answer.
      if (line === '') this.#finish(this.#keepAlive);
      return rest;
    }
    const size = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/.exec(line);
    if (!size) throw parseError('HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size');
    const bytes = parseInt(size[1]!, 16);
    if (bytes === 0) this.#chunkLeft = -2;
    else {
      if (this.#body.bytes + bytes > this.#maxBodyBytes) throw answerTooLarge(this.#body.bytes + bytes, this.#maxBodyBytes, false);
      this.#chunkLeft = bytes;
    }
    return rest;
  }

  #append(bytes: Buffer): void {
    if (bytes.length === 0) return;
    const total = this.#body.bytes + bytes.length;
    if (total > this.#maxBodyBytes) throw answerTooLarge(total, this.#maxBodyBytes, false);
    this.#body.add(bytes);
  }

  #finish(keepAlive: boolean): void {
    const hint = /(?:^|,)\s*timeout=(\d+)/i.exec(String(this.#headers['keep-alive'] ?? ''));
    this.#done = {
      status: this.#status,
      headers: this.#headers,
      body: this.#body.join(),
      keepAlive,
      keepAliveMs: hint ? Number(hint[1]) * 1000 : undefined,
    };
  }
}

function withoutKeepAlive(answer: Http1Answer): Http1Answer {
  return { status: answer.status, headers: answer.headers, body: answer.body, keepAlive: false, keepAliveMs: answer.keepAliveMs };
}

/** A field name: RFC 9110's token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
