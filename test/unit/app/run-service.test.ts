import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { canonicalModelName } from '../../../src/ollama/model-name.js';
import type { BreakerState } from '../../../src/policy/breaker-state.js';
import { LiveCall } from '../../../src/app/call/live-call.js';
import { RunService } from '../../../src/app/run-service.js';
import type { ModelProcessRequest, ProcessOutcome } from '../../../src/ollama/model-process.js';
import { processOutcome } from '../../helpers/process-outcome.js';
import { StateStore } from '../../../src/store/state/state-store.js';
import { RunLog } from '../../../src/telemetry/run-log.js';
import { tempDir } from '../../helpers/temp-dir.js';

const DAY = 86_400_000;

/** A RunService on a temp dir with an injected clock and a stub process: no sleeps, no spawns. */
function service(env: Record<string, string> = {}) {
  const dir = tempDir('run-service-');
  const config = loadConfig({ OLLAMA_MCP_TELEMETRY_DIR: dir, OLLAMA_MCP_TASK_TTL_DAYS: '1', ...env });
  let now = Date.UTC(2026, 10, 1);
  const spawned: ModelProcessRequest[] = [];
  let next: Partial<ProcessOutcome> = {};
  /** While true, each spawned process runs until the test ends it through `held`. */
  let holding = false;
  const held: ((outcome: Partial<ProcessOutcome>) => void)[] = [];
  const spawn = async (request: ModelProcessRequest): Promise<ProcessOutcome> => {
    spawned.push(request);
    if (holding) {
      const over = await new Promise<Partial<ProcessOutcome>>((resolve) => held.push(resolve));
      return processOutcome({ stdout: 'fine\n\n', durationMs: 5, ...over });
    }
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
    held,
    hold: (on: boolean) => void (holding = on),
    now: () => now,
    advance: (ms: number) => void (now += ms),
    /** Set a model's circuit as another server process sharing the state dir would. */
    setCircuit: (model: string, state: BreakerState) =>
      store.transact([], (data) => void (data.breakers[canonicalModelName(model)] = state)),
    /** Model `m`'s circuit half open after 5 failures, its probe `runId` leased for `leaseMs` (another process's, say). */
    probeInFlight: (runId: string, leaseMs: number) =>
      store.transact([], (data) => {
        data.breakers[canonicalModelName('m')] = {
          state: 'half_open',
          consecutiveFailures: 5,
          probe: { runId, leaseUntil: now + leaseMs },
        };
      }),
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
      args: ['run', 'qwen3:8b', '--nowordwrap', '--verbose', '--format=json', '--think=false', '--keepalive=5m'],
    });
  });
});

const FAILED: Partial<ProcessOutcome> = { exitCode: 1, stdout: '', stderrTail: 'Error: boom\n' };
const waiting = (live: LiveCall) => expect(live.phase).toBe('waiting_for_probe');

