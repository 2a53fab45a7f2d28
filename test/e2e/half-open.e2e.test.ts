import { describe, expect, it } from 'vitest';
import type { RunResult } from '../../src/app/reply/run-result.js';
import {
  readRunTrace,
  readRuns,
  spawnCount,
  startTestServer,
  useServer,
  waitFor,
  type RunningServer,
  type Sandbox,
} from './harness.js';

// Threshold 1: one failure opens the circuit. The cooldown is short so each test reaches half-open quickly.
const COOLDOWN_MS = 1_500;
const MODEL = 'qwen2.5-coder:7b';
const WAITERS = 4;
const env = {
  OLLAMA_MCP_BREAKER_THRESHOLD: '1',
  OLLAMA_MCP_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS),
  OLLAMA_MCP_CONCURRENCY: '4',
  OLLAMA_MCP_PROGRESS_INTERVAL_MS: '150',
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** When each fake `ollama run` whose prompt contains `marker` started and exited (epoch ms). */
function runTimes(sandbox: Sandbox, marker: string): { start: number; exit: number | undefined }[] {
  const events = readRunTrace(sandbox);
  const pids = new Set(events.filter((e) => e.event === 'prompt' && e.prompt?.includes(marker)).map((e) => e.pid));
  return [...pids].map((pid) => ({
    start: events.find((e) => e.pid === pid && e.event === 'start')!.t,
    exit: events.find((e) => e.pid === pid && e.event === 'exit')?.t,
  }));
}

describe('calls that meet a half-open probe in flight wait for its verdict', () => {
  const server = useServer(env);

  /** Open the circuit with one failure, wait out the cooldown, start a probe and wait until it spawned. */
  async function probeInFlight(probePrompt: string): Promise<{ probe: Promise<RunResult> }> {
    const opened = await server.run({ model: MODEL, prompt: 'opens it @fake:exit=1' });
    expect(opened.metadata.circuit.state).toBe('open');
    await sleep(COOLDOWN_MS + 100);
    const spawns = spawnCount(server.sandbox);
    const probe = server.run({ model: MODEL, prompt: probePrompt });
    await waitFor(() => spawnCount(server.sandbox) > spawns, 10_000, 'the probe to spawn');
    return { probe }; // wrapped: an async function returning the promise itself would wait for it
  }

  /** First attempts of different tasks, started while the probe runs. */
  function firstAttempts(marker: string, on: RunningServer = server) {
    return Array.from({ length: WAITERS }, (_, i) =>
      on.run({ model: MODEL, prompt: `${marker} ${i}`, task_id: `${marker}-${i}` }),
    );
  }

  it('none escalates; after a good probe they all run, each after the probe ended', async () => {
    const { probe } = await probeInFlight('good probe @fake:sleep_ms=1200');
    const messages: string[] = [];
    const watched = server.client.callTool(
      { name: 'ollama_run', arguments: { model: MODEL, prompt: 'good-wait watched', task_id: 'good-wait-watched' } },
      undefined,
      { timeout: 30_000, onprogress: (p) => messages.push(p.message ?? '') },
    );
    const waiters = firstAttempts('good-wait');

    const probeResult = await probe;
    expect(probeResult.metadata).toMatchObject({ status: 'ok', circuit: { state: 'closed' } });
    const results = await Promise.all(waiters);
    expect((await watched).isError).toBe(false);
    for (const r of results) {
      expect(r.metadata).toMatchObject({ status: 'ok', escalate: false, retry_count: 0, circuit: { state: 'closed' } });
      // The wait for the probe counts as time in line.
      expect(r.metadata.queue_ms).toBeGreaterThanOrEqual(300);
    }
    const probeExit = runTimes(server.sandbox, 'good probe')[0]!.exit!;
    const waited = runTimes(server.sandbox, 'good-wait');
    expect(waited).toHaveLength(WAITERS + 1);
    for (const run of waited) expect(run.start).toBeGreaterThanOrEqual(probeExit);
    expect(messages.some((m) => m.includes(`${MODEL}: waiting for the model's probe run`))).toBe(true);
  });

  it('after a failed probe they get circuit_open without spawning (and escalate: the model just failed again)', async () => {
    const { probe } = await probeInFlight('bad probe @fake:sleep_ms=1200 @fake:exit=1');
    const spawns = spawnCount(server.sandbox);
    const results = await Promise.all(firstAttempts('bad-wait'));
    expect((await probe).metadata).toMatchObject({ status: 'crashed', circuit: { state: 'open' } });
    for (const r of results) {
      expect(r.metadata).toMatchObject({
        status: 'circuit_open',
        escalate: true,
        escalation_reason: 'circuit_open',
        retry_count: 0,
        exit_code: null,
        circuit: { state: 'open' },
      });
      expect(r.metadata.circuit.retry_after_seconds).toBeGreaterThanOrEqual(1);
      expect(r.metadata.error?.message).toContain('probe run failed while this call waited');
      expect(r.metadata.queue_ms).toBeGreaterThanOrEqual(300);
    }
    expect(spawnCount(server.sandbox)).toBe(spawns);
    const logged = readRuns(server.sandbox).filter((line) => String(line.task_id).startsWith('bad-wait'));
    expect(logged).toHaveLength(WAITERS);
  });

  it("calls on another server process sharing the state dir wait for this process's probe too", async () => {
    const other = await startTestServer(env, server.sandbox);
    await sleep(COOLDOWN_MS + 100); // the previous test left the circuit open
    const spawns = spawnCount(server.sandbox);
    const probe = server.run({ model: MODEL, prompt: 'shared probe @fake:sleep_ms=1200' });
    await waitFor(() => spawnCount(server.sandbox) > spawns, 10_000, 'the probe to spawn');
    const results = await Promise.all(firstAttempts('elsewhere-wait', other));
    expect((await probe).metadata.status).toBe('ok');
    for (const r of results) expect(r.metadata).toMatchObject({ status: 'ok', escalate: false });
    const probeExit = runTimes(server.sandbox, 'shared probe')[0]!.exit!;
    for (const run of runTimes(server.sandbox, 'elsewhere-wait')) expect(run.start).toBeGreaterThanOrEqual(probeExit);
  });
});
