import { describe, expect, it } from 'vitest';
import { readRuns, spawnCount, useServer } from './harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const env = (cooldownMs: number) => ({
  OLLAMA_MCP_BREAKER_THRESHOLD: '2',
  OLLAMA_MCP_BREAKER_COOLDOWN_MS: String(cooldownMs),
  OLLAMA_MCP_MAX_RETRIES: '0',
});
const failing = (model: string) => ({ model, prompt: 'broken @fake:exit=1' });

describe('circuit breaker per model', () => {
  // A cooldown no test here outlasts, however loaded the machine: the circuit stays open throughout.
  const server = useServer(env(600_000));

  it('opens after the threshold of consecutive failures; the opening failure already escalates', async () => {
    const first = await server.run(failing('qwen2.5-coder:7b'));
    expect(first.metadata).toMatchObject({ escalate: false, circuit: { state: 'closed', consecutive_failures: 1 } });
    const second = await server.run(failing('qwen2.5-coder:7b'));
    expect(second.metadata).toMatchObject({
      status: 'crashed',
      escalate: true,
      escalation_reason: 'circuit_open',
      circuit: { state: 'open', consecutive_failures: 2, retry_after_seconds: 600 },
    });
    expect(readRuns(server.sandbox).at(-1)).toMatchObject({ circuit: { state: 'open', transition: 'opened' } });
  });

  it('while open, answers at once without spawning, with escalate and retry_after_seconds', async () => {
    const spawns = spawnCount(server.sandbox);
    const refused = await server.run({ model: 'qwen2.5-coder:7b', prompt: 'please', task_id: 'refused-task' });
    expect(refused.isError).toBe(true);
    expect(refused.metadata).toMatchObject({
      status: 'circuit_open',
      escalate: true,
      escalation_reason: 'circuit_open',
      duration_ms: 0,
      exit_code: null,
      circuit: { state: 'open' },
    });
    expect(refused.metadata.circuit.retry_after_seconds).toBeGreaterThanOrEqual(1);
    expect(refused.metadata.circuit.retry_after_seconds).toBeLessThanOrEqual(600);
    expect(refused.text).toContain('ESCALATE');
    expect(spawnCount(server.sandbox)).toBe(spawns);
    expect(readRuns(server.sandbox).at(-1)).toMatchObject({ status: 'circuit_open', task_id: 'refused-task' });
  });

  it("one model's circuit never affects another's, and name variants share one circuit", async () => {
    expect((await server.run({ model: 'llama3.2', prompt: 'hi' })).metadata.status).toBe('ok');
    const variant = await server.run({ model: 'library/qwen2.5-coder:7b', prompt: 'hi' });
    expect(variant.metadata.status).toBe('circuit_open');
  });

  it('stays open across a server restart', async () => {
    await server.restart();
    const spawns = spawnCount(server.sandbox);
    expect((await server.run({ model: 'qwen2.5-coder:7b', prompt: 'hi' })).metadata.status).toBe('circuit_open');
    expect(spawnCount(server.sandbox)).toBe(spawns);
  });

  it("failures that are not the model's fault do not open it", async () => {
    for (let i = 0; i < 3; i += 1) {
      const result = await server.run({ model: 'deepseek-r1:7b', prompt: 'x @fake:error=unreachable' });
      expect(result.metadata.circuit).toMatchObject({ state: 'closed', consecutive_failures: 0 });
    }
  });
});

describe('circuit breaker: after the cooldown', () => {
  // A short cooldown the tests wait out: waiting longer on a loaded machine changes nothing.
  const COOLDOWN_MS = 1_500;
  const server = useServer(env(COOLDOWN_MS));

  it('opens the circuit', async () => {
    await server.run(failing('qwen2.5-coder:7b'));
    expect((await server.run(failing('qwen2.5-coder:7b'))).metadata.circuit.state).toBe('open');
  });

  it('after the cooldown one probe goes through; its failure reopens the circuit', async () => {
    await sleep(COOLDOWN_MS + 100);
    const spawns = spawnCount(server.sandbox);
    const probe = await server.run(failing('qwen2.5-coder:7b'));
    expect(spawnCount(server.sandbox)).toBe(spawns + 1);
    expect(probe.metadata).toMatchObject({
      status: 'crashed',
      escalate: true,
      escalation_reason: 'circuit_open',
      circuit: { state: 'open' },
    });
    expect(readRuns(server.sandbox).at(-1)).toMatchObject({ circuit: { transition: 'reopened' } });
  });

  it('while the probe runs, other calls wait for it instead of being refused; the probe succeeding closes the circuit', async () => {
    await sleep(COOLDOWN_MS + 100);
    const probe = server.run({ model: 'qwen2.5-coder:7b', prompt: 'slow but fine @fake:sleep_ms=600' });
    await sleep(250);
    const meanwhile = await server.run({ model: 'qwen2.5-coder:7b', prompt: 'me too', task_id: 'meanwhile' });
    expect(meanwhile.metadata).toMatchObject({ status: 'ok', escalate: false, circuit: { state: 'closed' } });
    const result = await probe;
    expect(result.metadata).toMatchObject({
      status: 'ok',
      escalate: false,
      circuit: { state: 'closed', consecutive_failures: 0 },
    });
    expect(readRuns(server.sandbox).find((r) => r.run_id === result.metadata.run_id)).toMatchObject({
      circuit: { transition: 'closed' },
    });
    expect((await server.run({ model: 'qwen2.5-coder:7b', prompt: 'again' })).metadata.status).toBe('ok');
  });
});
