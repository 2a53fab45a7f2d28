import type { CallEvent, CallListener, EventStream } from './types.js';

/** One call's event stream: its attempts and its loop emit, progress, the journal and the live view listen. */
export class CallEvents implements EventStream {
  readonly #listeners: CallListener[];

  constructor(listeners: readonly CallListener[] = []) {
    this.#listeners = [...listeners];
  }

  listen(listener: CallListener): void {
    this.#listeners.push(listener);
  }

  /** Tell every listener; resolves once the ones that return a promise are done (a listener's failure is its own). */
  async emit(event: CallEvent): Promise<void> {
    const pending: Promise<void>[] = [];
    for (const listener of this.#listeners) {
      try {
        const done = listener(event);
        if (done !== undefined) pending.push(done.catch(() => undefined));
      } catch {
        // A listener's failure is its own: the call goes on.
      }
    }
    if (pending.length > 0) await Promise.all(pending);
  }
}
