import { describe, expect, it } from 'vitest';
import type { Attempts } from '../../../../src/app/attempt/attempt.js';
import { CallEvents } from '../../../../src/app/attempt/events.js';
import { chainOf } from '../../../../src/app/call/plan.js';
import { runCall, type CallDeps } from '../../../../src/app/call/run-call.js';
import type { RunResult } from '../../../../src/app/reply/run-result.js';
import type { ModelSettings } from '../../../../src/config/model-tiers.js';
import type { RunStatus } from '../../../../src/policy/run-status.js';
import type { CallContext, CallEvent, RunRequest, Step } from '../../../../src/app/attempt/types.js';

const SETTINGS: ModelSettings = {
  timeoutMs: 10_000,
  startTimeoutMs: 300_000,
  maxRetries: 3,
  breakerThreshold: 5,
  breakerCooldownMs: 60_000,
  parallel: 1,
  source: null,
  fallback: [],
};

interface Seen {
  readonly model: string;
  readonly context: CallContext;
  readonly step: Step;
  readonly willRetry: boolean;
}

/**
 * Attempts that end with the scripted statuses (each taking `tryMs` of the fake clock), and waits
 * that only move the clock: no process, no timer. `seen` lists each attempt as it ended.
 */
function harness(
  script: RunStatus[],
  options: {
    tryMs?: number;
    settings?: Record<string, Partial<ModelSettings>>;
    sleepAborts?: boolean;
    /** Models whose circuit refuses runs. */
    open?: readonly string[];
  } = {},
) {
  let now = 1_000_000;
  const seen: Seen[] = [];
  const sleeps: number[] = [];
  const events: CallEvent[] = [];
  let ids = 0;
  let runs = 0;
  const circuitReads: string[] = [];
  const result = (model: string, status: RunStatus, step: Step, runId: string): RunResult =>
    ({
      output: status === 'ok' ? `answer from ${model}` : '',
      metadata: {
        status,
        run_id: runId,
        model,
        error: status === 'ok' ? null : { kind: status, message: `${status}!` },
        busy_retries: step.busyRetries,
      },
    }) as unknown as RunResult;
  const attempts = {
    begin(step: Step, context: CallContext) {
      const model = step.request.model;
      const info = { runId: `run-${++runs}`, model };
      let status: RunStatus = 'cancelled';
      return {
        info,
        async run() {
          status = script.shift() ?? 'ok';
          now += options.tryMs ?? 10;
          return { status };
        },
        stopBeforeRun: () => void (status = 'cancelled'),
        async end(willRetry: boolean) {
          seen.push({ model, context, step, willRetry });
          return { result: result(model, status, step, info.runId), own: null };
        },
      };
    },
  } as unknown as Attempts;
  const deps: CallDeps = {
    attempts,
    refuses: async (model) => {
      circuitReads.push(model);
      return options.open?.includes(model) ?? false;
    },
    settingsFor: (model) => ({ ...SETTINGS, ...options.settings?.[model] }),
    busyRetries: 3,
    clock: () => now,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
      return !options.sleepAborts;
    },
    newId: () => `chain-${++ids}`,
  };
  const context: CallContext = { events: new CallEvents([(event) => void events.push(event)]) };
  return { deps, seen, sleeps, events, circuitReads, context, now: () => now };
}

const request = (extra: Partial<RunRequest> = {}): RunRequest => ({ model: 'a:1b', prompt: 'p', taskId: 't', ...extra });

