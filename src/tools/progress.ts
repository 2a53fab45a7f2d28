import type { ToolExtra } from './tool-definition.js';

export interface ProgressReport {
  /** Progress so far; the heartbeat makes it strictly increase, as the spec requires. */
  readonly progress: number;
  readonly total?: number;
  readonly message: string;
}

/**
 * Send `notifications/progress` every `intervalMs` while a tool call runs, when (and only when)
 * the client asked for progress with a progress token. Clients that reset their request timeout
 * on progress (Claude Code, the SDK's `resetTimeoutOnProgress`) then wait for long model runs
 * instead of failing with `-32001 Request timed out`. Returns a function that stops it.
 */
export function startHeartbeat(extra: ToolExtra, intervalMs: number, describe: () => ProgressReport): () => void {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return () => {};
  let last = 0;
  const beat = () => {
    const report = describe();
    // `progress` must increase with every notification, even when nothing finished since the last one.
    last = Math.max(report.progress, last + 0.001);
    const params = { progressToken, ...report, progress: Math.round(last * 1000) / 1000 };
    extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {
      // The client went away; the call's abort signal handles the rest.
    });
  };
  const timer = setInterval(beat, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** "1 m 05 s" style elapsed time for progress messages. */
export function formatElapsed(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  return `${Math.floor(seconds / 60)} m ${String(seconds % 60).padStart(2, '0')} s`;
}
