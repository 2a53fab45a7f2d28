import { describe, expect, it } from 'vitest';
import { runModelProcess, type ModelProcessRequest } from '../../../src/ollama/model-process.js';
import { isRunning } from '../../helpers/proc-state.js';

/** A CLI that starts a grandchild and waits: `sh` prints the grandchild's pid. */
function request(extra: Partial<ModelProcessRequest>): ModelProcessRequest {
  return {
    bin: 'sh',
    args: ['-c', 'sleep 30 & echo $!; wait'],
    prompt: '',
    env: { PATH: process.env.PATH },
    timeoutMs: 60_000,
    startTimeoutMs: 60_000,
    killGraceMs: 500,
    maxOutputBytes: 1024,
    ...extra,
  };
}

async function waitGone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100 && isRunning(pid); i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
  return !isRunning(pid);
}

describe.skipIf(process.platform === 'win32')('model processes lead their own process group', () => {
  it('a timeout ends everything the CLI started, not just the CLI', async () => {
    let spawned = 0;
    const outcome = await runModelProcess(request({ timeoutMs: 300, onSpawn: (pid) => (spawned = pid) }));
    expect(outcome.timedOut).toBe(true);
    expect(outcome.cancelled).toBe(false);
    expect(outcome.signal).toBe('SIGTERM');
    expect(spawned).toBe(outcome.pid);
    const grandchild = Number(outcome.stdout.trim());
    expect(grandchild).toBeGreaterThan(0);
    expect(await waitGone(grandchild)).toBe(true);
  });

  it('a cancel ends the whole group too, and is reported as a cancel', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const outcome = await runModelProcess(request({ signal: controller.signal }));
    expect(outcome.cancelled).toBe(true);
    expect(outcome.timedOut).toBe(false);
    expect(await waitGone(Number(outcome.stdout.trim()))).toBe(true);
  });

  it('a CLI that cannot be started is a spawn error, with no pid and no callback', async () => {
    let called = false;
    const outcome = await runModelProcess(request({ bin: '/no/such/ollama', onSpawn: () => (called = true) }));
    expect(outcome.spawnError).not.toBeNull();
    expect(outcome.pid).toBeNull();
    expect(called).toBe(false);
  });
});