describe('runCall: fallback chains', () => {
  it('tries the next model while the one before cannot serve, and returns the first that can', async () => {
    const h = harness(['crashed', 'circuit_open', 'ok']);
    const r = await runCall(h.deps, request({ fallbackModels: ['b:1b', 'c:1b', 'd:1b'] }), h.context);
    expect(r.metadata.model).toBe('c:1b');
    expect(h.seen.map((s) => [s.model, s.step.chainId, s.step.chainStep, s.willRetry])).toEqual([
      ['a:1b', 'chain-1', 0, true],
      ['b:1b', 'chain-1', 1, true],
      ['c:1b', 'chain-1', 2, false],
    ]);
    expect(h.seen[2]!.step.tried).toEqual([
      { model: 'a:1b', status: 'crashed', run_id: 'run-1', error: 'crashed!', own: null },
      { model: 'b:1b', status: 'circuit_open', run_id: 'run-2', error: 'circuit_open!', own: null },
    ]);
    expect(h.events).toContainEqual(expect.objectContaining({ type: 'next_model', next: 'b:1b' }));
  });

  it("every model keeps the call's max_retries (the first model's), and its own timeout", async () => {
    const h = harness(['crashed', 'ok'], { settings: { 'a:1b': { maxRetries: 1 }, 'b:1b': { maxRetries: 9, timeoutMs: 777 } } });
    await runCall(h.deps, request({ fallbackModels: ['b:1b'] }), h.context);
    expect(h.seen.map((s) => [s.step.limits.maxRetries, s.step.limits.timeoutMs])).toEqual([
      [1, 10_000],
      [1, 777],
    ]);
  });

  it('ends at the first status no other model can help with, and after the last model', async () => {
    const unreachable = harness(['ollama_unreachable']);
    await runCall(unreachable.deps, request({ fallbackModels: ['b:1b'] }), unreachable.context);
    expect(unreachable.seen.map((s) => s.model)).toEqual(['a:1b']);

    const allFail = harness(['crashed', 'crashed']);
    const r = await runCall(allFail.deps, request({ fallbackModels: ['b:1b'] }), allFail.context);
    expect(r.metadata.status).toBe('crashed');
    expect(allFail.seen.map((s) => s.willRetry)).toEqual([true, false]);
  });

  it('a timeout moves on only within deadline_ms, which also reaches every try as its deadline', async () => {
    const plain = harness(['timeout'], { tryMs: 10_000 });
    await runCall(plain.deps, request({ fallbackModels: ['b:1b'] }), plain.context);
    expect(plain.seen).toHaveLength(1);

    const h = harness(['timeout', 'ok'], { tryMs: 10_000 });
    const start = h.now();
    await runCall(h.deps, request({ fallbackModels: ['b:1b'], deadlineMs: 30_000 }), h.context);
    expect(h.seen.map((s) => s.model)).toEqual(['a:1b', 'b:1b']);
    expect(h.seen.every((s) => s.context.deadlineAt === start + 30_000)).toBe(true);

    const batch = harness(['ok']);
    await runCall(batch.deps, request({ deadlineMs: 30_000 }), { ...batch.context, deadlineAt: batch.now() + 5_000 });
    expect(batch.seen[0]!.context.deadlineAt).toBe(batch.now() - 10 + 5_000); // the earlier of the two
  });

  it("reads a later model's circuit only when a failure would hand the call on to it: never on the happy path", async () => {
    const happy = harness(['ok']);
    await runCall(happy.deps, request({ fallbackModels: ['b:1b', 'c:1b'] }), happy.context);
    expect(happy.circuitReads).toEqual([]);

    const failed = harness(['crashed', 'ok']);
    await runCall(failed.deps, request({ fallbackModels: ['b:1b', 'c:1b'] }), failed.context);
    expect(failed.circuitReads).toEqual(['b:1b']);

    const allOpen = harness(['crashed'], { open: ['b:1b', 'c:1b'] });
    const r = await runCall(allOpen.deps, request({ fallbackModels: ['b:1b', 'c:1b'] }), allOpen.context);
    expect(r.metadata).toMatchObject({ status: 'crashed', model: 'a:1b' });
    expect(allOpen.seen.map((s) => [s.model, s.willRetry])).toEqual([['a:1b', false]]);
  });

  it('no chain: no chain id, no step number', async () => {
    const h = harness(['crashed']);
    await runCall(h.deps, request(), h.context);
    expect(h.seen.map((s) => [s.step.chainId, s.step.chainStep, s.willRetry])).toEqual([[null, null, false]]);
  });
});

