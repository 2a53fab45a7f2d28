import { describe, expect, it } from 'vitest';
import { readRuns, spawnCount, useServer } from './harness.js';

const THRESHOLD = 5;
const CALLS = 50;

describe.each([1, 2])('the circuit is checked again when a queued call leaves the queue (concurrency %i)', (CONCURRENCY) => {
  const server = useServer({
    OLLAMA_MCP_CONCURRENCY: String(CONCURRENCY),
    OLLAMA_MCP_BREAKER_THRESHOLD: String(THRESHOLD),
    // Long enough that no probe is let through during the burst.
    OLLAMA_MCP_BREAKER_COOLDOWN_MS: '600000',
  });

  it(`a burst of ${CALLS} calls on a failing model spawns about threshold + 1 processes, not ${CALLS}`, async () => {
    // Every call is admitted while the circuit is still closed, so almost all of them queue.
    const results = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        server.run({ model: 'qwen2.5-coder:7b', prompt: `burst ${i} @fake:sleep_ms=100 @fake:exit=1`, task_id: `burst-${i}` }),
      ),
    );

    // Runs already in flight when the circuit opened still finish: at most CONCURRENCY - 1 of them.
    const spawns = spawnCount(server.sandbox);
    if (process.env.REPORT_SPAWNS)
      process.stderr.write(`burst: concurrency ${CONCURRENCY}, ${spawns} spawns for ${CALLS} calls\n`);
    expect(spawns).toBeGreaterThanOrEqual(THRESHOLD);
    expect(spawns).toBeLessThanOrEqual(THRESHOLD + CONCURRENCY - 1);

    const ran = results.filter((r) => r.metadata.status === 'crashed');
    const refused = results.filter((r) => r.metadata.status === 'circuit_open');
    expect(ran).toHaveLength(spawns);
    expect(refused).toHaveLength(CALLS - spawns);
    for (const r of refused) {
      // Queued first attempts that found the circuit open: refused without spawning, like any call at an open circuit.
      expect(r.metadata).toMatchObject({
        retry_count: 0,
        escalate: true,
        escalation_reason: 'circuit_open',
        exit_code: null,
        duration_ms: 0,
        circuit: { state: 'open' },
      });
    }
    // Most of them waited in line before the re-check refused them.
    expect(refused.filter((r) => r.metadata.queue_ms > 0).length).toBeGreaterThan(0);

    // Every call is logged exactly once.
    const lines = readRuns(server.sandbox);
    expect(lines).toHaveLength(CALLS);
    expect(new Set(lines.map((line) => line.task_id)).size).toBe(CALLS);
    expect(new Set(lines.map((line) => line.run_id))).toEqual(new Set(results.map((r) => r.metadata.run_id)));
    expect(lines.filter((line) => line.status === 'circuit_open')).toHaveLength(CALLS - spawns);
  });
});
