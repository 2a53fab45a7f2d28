/**
 * Where an attempt is, as the run service announces it. `waiting_for_probe`: the model's circuit
 * is half-open and the call waits for the probe run's verdict.
 */
export type RunPhase =
  | { readonly phase: 'queued'; /** 1 = next in line. */ readonly position: () => number }
  | { readonly phase: 'waiting_for_probe' | 'running' | 'finishing' | 'done' };

/** A listener's picture of one attempt, built from the events it emits (for heartbeats). */
export class LiveRun {
  phase: RunPhase['phase'] | 'starting' = 'starting';
  /** 1 = next in line; 0 when not waiting. */
  queuePosition: () => number = () => 0;
  /** performance.now() when the model process started. */
  runningSince: number | null = null;
  /** stdout bytes received so far. */
  outputBytes = 0;

  readonly onPhase = (event: RunPhase): void => {
    this.phase = event.phase;
    this.queuePosition = event.phase === 'queued' ? event.position : () => 0;
    if (event.phase === 'running') this.runningSince = performance.now();
  };

  readonly onOutput = (bytes: number): void => {
    this.outputBytes = bytes;
  };

  /** The run context fields that feed this picture. */
  get listeners(): { onPhase: (event: RunPhase) => void; onOutput: (bytes: number) => void } {
    return { onPhase: this.onPhase, onOutput: this.onOutput };
  }
}