describe('chainOf', () => {
  it('uses the tier chain unless the call gives its own; [] turns it off; the call model is never tried twice', () => {
    expect(chainOf(request(), ['b:1b', 'c'])).toEqual(['a:1b', 'b:1b', 'c']);
    expect(chainOf(request({ fallbackModels: ['x:1b'] }), ['b:1b'])).toEqual(['a:1b', 'x:1b']);
    expect(chainOf(request({ fallbackModels: [] }), ['b:1b'])).toEqual(['a:1b']);
    expect(chainOf(request({ model: 'qwen:7b' }), ['library/qwen:7b', 'b:1b', 'B:1b'])).toEqual(['qwen:7b', 'b:1b']);
  });
});

describe('runCall: busy backoff', () => {
  it('retries a busy server after jittered waits, same model, and the call ends with the free try', async () => {
    const h = harness(['server_busy', 'server_busy', 'ok']);
    const r = await runCall(h.deps, request(), h.context);
    expect(r.metadata.status).toBe('ok');
    expect(h.sleeps).toEqual([125, 250]); // random 0.5 of 250 and 500
    expect(h.seen.map((s) => [s.model, s.step.busyTry, s.step.busyRetries, s.willRetry])).toEqual([
      ['a:1b', 0, 0, true],
      ['a:1b', 1, 1, true],
      ['a:1b', 2, 2, false],
    ]);
    expect(h.events).toContainEqual(
      expect.objectContaining({ type: 'busy_wait', retry: 1, of: 3, waitMs: 125, status: 'server_busy' }),
    );
  });

  it('gives up after OLLAMA_MCP_BUSY_RETRIES and returns server_busy; the chain does not move on from it', async () => {
    const h = harness(['server_busy', 'server_busy', 'server_busy', 'server_busy']);
    const r = await runCall(h.deps, request({ fallbackModels: ['b:1b'] }), h.context);
    expect(r.metadata.status).toBe('server_busy');
    expect(h.seen.map((s) => s.model)).toEqual(['a:1b', 'a:1b', 'a:1b', 'a:1b']);
    expect(h.seen.at(-1)!.willRetry).toBe(false);
  });

  it('a machine that could not start the CLI is retried the same way, and the chain does not move on from it', async () => {
    const h = harness(['spawn_failed', 'ok']);
    expect((await runCall(h.deps, request({ fallbackModels: ['b:1b'] }), h.context)).metadata.status).toBe('ok');
    expect(h.events).toContainEqual(
      expect.objectContaining({ type: 'busy_wait', retry: 1, of: 3, waitMs: 125, status: 'spawn_failed' }),
    );

    const stuck = harness(['spawn_failed', 'spawn_failed', 'spawn_failed', 'spawn_failed']);
    const r = await runCall(stuck.deps, request({ fallbackModels: ['b:1b'] }), stuck.context);
    expect(r.metadata.status).toBe('spawn_failed');
    expect(stuck.seen.map((s) => s.model)).toEqual(['a:1b', 'a:1b', 'a:1b', 'a:1b']);
  });

  it("a retry's start allowance is what is left of its model's start_timeout_ms; its answer keeps the whole timeout_ms", async () => {
    const h = harness(['server_busy', 'ok'], { tryMs: 3_000 });
    await runCall(h.deps, request({ timeoutMs: 10_000, startTimeoutMs: 20_000 }), h.context);
    expect(h.seen.map((s) => s.step.limits.startTimeoutMs)).toEqual([20_000, 20_000 - 3_000 - 125]);
    expect(h.seen.map((s) => s.step.limits.timeoutMs)).toEqual([10_000, 10_000]);
  });

  it('waits no longer than the start allowance allows', async () => {
    const h = harness(['server_busy'], { tryMs: 9_850 });
    const r = await runCall(h.deps, request({ startTimeoutMs: 10_000 }), h.context);
    expect(r.metadata.status).toBe('server_busy');
    expect(h.sleeps).toEqual([]);
  });

  it('a cancel during the wait ends the call as cancelled, without another try', async () => {
    const h = harness(['server_busy', 'ok'], { sleepAborts: true });
    const r = await runCall(h.deps, request(), h.context);
    expect(r.metadata.status).toBe('cancelled');
    expect(h.seen.map((s) => [s.step.busyTry, s.willRetry])).toEqual([
      [0, true],
      [1, false],
    ]);
  });
});
