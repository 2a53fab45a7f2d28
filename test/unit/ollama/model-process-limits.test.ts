import { describe, expect, it } from 'vitest';
import { runModelProcess, type ModelProcessRequest } from '../../../src/ollama/model-process.js';
import { isRunning } from '../../helpers/proc-state.js';

function request(script: string, extra: Partial<ModelProcessRequest> = {}): ModelProcessRequest {
  return {
    bin: 'sh',
    args: ['-c', script],
    prompt: '',
    env: { PATH: process.env.PATH },
    timeoutMs: 60_000,
    startTimeoutMs: 60_000,
    killGraceMs: 300,
    maxOutputBytes: 4096,
    ...extra,
  };
}

/** The pid the script printed on its first line: a helper it started. */
function helperPid(stdout: string): number {
  return Number(stdout.split('\n')[0]);
}

describe.skipIf(process.platform !== 'linux')('the limits of a model process', () => {
  it('bounds the wait for the first byte by the start allowance, and the answer by timeout_ms from that byte', async () => {
    const silent = await runModelProcess(request('sleep 30', { startTimeoutMs: 300, timeoutMs: 100 }));
    expect(silent).toMatchObject({ startTimedOut: true, timedOut: false, startMs: null, signal: 'SIGTERM' });
    expect(silent.durationMs).toBeGreaterThanOrEqual(300);

    // The answer begins after 0.5 s: a 0.3 s timeout_ms that counted from spawn would have killed it before.
    const slowStart = await runModelProcess(request('sleep 0.5; echo answer', { startTimeoutMs: 5_000, timeoutMs: 300 }));
    expect(slowStart).toMatchObject({ startTimedOut: false, timedOut: false, exitCode: 0, stdout: 'answer\n' });
    expect(slowStart.startMs).toBeGreaterThanOrEqual(450);

    const slowAnswer = await runModelProcess(request('echo begun; sleep 30', { startTimeoutMs: 5_000, timeoutMs: 300 }));
    expect(slowAnswer).toMatchObject({ startTimedOut: false, timedOut: true, stdout: 'begun\n' });
  });

  it('a deadline stops either phase, and says it was the deadline', async () => {
    const waiting = await runModelProcess(request('sleep 30', { deadlineMs: 300 }));
    expect(waiting).toMatchObject({ startTimedOut: true, deadlineReached: true });
    const answering = await runModelProcess(request('echo begun; sleep 30', { deadlineMs: 300 }));
    expect(answering).toMatchObject({ timedOut: true, deadlineReached: true });
  });

  it('ends with the CLI, not with a helper the CLI detached that still holds its output pipes', async () => {
    const started = performance.now();
    // A wrapper that starts a helper in its own session (as one that starts `ollama serve` would), then answers.
    const outcome = await runModelProcess(request('setsid sleep 30 & echo $!; echo answer'));
    const took = performance.now() - started;
    const helper = helperPid(outcome.stdout);
    try {
      expect(outcome).toMatchObject({ exitCode: 0, timedOut: false, startTimedOut: false });
      expect(outcome.stdout).toContain('answer');
      expect(took).toBeLessThan(5_000);
      // A signal to the CLI's group never reaches a helper it deliberately detached.
      expect(isRunning(helper)).toBe(true);
    } finally {
      process.kill(helper, 'SIGKILL');
    }
  });

  it('a timeout ends the call even while a detached helper holds the pipes', async () => {
    const started = performance.now();
    const outcome = await runModelProcess(request('setsid sleep 30 & echo $!; sleep 30', { timeoutMs: 300 }));
    const helper = helperPid(outcome.stdout);
    try {
      expect(outcome.timedOut).toBe(true);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(isRunning(helper)).toBe(true);
    } finally {
      process.kill(helper, 'SIGKILL');
    }
  });

  it('an answer is not a timeout because a helper in the CLI’s own group holds the pipes', async () => {
    const outcome = await runModelProcess(request('sleep 30 & echo $!; echo answer', { timeoutMs: 2_000 }));
    const helper = helperPid(outcome.stdout);
    try {
      expect(outcome).toMatchObject({ exitCode: 0, timedOut: false });
      expect(outcome.stdout).toContain('answer');
    } finally {
      process.kill(helper, 'SIGKILL');
    }
  });
});