describe('RunService: calls that meet a half-open probe wait for its verdict', () => {
  /** Threshold 1, cooldown 60 s: one failure opens the circuit; the clock then ends the cooldown. */
  async function withProbeInFlight() {
    const s = service({ OLLAMA_MCP_BREAKER_THRESHOLD: '1', OLLAMA_MCP_BREAKER_COOLDOWN_MS: '60000' });
    s.failNext();
    await s.runs.run({ model: 'm', prompt: 'x' });
    s.succeedNext();
    s.advance(60_000);
    s.hold(true);
    const probe = s.runs.run({ model: 'm', prompt: 'probe' });
    await vi.waitFor(() => expect(s.held).toHaveLength(1));
    const lives = [new LiveCall(), new LiveCall(), new LiveCall()];
    const calls = lives.map((live, i) =>
      s.runs.run({ model: 'm', prompt: `task ${i}`, taskId: `t${i}` }, { listen: live.listen }),
    );
    await vi.waitFor(() => lives.forEach(waiting));
    expect(s.spawned).toHaveLength(2);
    s.hold(false);
    return { s, probe, calls };
  }

  it('they run once the probe succeeds, and none escalates', async () => {
    const { s, probe, calls } = await withProbeInFlight();
    s.held[0]!({});
    expect((await probe).metadata).toMatchObject({ status: 'ok', circuit: { state: 'closed' } });
    for (const result of await Promise.all(calls)) {
      expect(result.metadata).toMatchObject({ status: 'ok', escalate: false, retry_count: 0, circuit: { state: 'closed' } });
    }
    expect(s.spawned).toHaveLength(5);
  });

  it('they get circuit_open without spawning when the probe fails (and escalate, as at any open circuit)', async () => {
    const { s, probe, calls } = await withProbeInFlight();
    s.held[0]!(FAILED);
    expect((await probe).metadata).toMatchObject({ status: 'crashed', circuit: { state: 'open' } });
    for (const result of await Promise.all(calls)) {
      expect(result.metadata).toMatchObject({
        status: 'circuit_open',
        escalate: true,
        escalation_reason: 'circuit_open',
        circuit: { state: 'open', retry_after_seconds: 60 },
      });
      expect(result.metadata.error?.message).toContain('probe run failed while this call waited');
    }
    expect(s.spawned).toHaveLength(2);
  });

  it('a cancelled waiter ends as cancelled at once, spawning nothing', async () => {
    const s = service();
    await s.probeInFlight('elsewhere', 60_000);
    const cancel = new AbortController();
    const live = new LiveCall();
    const call = s.runs.run({ model: 'm', prompt: 'x', taskId: 'c' }, { listen: live.listen, signal: cancel.signal });
    await vi.waitFor(() => waiting(live));
    cancel.abort();
    expect((await call).metadata).toMatchObject({
      status: 'cancelled',
      escalate: false,
      error: { message: "cancelled while waiting for the model's probe run" },
    });
    expect(s.spawned).toHaveLength(0);
  });

  it('a batch job waiting for the probe ends as not_started at the batch deadline', async () => {
    const s = service();
    await s.probeInFlight('elsewhere', 60_000);
    const live = new LiveCall();
    const call = s.runs.run({ model: 'm', prompt: 'x' }, { listen: live.listen, batchId: 'b', deadlineAt: s.now() + 300 });
    s.advance(300); // the deadline timer is real time; by the time it fires, the clock says it passed
    await vi.waitFor(() => waiting(live));
    expect((await call).metadata).toMatchObject({
      status: 'not_started',
      escalate: false,
      error: { message: "the batch deadline passed while this job waited for the model's probe run" },
    });
    expect(s.spawned).toHaveLength(0);
  });

  it('a probe in another process: the waiter runs when that process closes the circuit', async () => {
    const s = service();
    await s.probeInFlight('elsewhere', 60_000);
    const live = new LiveCall();
    const call = s.runs.run({ model: 'm', prompt: 'x', taskId: 'w' }, { listen: live.listen });
    await vi.waitFor(() => waiting(live));
    await s.setCircuit('m', { state: 'closed', consecutiveFailures: 0 });
    expect((await call).metadata).toMatchObject({ status: 'ok', escalate: false });
    expect(s.spawned).toHaveLength(1);
  });

  it('a probe whose server died: once its lease expires the waiter becomes the probe and its success closes the circuit', async () => {
    const s = service();
    await s.probeInFlight('dead', 10_000);
    const live = new LiveCall();
    const call = s.runs.run({ model: 'm', prompt: 'x' }, { listen: live.listen });
    await vi.waitFor(() => waiting(live));
    s.advance(10_000);
    expect((await call).metadata).toMatchObject({ status: 'ok', circuit: { state: 'closed', consecutive_failures: 0 } });
    expect(s.spawned).toHaveLength(1);
    expect((await s.store.snapshot()).breakers['m:latest']).toEqual({ state: 'closed', consecutiveFailures: 0 });
  });

  it('a waiter whose own start allowance runs out first gets circuit_open without escalating, and may retry', async () => {
    const s = service();
    await s.probeInFlight('slow', 600_000);
    const live = new LiveCall();
    const call = s.runs.run({ model: 'm', prompt: 'x', taskId: 'patient', startTimeoutMs: 5_000 }, { listen: live.listen });
    await vi.waitFor(() => waiting(live));
    s.advance(5_000);
    const result = await call;
    expect(result.metadata).toMatchObject({
      status: 'circuit_open',
      escalate: false,
      escalation_reason: null,
      retryable: true,
      circuit: { state: 'half_open' },
    });
    expect(result.metadata.error?.message).toContain('waited its whole start allowance (start_timeout_ms, 5 s)');
    expect(s.spawned).toHaveLength(0);
  });
});

