import net from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import { markNotSent } from '../core/errors.ts';
import { Http1AnswerReader } from './http1-answer.ts';

// One socket of the lean pool (src/aws/http1-pool.ts) and the call it carries: when a request is written, how an
// answer, a failure or the server's close ends the call, and when a call not yet written goes to another socket.

/** An HTTP answer, whole. */
export interface Http1Result {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * A free socket idle this long is written to only after the loop's next read of its sockets (two setImmediates): long
 * enough that the hot path, whose sockets are reused within a few ms, never waits a turn; shorter than any server's
 * idle limit seen (200 ms behind the proxy of issue 42).
 */
export const RECHECK_IDLE_MS = 100;

/** What a connection asks of the origin that opened it (src/aws/http1-pool.ts's Origin). */
export interface ConnectionOwner {
  /** The call is answered and the socket may carry another (the server's Keep-Alive hint, ms, if any). */
  release(connection: Connection, keepAliveMs: number | undefined): void;
  /** Sends a call that this connection could not carry (its request not written). */
  start(exchange: Exchange): void;
  /** The socket is gone. */
  closed(connection: Connection): void;
  /** Marks an error of a connection that failed before it carried its request. */
  connectFailed(err: Error): Error;
}

/**
 * One socket, carrying one call at a time. Through a proxy's tunnel the socket comes once the tunnel is open
 * (attach); until then the call's request waits here, and destroy() ends the tunnel being opened.
 */
export class Connection {
  #socket: net.Socket | undefined;
  /** The socket to the proxy while the tunnel is being opened. */
  #tunnel: net.Socket | undefined;
  /** The request of the call sent before the socket came. */
  #pending: string | undefined;
  readonly #origin: ConnectionOwner;
  readonly #https: boolean;
  #connected = false;
  #exchange: Exchange | undefined;
  #closed = false;
  /** The server closed its side (the socket read its end): no request is written here again. */
  #ended = false;
  /** While free: when (monotonic ms) it stops being handed out. */
  #freeUntil = Infinity;
  /** When (monotonic ms) it was last made free. */
  freedAt = 0;
  /** The call it carries waits for the loop to read this socket before its request is written (RECHECK_IDLE_MS). */
  #unsent = false;
  /** The turns of the event loop still to pass before then. */
  #recheckTurns = 0;

  constructor(origin: ConnectionOwner, https: boolean) {
    this.#origin = origin;
    this.#https = https;
  }

