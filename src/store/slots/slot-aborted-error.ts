/** Thrown (as a slot request's rejection) when a caller gives up waiting for a concurrency slot. */
export class SlotAbortedError extends Error {
  readonly kind = 'slot_aborted';
  constructor() {
    super('aborted while waiting for a concurrency slot');
    this.name = 'SlotAbortedError';
  }
}