describe('RunService: the circuit is checked again when a call leaves the queue', () => {
  it('queued calls that find the circuit opened are refused without spawning', async () => {
    const s = service({ OLLAMA_MCP_CONCURRENCY: '1', OLLAMA_MCP_BREAKER_THRESHOLD: '2' });
    s.hold(true);
    const calls = [0, 1, 2, 3].map((i) => s.runs.run({ model: 'm', prompt: `${i}`, taskId: `q${i}` }));
    await vi.waitFor(() => expect(s.held).toHaveLength(1));
    s.held[0]!(FAILED);
    await vi.waitFor(() => expect(s.held).toHaveLength(2));
    s.held[1]!(FAILED);
    const results = await Promise.all(calls);
    expect(results.map((r) => r.metadata.status)).toEqual(['crashed', 'crashed', 'circuit_open', 'circuit_open']);
    expect(results[3]!.metadata).toMatchObject({ escalate: true, escalation_reason: 'circuit_open', retry_count: 0 });
    expect(s.spawned).toHaveLength(2);
  });

  it("a queued call that meets another call's probe gives its slot to the next in line while it waits", async () => {
    const s = service({ OLLAMA_MCP_CONCURRENCY: '1' });
    s.hold(true);
    const first = s.runs.run({ model: 'm', prompt: 'first' });
    await vi.waitFor(() => expect(s.held).toHaveLength(1));
    const live = new LiveCall();
    const waiter = s.runs.run({ model: 'm', prompt: 'waiter' }, { listen: live.listen });
    const other = s.runs.run({ model: 'n', prompt: 'other model' });
    // Meanwhile another process found the model failing and is probing it.
    await s.probeInFlight('elsewhere', 60_000);
    s.held[0]!({});
    await vi.waitFor(() => waiting(live));
    await vi.waitFor(() => expect(s.held).toHaveLength(2));
    expect(s.spawned.map((r) => r.args[1])).toEqual(['m', 'n']);
    s.held[1]!({});
    expect((await other).metadata.status).toBe('ok');
    await s.setCircuit('m', { state: 'closed', consecutiveFailures: 0 });
    await vi.waitFor(() => expect(s.held).toHaveLength(3));
    s.held[2]!({});
    expect((await waiter).metadata).toMatchObject({ status: 'ok', escalate: false });
    expect((await first).metadata.status).toBe('ok');
    expect(s.spawned.map((r) => r.args[1])).toEqual(['m', 'n', 'm']);
  });

  it('a queued call that finds the cooldown over becomes the probe', async () => {
    const s = service({ OLLAMA_MCP_CONCURRENCY: '1' });
    s.hold(true);
    const first = s.runs.run({ model: 'm', prompt: 'first' });
    await vi.waitFor(() => expect(s.held).toHaveLength(1));
    const live = new LiveCall();
    const queued = s.runs.run({ model: 'm', prompt: 'queued' }, { listen: live.listen });
    // In line before the circuit opens (a transaction can land before the call's first admission).
    await vi.waitFor(() => expect(live.phase).toBe('queued'));
    await s.setCircuit('m', { state: 'open', consecutiveFailures: 5, openedAt: s.now() - 60_000, retryAt: s.now() });
    s.held[0]!({});
    expect((await first).metadata.circuit.state).toBe('open'); // a straggler's success does not close it
    await vi.waitFor(() => expect(s.held).toHaveLength(2));
    const probing = (await s.store.snapshot()).breakers['m:latest'];
    expect(probing?.state).toBe('half_open');
    const lease = probing?.state === 'half_open' ? probing.probe : null;
    expect(lease?.leaseUntil).toBeGreaterThan(s.now());
    s.held[1]!({});
    const result = await queued;
    expect(result.metadata).toMatchObject({ status: 'ok', circuit: { state: 'closed' } });
    expect(lease?.runId).toBe(result.metadata.run_id);
  });
});