  /** The socket the calls go over: to the endpoint (or the proxy, for an http origin), or a TLS socket in a tunnel. */
  attach(socket: net.Socket): void {
    this.#tunnel = undefined;
    this.#socket = socket;
    socket.once(this.#https ? 'secureConnect' : 'connect', () => (this.#connected = true));
    socket.on('data', (chunk: Buffer) => this.#data(chunk));
    socket.on('error', (err: Error) => this.#fail(this.#connected ? err : this.#origin.connectFailed(err)));
    socket.on('timeout', () => {
      if (this.#exchange === undefined) socket.destroy();
    });
    socket.on('end', () => this.#end());
    socket.on('close', () => this.#close());
    if (this.#pending !== undefined) {
      socket.write(this.#pending);
      this.#pending = undefined;
    }
  }

  /** A tunnel is being opened on `socket` (to the proxy): destroy() ends it. */
  tunnelling(socket: net.Socket): void {
    this.#tunnel = socket;
  }

  /** The tunnel could not be opened: the call fails (as not sent) and the connection is gone. */
  tunnelFailed(err: Error): void {
    this.#tunnel = undefined;
    this.#pending = undefined;
    this.#fail(this.#origin.connectFailed(err));
    this.#close();
  }

  get connected(): boolean {
    return this.#connected;
  }

  /** Whether a call may be sent here at `now`: open, its server's side too, and not idle past its bound. */
  usable(now: number): boolean {
    return !this.#closed && !this.#ended && now < this.#freeUntil && !(this.#socket?.destroyed ?? false);
  }

  /** Carries `exchange`; `recheck`: its request is written after the loop has read this socket once more. */
  send(exchange: Exchange, recheck = false): void {
    this.#exchange = exchange;
    this.#freeUntil = Infinity;
    exchange.bind(this);
    if (this.#socket === undefined) {
      this.#pending = exchange.takeRequest();
      return;
    }
    this.#socket.setTimeout(0);
    if (recheck) {
      // Two immediates: the first may run in the check phase of the turn under way, before the loop reads its
      // sockets again (a call started from an answer read in this turn's poll); the second runs after the next poll.
      this.#unsent = true;
      this.#recheckTurns = 2;
      setImmediate(writeRechecked, this);
    } else this.#socket.write(exchange.takeRequest());
  }

  /**
   * Two turns after send(exchange, true), past a poll phase that read this socket: the request is written if the
   * server has not closed it meanwhile, else the call is sent on another socket (nothing of it left this one).
   */
  writeRechecked(): void {
    const exchange = this.#exchange;
    if (!this.#unsent || exchange === undefined) return;
    if (--this.#recheckTurns > 0 && !exchange.over) return void setImmediate(writeRechecked, this);
    if (exchange.over) this.#unsent = false;
    else if (this.#ended || this.#closed || this.#socket === undefined || this.#socket.destroyed) this.#resend();
    else {
      this.#unsent = false;
      this.#socket.write(exchange.takeRequest());
    }
  }

  /** Free from `now`: closed after `timeoutMs` idle, and never handed out past it, even before its timer fires. */
  idle(timeoutMs: number, now: number): void {
    this.freedAt = now;
    this.#freeUntil = now + timeoutMs;
    this.#socket?.setTimeout(timeoutMs);
  }

  destroy(err?: Error): void {
    if (this.#socket !== undefined) this.#socket.destroy(err);
    else this.#tunnel?.destroy();
  }

  #data(chunk: Buffer): void {
    const exchange = this.#exchange;
    // Bytes nobody asked for: the connection cannot be trusted with the next call (a call not written yet goes to
    // another socket as it closes).
    if (exchange === undefined || this.#unsent) return void this.#socket?.destroy();
    let answer;
    try {
      answer = exchange.reader.read(chunk);
    } catch (err) {
      this.#fail(err as Error);
      return;
    }
    if (answer === undefined) return;
    this.#exchange = undefined;
    exchange.done({ status: answer.status, headers: answer.headers, body: answer.body });
    if (answer.keepAlive && !this.#closed && !this.#ended) this.#origin.release(this, answer.keepAliveMs);
    else this.#socket?.destroy();
  }

  /**
   * The server closed its side. A free socket is closed now, not after the end of ours and the 'close' that follow
   * a turn of the event loop later (the window the pool handed it out in); a call in flight ends with the 'close'.
   */
  #end(): void {
    this.#ended = true;
    if (this.#exchange === undefined) this.#socket?.destroy();
    else this.#resend();
  }

  /** The call's request was not written here yet: the socket is closed and the call goes to another; else false. */
  #resend(): boolean {
    const exchange = this.#exchange;
    if (!this.#unsent || exchange === undefined) return false;
    this.#unsent = false;
    this.#exchange = undefined;
    this.#socket?.destroy();
    if (!exchange.over) this.#origin.start(exchange);
    return true;
  }

  #fail(err: Error): void {
    if (this.#resend()) return;
    const exchange = this.#exchange;
    this.#exchange = undefined;
    this.#socket?.destroy();
    exchange?.fail(err);
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#resend()) return void this.#origin.closed(this);
    const exchange = this.#exchange;
    this.#exchange = undefined;
    if (exchange) {
      const answer = exchange.reader.end();
      if (answer) exchange.done({ status: answer.status, headers: answer.headers, body: answer.body });
      else
        exchange.fail(
          Object.assign(new Error(exchange.reader.started ? 'connection closed before the answer was complete' : 'socket hang up'), {
            code: 'ECONNRESET',
          }),
        );
    }
    this.#origin.closed(this);
  }
}

/** One call: its request, its answer as it is read, and how it ends. Listens to the call's signal itself (no closure). */
export class Exchange {
  /** Dropped once written: a long poll would otherwise hold its signed request for as long as it is open. */
  #request: string;
  readonly reader: Http1AnswerReader;
  readonly #signal: AbortSignal | undefined;
  readonly #abortError: (signal: AbortSignal) => Error;
  readonly #resolve: (result: Http1Result) => void;
  readonly #reject: (err: Error) => void;
  #connection: Connection | undefined;
  /** The queue this call waits in for a socket, if it does. */
  queuedIn: Set<Exchange> | undefined;
  #over = false;

  constructor(
    request: string,
    signal: AbortSignal | undefined,
    maxAnswerBytes: number,
    abortError: (signal: AbortSignal) => Error,
    resolve: (result: Http1Result) => void,
    reject: (err: Error) => void,
  ) {
    this.#request = request;
    this.reader = new Http1AnswerReader(maxAnswerBytes);
    this.#signal = signal;
    this.#abortError = abortError;
    this.#resolve = resolve;
    this.#reject = reject;
    signal?.addEventListener('abort', this, ONCE);
  }

  /** Answered, failed or aborted. */
  get over(): boolean {
    return this.#over;
  }

  takeRequest(): string {
    const request = this.#request;
    this.#request = '';
    return request;
  }

  bind(connection: Connection): void {
    this.#connection = connection;
  }

  /** The signal aborted: the call ends now, and its socket with it. */
  handleEvent(): void {
    if (this.#over) return;
    this.queuedIn?.delete(this);
    this.queuedIn = undefined;
    this.fail(this.#abortError(this.#signal!));
    this.#connection?.destroy();
  }

  done(result: Http1Result): void {
    if (this.#over) return;
    this.#end();
    this.#resolve(result);
  }

  fail(err: Error): void {
    if (this.#over) return;
    this.#end();
    // An aborted call says so, whatever its socket said as it was destroyed; an answer too large says that.
    const e = this.#signal?.aborted && err.name !== 'AnswerTooLarge' ? this.#abortError(this.#signal) : err;
    this.#reject(this.#connection?.connected ? e : markNotSent(e));
  }

  #end(): void {
    this.#over = true;
    this.#signal?.removeEventListener('abort', this);
  }
}

const ONCE = { once: true } as const;

/** setImmediate's callback for send(exchange, true): a function of its argument, no closure per call. */
function writeRechecked(connection: Connection): void {
  connection.writeRechecked();
}

/** A call that never got a socket: the pool was destroyed first. */
export function closedBeforeSent(): Error {
  return new Error('the client was closed before this call was sent');
}
