/**
 * A body read in pieces, held at the cost of its bytes: a Buffer of its own costs about 100 bytes of heap whatever it
 * holds, so a body of 1-byte chunks (or 1-byte reads) held a Buffer a piece would cost some 130 bytes a byte, and the
 * answer caps (src/core/answer-caps.ts) would bound nothing (issue 42). Small pieces are copied into blocks that grow
 * with the body; a large one is kept as a buffer of its own (a view of part of a larger read copied, so as not to
 * keep the whole read alive). Used by both clients: the lean reader (src/aws/http1-answer.ts) and the SDK's answer
 * caps (src/aws/sdk-answer-caps.ts).
 */
export class BodyPieces {
  /** Pieces complete so far, in order. */
  #pieces: Buffer[] = [];
  /** Where small pieces are gathered, and how much of it they fill. */
  #block: Buffer | undefined;
  #blockUsed = 0;
  /** The body's bytes so far. */
  bytes = 0;

  add(piece: Buffer): void {
    if (piece.length === 0) return;
    this.bytes += piece.length;
    if (piece.length >= OWN_PIECE_BYTES) {
      this.#seal();
      this.#pieces.push(piece.length === piece.buffer.byteLength ? piece : Buffer.from(piece));
      return;
    }
    if (this.#block === undefined || this.#blockUsed + piece.length > this.#block.length) {
      this.#seal();
      this.#block = Buffer.allocUnsafe(Math.min(BLOCK_MAX_BYTES, Math.max(BLOCK_MIN_BYTES, this.bytes)));
    }
    piece.copy(this.#block, this.#blockUsed);
    this.#blockUsed += piece.length;
  }

  /** The pieces complete so far, handed over (a stream passes them on); the block being filled stays. */
  take(): Buffer[] {
    const pieces = this.#pieces;
    this.#pieces = [];
    return pieces;
  }

  /** Everything not taken, the block being filled included, handed over. */
  takeAll(): Buffer[] {
    this.#seal();
    return this.take();
  }

  /** The whole body (nothing taken) in one buffer of its size. */
  join(): Buffer {
    const pieces = this.takeAll();
    const only = pieces.length === 1 ? pieces[0]! : undefined;
    return only !== undefined && only.length === only.buffer.byteLength ? only : Buffer.concat(pieces, this.bytes);
  }

  #seal(): void {
    if (this.#block !== undefined && this.#blockUsed > 0) this.#pieces.push(this.#block.subarray(0, this.#blockUsed));
    this.#block = undefined;
    this.#blockUsed = 0;
  }
}

/** A piece this long or longer is kept as a buffer of its own; shorter ones are gathered in blocks. */
const OWN_PIECE_BYTES = 16 * 1024;
/** A block starts at BLOCK_MIN_BYTES and grows with the body read so far, up to BLOCK_MAX_BYTES. */
const BLOCK_MIN_BYTES = 1024;
const BLOCK_MAX_BYTES = 64 * 1024;
