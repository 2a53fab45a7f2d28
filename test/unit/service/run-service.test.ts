import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { RunService } from '../../../src/run-service.js';
import type { ModelProcessRequest, ProcessOutcome } from '../../../src/runner/model-process.js';
import { processOutcome } from '../../helpers/process-outcome.js';
import { StateStore } from '../../../src/store/state-store.js';
import { RunLog } from '../../../src/telemetry/run-log.js';

const DAY = 86_400_000;

/** A RunService on a temp dir with an injected clock and a stub process: no sleeps, no spawns. */
function service(env: Record<string, string> = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'run-service-'));
  const config = loadConfig({ OLLAMA_MCP_TELEMETRY_DIR: dir, OLLAMA_MCP_TASK_TTL_DAYS: '1', ...env });
  let now = Date.UTC(2026, 10, 1);
  const spawned: ModelProcessRequest[] = [];
  let next: Partial<ProcessOutcome> = {};
  const spawn = async (request: ModelProcessRequest): Promise<ProcessOutcome> => {
    spawned.push(request);
    return processOutcome({
      stdout: 'fine\n\n',
      durationMs: 5,
      timeoutMs: request.timeoutMs,
      maxOutputBytes: request.maxOutputBytes,
      ...next,
    });
  };
  const store = new StateStore(path.join(dir, 'state.json'), { onWarning: () => {} });
  const runs = new RunService({ config, store, log: new RunLog(dir), clock: () => now, spawn, env: {} });
  return {
    runs,
    store,
    spawned,
    advance: (ms: number) => void (now += ms),
    failNext: () => void (next = { exitCode: 1, stdout: '', stderrTail: 'Error: boom\n' }),
    succeedNext: () => void (next = {}),
  };
}

describe('RunService with an injected clock', () => {
  it('prunes task entries untouched for longer than the TTL (checked at most hourly)', async () => {
    const s = service();
    await s.runs.run({ model: 'llama3.2', prompt: 'x', taskId: 'old' });
    s.advance(2 * DAY);
    await s.runs.run({ model: 'llama3.2', prompt: 'x', taskId: 'fresh' });
    const state = await s.store.snapshot('all');
    expect(Object.keys(state.tasks)).toEqual(['fresh']);
  });

  it('opens the circuit on the threshold and lets one probe through after the cooldown, by the clock alone', async () => {
    const s = service({ OLLAMA_MCP_BREAKER_THRESHOLD: '2', OLLAMA_MCP_BREAKER_COOLDOWN_MS: '60000' });
    s.failNext();
    await s.runs.run({ model: 'm', prompt: 'x' });
    const opened = await s.runs.run({ model: 'm', prompt: 'x' });
    expect(opened.metadata).toMatchObject({
      escalation_reason: 'circuit_open',
      circuit: { state: 'open', retry_after_seconds: 60 },
    });
    s.advance(59_000);
    const refused = await s.runs.run({ model: 'm', prompt: 'x' });
    expect(refused.metadata).toMatchObject({ status: 'circuit_open', circuit: { retry_after_seconds: 1 } });
    expect(s.spawned).toHaveLength(2);
    s.advance(1_000);
    s.succeedNext();
    const probe = await s.runs.run({ model: 'm', prompt: 'x' });
    expect(probe.metadata).toMatchObject({ status: 'ok', circuit: { state: 'closed' } });
    expect(s.spawned).toHaveLength(3);
  });

  it('passes the prompt on stdin and the options as flags, never the prompt in argv', async () => {
    const s = service();
    await s.runs.run({ model: 'qwen3:8b', prompt: 'secret plan', think: false, keepalive: '5m', format: 'json' });
    expect(s.spawned[0]).toMatchObject({
      prompt: 'secret plan',
      args: ['run', 'qwen3:8b', '--nowordwrap', '--format=json', '--think=false', '--keepalive=5m'],
    });
  });
});
