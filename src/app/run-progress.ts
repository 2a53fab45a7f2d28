/**
 * Where an attempt is, as the run service announces it. `waiting_for_probe`: the model's circuit
 * is half-open and the call waits for the probe run's verdict.
 */
export type RunPhase =
  | { readonly phase: 'queued'; /** 1 = next in line. */ readonly position: () => number }
  | { readonly phase: 'waiting_for_probe' | 'running' | 'finishing' | 'done' }
  /** Ollama answered `server busy`: the call waits `waitMs`, then makes busy retry `retry` of `of`. */
  | { readonly phase: 'busy_backoff'; readonly retry: number; readonly of: number; readonly waitMs: number }
  /** The model before could not serve: the call moves on to `model`, the next of its fallback chain. */
  | { readonly phase: 'next_model'; readonly model: string };

/** A listener's picture of one attempt, built from the events it emits (for heartbeats). */
export class LiveRun {
  phase: RunPhase['phase'] | 'starting' = 'starting';
  /** 1 = next in line; 0 when not waiting. */
  queuePosition: () => number = () => 0;
  /** performance.now() when the model process started. */
  runningSince: number | null = null;
  /** stdout bytes received so far. */
  outputBytes = 0;
  /** The model of a fallback chain being tried now; null while it is the call's own. */
  model: string | null = null;
  /** While waiting to retry a busy server: which retry, of how many, and until when (performance.now()). */
  busy: { readonly retry: number; readonly of: number; readonly until: number } | null = null;

  readonly onPhase = (event: RunPhase): void => {
    this.phase = event.phase;
    this.queuePosition = event.phase === 'queued' ? event.position : () => 0;
    if (event.phase === 'running') this.runningSince = performance.now();
    if (event.phase === 'next_model') this.model = event.model;
    this.busy =
      event.phase === 'busy_backoff' ? { retry: event.retry, of: event.of, until: performance.now() + event.waitMs } : null;
  };

  readonly onOutput = (bytes: number): void => {
    this.outputBytes = bytes;
  };

  /** The run context fields that feed this picture. */
  get listeners(): { onPhase: (event: RunPhase) => void; onOutput: (bytes: number) => void } {
    return { onPhase: this.onPhase, onOutput: this.onOutput };
  }
}
