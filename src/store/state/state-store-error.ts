// Its own module, free of imports, so that the CLI and the tools can tell this error apart without
// loading the store (lowdb, the lock, the files), which a stdio start leaves to the first call.

/** Thrown when the state cannot be locked, read or written (`step` says which), or its dir cannot be made. */
export class StateStoreError extends Error {
  readonly kind = 'state_store_error';
  readonly step: 'setup' | 'lock' | 'update';
  constructor(message: string, options: { step: StateStoreError['step']; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = 'StateStoreError';
    this.step = options.step;
  }
}

export function isStateStoreError(error: unknown): error is StateStoreError {
  return (error as StateStoreError | null)?.kind === 'state_store_error';
}