describe('RunService: the ways a call ends without running', () => {
  it('a call cancelled while queued ends as cancelled, spawning nothing', async () => {
    const s = service({ OLLAMA_MCP_CONCURRENCY: '1' });
    s.hold(true);
    const first = s.runs.run({ model: 'm', prompt: 'first' });
    await vi.waitFor(() => expect(s.held).toHaveLength(1));
    const cancel = new AbortController();
    const live = new LiveCall();
    const queued = s.runs.run({ model: 'm', prompt: 'second', taskId: 'q' }, { listen: live.listen, signal: cancel.signal });
    await vi.waitFor(() => expect(live.phase).toBe('queued'));
    expect(live.queueReason()).toEqual({ kind: 'parallel', running: 1, ahead: 0 });
    cancel.abort();
    expect((await queued).metadata).toMatchObject({
      status: 'cancelled',
      escalate: false,
      error: { message: 'cancelled while waiting for its turn to run' },
    });
    s.held[0]!({});
    expect((await first).metadata.status).toBe('ok');
    expect(s.spawned).toHaveLength(1);
  });

  it('a batch job still queued at the batch deadline ends as not_started; one started late never runs', async () => {
    const s = service({ OLLAMA_MCP_CONCURRENCY: '1' });
    s.hold(true);
    const first = s.runs.run({ model: 'm', prompt: 'first' });
    await vi.waitFor(() => expect(s.held).toHaveLength(1));
    const queued = s.runs.run({ model: 'm', prompt: 'x' }, { batchId: 'b', deadlineAt: s.now() + 50 });
    s.advance(50); // the clock passes the deadline as the real timer fires
    expect((await queued).metadata).toMatchObject({
      status: 'not_started',
      error: { message: 'the batch deadline passed while this job waited for its turn to run' },
    });
    const late = await s.runs.notStarted({ model: 'm', prompt: 'y' }, { batchId: 'b' });
    expect(late.metadata).toMatchObject({ status: 'not_started', duration_ms: 0, timeout_ms: null });
    s.held[0]!({});
    await first;
    expect(s.spawned).toHaveLength(1);
  });

  it("an ollama_run whose own deadline_ms passes while it is queued says so (not a batch's deadline)", async () => {
    const s = service({ OLLAMA_MCP_CONCURRENCY: '1' });
    s.hold(true);
    const first = s.runs.run({ model: 'm', prompt: 'first' });
    await vi.waitFor(() => expect(s.held).toHaveLength(1));
    const queued = s.runs.run({ model: 'm', prompt: 'x', deadlineMs: 50 });
    s.advance(50);
    expect((await queued).metadata).toMatchObject({
      status: 'not_started',
      error: { message: "the call's deadline_ms passed while it waited for its turn to run" },
    });
    s.held[0]!({});
    await first;
    expect(s.spawned).toHaveLength(1);
  });

  it('a ledger that can be neither written nor read does not stop the run, and the result says so', async () => {
    const s = service();
    const broken = () => Promise.reject(new Error('EIO: i/o error'));
    s.store.transact = broken;
    s.store.snapshot = broken;
    const result = await s.runs.run({ model: 'm', prompt: 'x', taskId: 't', retryCount: 2 });
    expect(result.metadata).toMatchObject({ status: 'ok', retry_count: 2, escalate: false });
    expect(result.metadata.warnings.map((w) => w.kind)).toEqual(['circuit_not_updated', 'ledger_unreadable']);
    expect(s.spawned).toHaveLength(1);
  });
});

describe('RunService: a fallback that cannot take runs never makes a task escalate sooner', () => {
  it("when the chain's last model has an open circuit, the primary's retryable failure is the result, counted", async () => {
    const s = service();
    await s.setCircuit('m', { state: 'open', consecutiveFailures: 5, openedAt: s.now(), retryAt: s.now() + 60_000 });
    s.failNext();
    const result = await s.runs.run({ model: 'primary', fallbackModels: ['m'], prompt: 'x', taskId: 'first-try' });
    expect(result.metadata).toMatchObject({
      status: 'crashed',
      model: 'primary',
      escalate: false,
      retryable: true,
      retry_count: 0,
      retries_left: 3,
      fallback: [],
    });
    expect(s.spawned).toHaveLength(1); // the open model was not even tried
    expect((await s.store.snapshot(['first-try'])).tasks['first-try']).toMatchObject({ failures: 1, lastStatus: 'crashed' });
  });

  it('when the last model turns out to refuse only after the call moved on to it, the earlier failure still stands', async () => {
    const s = service();
    await s.probeInFlight('elsewhere', 60_000); // `m` half open: its probe may yet close it, so the chain goes on
    s.failNext();
    const live = new LiveCall();
    const call = s.runs.run({ model: 'primary', fallbackModels: ['m'], prompt: 'x', taskId: 'raced' }, { listen: live.listen });
    await vi.waitFor(() => waiting(live));
    // The probe fails (in another server): `m` opens again, and the waiting attempt is refused.
    await s.setCircuit('m', { state: 'open', consecutiveFailures: 6, openedAt: s.now(), retryAt: s.now() + 60_000 });
    const result = await call;
    expect(result.metadata).toMatchObject({ status: 'circuit_open', escalate: false, retry_count: 0, retries_left: 3 });
    expect(result.metadata.error?.message).toMatch(/^models tried before: primary \(crashed\); m: /);
    expect((await s.store.snapshot(['raced'])).tasks.raced).toMatchObject({
      failures: 1,
      lastStatus: 'crashed',
      escalated: false,
    });
  });
});
