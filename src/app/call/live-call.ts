import type { RunStatus } from '../../policy/run-status.js';
import type { CallEvent } from '../attempt/types.js';
import type { QueueReason } from '../queue/queue-reason.js';

/**
 * Where a call stands, built from its events (for progress heartbeats and a view of the calls in
 * flight): `queued` in this server's queue, `waiting_for_probe`, `starting` (the CLI runs and no
 * answer has begun: it waits in Ollama, for a load or for the prompt to be read), `running` (the
 * answer has begun), `busy_backoff` (waiting to retry a "not now"), `next_model`, `finishing`
 * (an attempt ended and the call goes on), `done`.
 */
type CallPhase =
  'new' | 'queued' | 'waiting_for_probe' | 'starting' | 'running' | 'busy_backoff' | 'next_model' | 'finishing' | 'done';

export class LiveCall {
  phase: CallPhase = 'new';
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
  /** The Ollama host its attempt was sent to, when the server has several (progress names it). */
  host: string | null = null;
  busy: { readonly retry: number; readonly of: number; readonly until: number; readonly status: RunStatus } | null = null;

  readonly listen = (event: CallEvent): void => {
    this.queueReason = () => null;
    this.busy = null;
    switch (event.type) {
      case 'queued':
        this.phase = 'queued';
        this.queueReason = event.reason;
        break;
      case 'waiting_for_probe':
        this.phase = 'waiting_for_probe';
        break;
      case 'started':
        this.phase = 'starting';
        this.cold = event.cold;
        this.host = event.host ?? null;
        this.startingSince = performance.now();
        break;
      case 'first_byte':
        this.phase = 'running';
        this.runningSince = performance.now();
        break;
      case 'output':
        this.phase = 'running';
        this.outputBytes = event.bytes;
        break;
      case 'busy_wait':
        this.phase = 'busy_backoff';
        this.busy = { retry: event.retry, of: event.of, until: performance.now() + event.waitMs, status: event.status };
        break;
      case 'next_model':
        this.phase = 'next_model';
        this.model = event.next;
        break;
      case 'ended':
        this.phase = event.willRetry ? 'finishing' : 'done';
        break;
    }
  };
}
