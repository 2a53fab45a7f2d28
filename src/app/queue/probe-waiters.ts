import { circuitGate } from '../../policy/breaker.js';
import type { BreakerState } from '../../policy/breaker-state.js';

/**
 * How often a call waiting for a probe re-reads the circuit (an unlocked, cached read): the probe
 * may run in another server process sharing the state dir, or its server may have died.
 */
const PROBE_POLL_MS = 200;

/** Calls waiting for a model's half-open probe to have a verdict. */
export class ProbeWaiters {
  /** Per model: woken when a run of that model settles in this process. */
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #readCircuit: (modelKey: string) => Promise<BreakerState>;
  readonly #clock: () => number;

  constructor(readCircuit: (modelKey: string) => Promise<BreakerState>, clock: () => number) {
    this.#readCircuit = readCircuit;
    this.#clock = clock;
  }

  /**
   * Wait until the model's in-flight probe has a verdict, polling the state for a probe in
   * another process or one whose lease ran out (its server died). `settled`: ask for admission again.
   */
  async wait(
    modelKey: string,
    runId: string,
    signal: AbortSignal | undefined,
    until: number,
  ): Promise<'settled' | 'aborted' | 'timed_out'> {
    for (;;) {
      if (signal?.aborted) return 'aborted';
      let circuit: BreakerState;
      try {
        circuit = await this.#readCircuit(modelKey);
      } catch {
        return 'settled'; // admission reads the state again and says what is wrong
      }
      const now = this.#clock();
      if (circuitGate(circuit, now, runId).kind !== 'wait_for_probe') return 'settled';
      if (now >= until) return 'timed_out';
      await this.#nextCheck(modelKey, signal, Math.min(PROBE_POLL_MS, until - now));
    }
  }

  /** A run of the model settled here: it may have been the probe, so its waiters read the circuit now. */
  wake(modelKey: string): void {
    for (const wake of [...(this.#waiters.get(modelKey) ?? [])]) wake();
  }

  /** Resolves on `wake`, after `ms`, or on abort, whichever comes first. */
  #nextCheck(modelKey: string, signal: AbortSignal | undefined, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.#waiters.get(modelKey) ?? new Set<() => void>();
      this.#waiters.set(modelKey, set);
      const wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', wake);
        set.delete(wake);
        if (set.size === 0 && this.#waiters.get(modelKey) === set) this.#waiters.delete(modelKey);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      signal?.addEventListener('abort', wake, { once: true });
      set.add(wake);
    });
  }
}
