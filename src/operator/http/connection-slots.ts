// Which connection gives up its place when the HTTP server holds its maximum. Refusing the new one, as Node's
// server.maxConnections does, lets any peer that opens the maximum and sends nothing silence the probes until the
// headers timeout closes its connections, and a peer that reopens them every few seconds silences them for good:
// the kubelet then restarts a healthy pod mid-invocation. A probe or a scrape sends its request as soon as it is
// connected, so the connection that has waited longest without a complete request is the one least likely to be
// one: it goes first, then the connection idle longest between two requests (its client reconnects). Connections
// with a request in flight are never closed for a newcomer. docs/operations.md explains the choice.

/** What to do with a new connection: admit it, after closing `evict` when one had to make room, or refuse it. */
export type Admission<K> = { readonly admit: true; readonly evict?: K } | { readonly admit: false };

/**
 * The HTTP server's places, one per connection: pure bookkeeping, the server closes the sockets. A connection is
 * `waiting` (no complete request yet), `busy` (a request in flight) or `idle` (kept alive between requests).
 */
export class ConnectionSlots<K> {
  readonly #max: number;
  /** Oldest first: insertion order. */
  readonly #waiting = new Set<K>();
  /** Idle longest first: a connection is added again each time its last answer ends. */
  readonly #idle = new Set<K>();
  /** Requests in flight per connection (pipelining can make it more than one). */
  readonly #busy = new Map<K, number>();

  constructor(max: number) {
    this.#max = max;
  }

  /** Connections held. */
  get size(): number {
    return this.#waiting.size + this.#idle.size + this.#busy.size;
  }

  /** A connection was accepted. */
  admit(key: K): Admission<K> {
    let evict: K | undefined;
    if (this.size >= this.#max) {
      evict = first(this.#waiting) ?? first(this.#idle);
      if (evict === undefined) return { admit: false };
      this.remove(evict);
    }
    this.#waiting.add(key);
    return evict === undefined ? { admit: true } : { admit: true, evict };
  }

  /** A complete request arrived on the connection. */
  requestStarted(key: K): void {
    if (!this.#has(key)) return;
    this.#waiting.delete(key);
    this.#idle.delete(key);
    this.#busy.set(key, (this.#busy.get(key) ?? 0) + 1);
  }

  /** A request's answer ended (sent or aborted). */
  requestEnded(key: K): void {
    const inFlight = this.#busy.get(key);
    if (inFlight === undefined) return;
    if (inFlight > 1) return void this.#busy.set(key, inFlight - 1);
    this.#busy.delete(key);
    this.#idle.add(key);
  }

  /** The connection closed, or was chosen to. */
  remove(key: K): void {
    this.#waiting.delete(key);
    this.#idle.delete(key);
    this.#busy.delete(key);
  }

  #has(key: K): boolean {
    return this.#waiting.has(key) || this.#idle.has(key) || this.#busy.has(key);
  }
}

function first<K>(set: ReadonlySet<K>): K | undefined {
  for (const key of set) return key;
  return undefined;
}
