import type { RunStatus } from '../policy/run-status.js';
import type { QueueReason } from './call-slots.js';

/**
 * Where an attempt is, as the run service announces it:
 * - `queued`: waiting in this server's queue; `reason()` says why (null once it leaves it);
 * - `waiting_for_probe`: the model's circuit is half-open and the call waits for the probe run's verdict;
 * - `starting`: the CLI runs, and no answer has begun: it waits in Ollama, for the model to load
 *   (`cold`: it was not loaded as far as this server knew) or for the prompt to be read;
 * - `running`: the answer has begun.
 */
export type RunPhase =
  | { readonly phase: 'queued'; readonly reason: () => QueueReason | null }
  | { readonly phase: 'starting'; readonly cold: boolean }
  | { readonly phase: 'waiting_for_probe' | 'running' | 'finishing' | 'done' }
  /**
   * A "not now" (`status`: Ollama busy or at a usage limit, or the machine could not start the CLI):
   * the call waits `waitMs`, then makes busy retry `retry` of `of`.
   */
  | {
      readonly phase: 'busy_backoff';
      readonly retry: number;
      readonly of: number;
      readonly waitMs: number;
      readonly status?: RunStatus;
    }
  /** The model before could not serve: the call moves on to `model`, the next of its fallback chain. */
  | { readonly phase: 'next_model'; readonly model: string };

/** A listener's picture of one attempt, built from the events it emits (for heartbeats). */
export class LiveRun {
  phase: RunPhase['phase'] | 'new' = 'new';
  /** Why it waits in this server's queue; null when it does not. */
  queueReason: () => QueueReason | null = () => null;
  /** While starting: was its model cold as far as this server knew? */
  cold = false;
  /** performance.now() when the model process started. */
  startingSince: number | null = null;
  /** performance.now() when the answer began. */
  runningSince: number | null = null;
  /** stdout bytes received so far. */
  outputBytes = 0;
  /** The model of a fallback chain being tried now; null while it is the call's own. */
  model: string | null = null;
  /** While waiting to retry a "not now": which retry, of how many, until when (performance.now()), after what. */
  busy: { readonly retry: number; readonly of: number; readonly until: number; readonly status?: RunStatus } | null = null;

  readonly onPhase = (event: RunPhase): void => {
    this.phase = event.phase;
    this.queueReason = event.phase === 'queued' ? event.reason : () => null;
    if (event.phase === 'starting') {
      this.startingSince = performance.now();
      this.cold = event.cold;
    }
    if (event.phase === 'running') this.runningSince = performance.now();
    if (event.phase === 'next_model') this.model = event.model;
    this.busy =
      event.phase === 'busy_backoff'
        ? { retry: event.retry, of: event.of, until: performance.now() + event.waitMs, status: event.status }
        : null;
  };

  readonly onOutput = (bytes: number): void => {
    this.outputBytes = bytes;
  };

  /** The run context fields that feed this picture. */
  get listeners(): { onPhase: (event: RunPhase) => void; onOutput: (bytes: number) => void } {
    return { onPhase: this.onPhase, onOutput: this.onOutput };
  }
}
