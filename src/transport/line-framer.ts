/**
 * Splits a byte stream into newline-delimited lines, never holding more than `maxLineBytes` of
 * one line. A longer line is skipped up to its newline and reported as oversized (with its size
 * and a little of its start and end, enough to find its `id`), so the next line is read normally.
 * Pure: no I/O, so it is tested by feeding chunks.
 */

export type FramedLine =
  | { readonly kind: 'line'; readonly text: string }
  | { readonly kind: 'oversized'; readonly bytes: number; readonly head: string; readonly tail: string };

/** Bytes kept from each end of an oversized line. */
const EDGE_BYTES = 4096;
const NEWLINE = 0x0a;

export class LineFramer {
  readonly #maxLineBytes: number;
  /** Pieces of the current line while it fits. */
  #pieces: Buffer[] = [];
  #size = 0;
  /** Set while skipping an oversized line. */
  #skipping: { head: Buffer; tail: Buffer } | null = null;

  constructor(maxLineBytes: number) {
    this.#maxLineBytes = maxLineBytes;
  }

  /** Feed one chunk; returns the lines it completed, in order (blank lines are dropped). */
  push(chunk: Buffer): FramedLine[] {
    const out: FramedLine[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      this.#take(chunk.subarray(start, end));
      if (newline === -1) break;
      const line = this.#finishLine();
      if (line) out.push(line);
      start = newline + 1;
    }
    return out;
  }

  /** Bytes held for the unfinished line (for tests and diagnostics). */
  get pendingBytes(): number {
    return this.#skipping ? 0 : this.#size;
  }

  #take(piece: Buffer): void {
    if (piece.length === 0) return;
    this.#size += piece.length;
    if (this.#skipping) {
      this.#skipping.tail = keepTail(this.#skipping.tail, piece);
      return;
    }
    // One byte of slack for the `\r` of a CRLF line ending, which is not part of the message.
    if (this.#size <= this.#maxLineBytes + 1) {
      this.#pieces.push(piece);
      return;
    }
    const held = Buffer.concat([...this.#pieces, piece]);
    this.#pieces = [];
    this.#skipping = { head: held.subarray(0, EDGE_BYTES), tail: Buffer.from(held.subarray(-EDGE_BYTES)) };
  }

  #finishLine(): FramedLine | null {
    const size = this.#size;
    const skipped = this.#skipping;
    const pieces = this.#pieces;
    this.#size = 0;
    this.#pieces = [];
    this.#skipping = null;
    if (skipped) return oversized(size, skipped.head, skipped.tail);
    let buffer = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, size);
    if (buffer.length > 0 && buffer[buffer.length - 1] === 0x0d) buffer = buffer.subarray(0, -1);
    if (buffer.length > this.#maxLineBytes)
      return oversized(buffer.length, buffer.subarray(0, EDGE_BYTES), buffer.subarray(-EDGE_BYTES));
    const text = buffer.toString('utf8');
    return text.trim() === '' ? null : { kind: 'line', text };
  }
}

function oversized(bytes: number, head: Buffer, tail: Buffer): FramedLine {
  return { kind: 'oversized', bytes, head: head.toString('utf8'), tail: tail.toString('utf8') };
}

function keepTail(tail: Buffer, piece: Buffer): Buffer {
  if (piece.length >= EDGE_BYTES) return Buffer.from(piece.subarray(-EDGE_BYTES));
  return Buffer.concat([tail, piece]).subarray(-EDGE_BYTES);
}
