import type { ProcessOutcome } from '../../src/ollama/model-process.js';

/** A CLI process that exited 0 having printed nothing, with `over` changing what a test needs. */
export function processOutcome(over: Partial<ProcessOutcome> = {}): ProcessOutcome {
  return {
    stdout: '',
    stderrTail: '',
    exitCode: 0,
    signal: null,
    timedOut: false,
    startTimedOut: false,
    deadlineReached: false,
    truncated: false,
    cancelled: false,
    spawnError: null,
    spawnErrorCode: null,
    durationMs: 10,
    startMs: 5,
    pid: 1,
    timeoutMs: 1000,
    startTimeoutMs: 300_000,
    maxOutputBytes: 100,
    ...over,
  };
}
