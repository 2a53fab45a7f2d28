/**
 * A realistic day of runs.jsonl, seeded: about 300 runs of 5 models from 08:00 to 18:00 UTC on
 * 2026-11-22, mostly answers, with the things a reviewer must find:
 *
 * - an Ollama outage (13:00 to 13:14): every run fails `ollama_unreachable` and its task escalates;
 * - `deepseek-r1:14b` timing out: tasks burn their retries (`max_retries_exceeded`), its circuit
 *   opens at 15:30 and stays open (the runs after that are `circuit_open`, escalated);
 * - three escalation causes in all (`OUTAGE`, `RETRIES`, `CIRCUIT` below), one task reset
 *   afterwards, one resolved by a later ok run, one blocked;
 * - fallback chains `qwen3:8b -> llama3.2` falling through when qwen3:8b crashes, and busy retries
 *   (`server_busy` with `will_retry`) retried by the server inside calls;
 * - token usage, cold loads (load_ms over 1 s), prompts that may have been truncated;
 * - the first lines written by an older server (schema v1: no usage, no chain fields), and
 *   control records (`reset_task`, `reset_circuit`, `status`).
 *
 * Records are built in the server's key order (telemetry/README.md), so the
 * report reads them as it reads a real log. Used by the report's tests
 * (test/e2e/report.e2e.test.ts also leaves the text report of this day in test-artifacts/).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { prng } from './seeded-random.js';
import { NO_USAGE, type RunUsage } from '../../src/ollama/verbose-stats.js';

export const DAY_START_MS = Date.parse('2026-11-22T08:00:00.000Z');
export const DAY_END_MS = Date.parse('2026-11-22T18:00:00.000Z');
/** A clock for the report: half an hour after the last run. */
export const DAY_NOW = new Date('2026-11-22T18:30:00.000Z');

export const MODELS = ['qwen2.5-coder:7b', 'llama3.2:latest', 'qwen3:8b', 'deepseek-r1:14b', 'gemma3:4b'] as const;

/** What the day holds by construction (the tests' known answers). */
export const DAY_FACTS = {
  outage: { model: 'qwen2.5-coder:7b', reason: 'ollama_unreachable', status: 'ollama_unreachable', escalations: 14 },
  retries: { model: 'deepseek-r1:14b', reason: 'max_retries_exceeded', status: 'timeout', escalations: 10 },
  circuit: { model: 'deepseek-r1:14b', reason: 'circuit_open', status: 'circuit_open', escalations: 8 },
  /** Escalated, never reset nor retried: needs attention. */
  openTask: 'review-auth-module',
  /** Escalated (outage), then reset by ollama_reset: resolved. */
  resetTask: 'outage-task-00',
  /** Escalated (outage), then ok on a later run: resolved. */
  retriedTask: 'outage-task-01',
  /** Escalated, then refused as `blocked`. */
  blockedTask: 'summarize-logs',
  /** The circuit open at the end of the day. */
  openCircuit: 'deepseek-r1:14b',
  chain: ['qwen3:8b', 'llama3.2:latest'] as const,
  /** Chain calls, and how many fell through to llama3.2. */
  chainCalls: 12,
  chainFellThrough: 5,
  /** Busy retries by the server (will_retry lines with server_busy), in calls that then answered. */
  busyRetries: 7,
  /** v1 lines at the start of the day. */
  v1Lines: 40,
  /** Runs whose prompt may have been truncated (gemma3:4b, 8192-token context). */
  truncated: 3,
} as const;

type Usage = RunUsage;

interface RunSpec {
  tsMs: number;
  model: string;
  task: string | null;
  status: string;
  duration?: number;
  retryCount?: number;
  escalate?: boolean;
  reason?: string | null;
  circuit?: { state: string; consecutive_failures: number; retry_after_seconds: number | null; transition: string | null };
  error?: string | null;
  chainId?: string | null;
  chainStep?: number | null;
  busyTry?: number;
  willRetry?: boolean;
  usage?: Usage;
  warnings?: { kind: string; message: string }[];
  v1?: boolean;
}

const NULL_USAGE: Usage = NO_USAGE;
const CLOSED = { state: 'closed', consecutive_failures: 0, retry_after_seconds: null, transition: null };
const ERRORS: Record<string, string> = {
  ollama_unreachable: "Error: could not connect to ollama server, run 'ollama serve' to start it",
  timeout: 'no answer within 120000 ms; the model process was killed (SIGTERM)',
  crashed: 'Error: 500 Internal Server Error: llama-server process has terminated: exit status 2',
  server_busy: 'Error: 503 Service Unavailable: server busy, please try again.  maximum pending requests exceeded',
  circuit_open: 'circuit open for deepseek-r1:14b after 5 failures in a row; retry after 600 s',
  blocked: 'task summarize-logs escalated before (ollama_unreachable); OLLAMA_MCP_ESCALATION=block refuses it until ollama_reset',
};
/** Tokens per second of each model's answers (median), and its context size. */
const SPEED: Record<string, { tps: number; ctx: number; median: number }> = {
  'qwen2.5-coder:7b': { tps: 42, ctx: 32768, median: 4200 },
  'llama3.2:latest': { tps: 78, ctx: 8192, median: 1800 },
  'qwen3:8b': { tps: 36, ctx: 40960, median: 7000 },
  'deepseek-r1:14b': { tps: 14, ctx: 16384, median: 26000 },
  'gemma3:4b': { tps: 61, ctx: 8192, median: 2400 },
};

/** The day's lines (JSON text, in write order: close to, not exactly, `ts` order). */
export function realisticDayLines(seed = 9): string[] {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const records: { tsMs: number; line: string }[] = [];
  let runCounter = 0;
  const lastLoad = new Map<string, number>();

  const usageFor = (model: string, tsMs: number, durationMs: number, promptTokens?: number): Usage => {
    const speed = SPEED[model]!;
    const cold = !lastLoad.has(model) || tsMs - lastLoad.get(model)! > 30 * 60_000; // unloaded after 30 min idle
    lastLoad.set(model, tsMs);
    const prompt = promptTokens ?? 150 + Math.floor(random() * 2400);
    const tps = Math.round(speed.tps * (0.85 + random() * 0.3) * 100) / 100;
    const load = cold ? 2500 + Math.round(random() * 4000) : 8 + Math.round(random() * 30);
    const output = Math.max(1, Math.round(((durationMs - load) / 1000) * tps * 0.8));
    return {
      prompt_tokens: prompt,
      output_tokens: output,
      tokens_per_second: tps,
      prompt_tokens_per_second: Math.round(prompt / 0.4) / 1,
      load_ms: load,
      total_ms: durationMs - 20,
    };
  };

  const add = (spec: RunSpec): void => {
    runCounter += 1;
    const spawned = !['circuit_open', 'blocked', 'invalid_input'].includes(spec.status);
    const duration =
      spec.duration ?? (spawned ? Math.max(200, Math.round(SPEED[spec.model]!.median * Math.exp(0.5 * gauss(random)))) : 0);
    const ok = spec.status === 'ok';
    const usage = spec.usage ?? (ok ? usageFor(spec.model, spec.tsMs, duration) : NULL_USAGE);
    const r: Record<string, unknown> = {
      v: spec.v1 === true ? 1 : 2,
      ts: new Date(spec.tsMs).toISOString(),
      run_id: `run-${String(runCounter).padStart(4, '0')}-${Math.floor(random() * 0xffff).toString(16)}`,
      batch_id: null,
    };
    if (spec.v1 !== true) {
      r.chain_id = spec.chainId ?? null;
      r.chain_step = spec.chainStep ?? null;
    }
    Object.assign(r, {
      tool: 'ollama_run',
      model: spec.model === 'llama3.2:latest' && random() < 0.5 ? 'llama3.2' : spec.model,
      model_key: spec.model,
      task_id: spec.task,
      status: spec.status,
      exit_code: ok ? 0 : spec.status === 'timeout' || !spawned ? null : 1,
      signal: spec.status === 'timeout' ? 'SIGTERM' : null,
      timed_out: spec.status === 'timeout',
      truncated: false,
      duration_ms: spawned ? duration : 0,
      queue_ms: spawned ? Math.floor(random() * random() * 900) : 0,
      timeout_ms: spawned ? 120000 : null,
      prompt_chars: 400 + Math.floor(random() * 9000),
      output_chars: ok ? 200 + Math.floor(random() * 5000) : 0,
      thinking_chars: 0,
    });
    if (spec.v1 !== true) r.usage = usage;
    Object.assign(r, {
      retry_count: spec.retryCount ?? 0,
      max_retries: 3,
      escalate: spec.escalate ?? false,
      escalation_reason: spec.reason ?? null,
    });
    if (spec.v1 !== true) {
      r.busy_try = spec.busyTry ?? 0;
      r.will_retry = spec.willRetry ?? false;
    }
    Object.assign(r, {
      circuit: spec.circuit ?? CLOSED,
      error: ok ? null : (spec.error ?? ERRORS[spec.status] ?? `Error: ${spec.status}`),
      server_pid: 4100 + (runCounter % 2),
      warnings: spec.warnings ?? [],
    });
    if (spec.v1 === true) delete r.model_key; // older lines may lack it too
    records.push({ tsMs: spec.tsMs, line: JSON.stringify(r) });
  };
  const control = (tsMs: number, action: string, taskId: string | null, model: string | null, detail: string): void => {
    records.push({
      tsMs,
      line: JSON.stringify({
        v: 2,
        kind: 'control',
        ts: new Date(tsMs).toISOString(),
        tool: action === 'status' ? 'ollama_task_status' : 'ollama_reset',
        action,
        task_id: taskId,
        model,
        detail,
        server_pid: 4100,
      }),
    });
  };

  // ---------------------------------------------------------------- background: ~230 ordinary runs
  const backgroundModels = ['qwen2.5-coder:7b', 'qwen2.5-coder:7b', 'llama3.2:latest', 'gemma3:4b', 'qwen3:8b'];
  let taskNo = 0;
  for (let t = DAY_START_MS; t < DAY_END_MS; t += 150_000) {
    const tsMs = t + Math.floor(random() * 60_000);
    if (tsMs >= Date.parse('2026-11-22T13:00:00Z') && tsMs < Date.parse('2026-11-22T13:15:00Z')) continue; // the outage
    const model = pick(backgroundModels);
    const task = `task-${String((taskNo += 1)).padStart(3, '0')}`;
    const v1 = taskNo <= DAY_FACTS.v1Lines;
    const fails = random() < 0.06;
    if (fails) {
      // A timeout, then the retry answers: a failed attempt the caller saw, not an escalation.
      const status = random() < 0.6 ? 'timeout' : 'crashed';
      add({ tsMs, model, task, status, duration: status === 'timeout' ? 120_000 : undefined, v1 });
      add({ tsMs: tsMs + 125_000 + Math.floor(random() * 2000), model, task, status: 'ok', retryCount: 1, v1 });
    } else add({ tsMs, model, task, status: 'ok', v1 });
  }

  // ---------------------------------------------------------------- truncated prompts (gemma3:4b, 8192 context)
  for (let i = 0; i < DAY_FACTS.truncated; i++) {
    const tsMs = Date.parse('2026-11-22T10:20:00Z') + i * 7 * 60_000;
    const usage = { ...usageFor('gemma3:4b', tsMs, 5200, 8192) };
    add({
      tsMs,
      model: 'gemma3:4b',
      task: `long-doc-${i}`,
      status: 'ok',
      duration: 5200,
      usage,
      warnings: [
        {
          kind: 'prompt_may_be_truncated',
          message:
            'prompt used 8192 tokens of a 8192-token context: Ollama keeps only the end of a prompt that does not fit (raise num_ctx or OLLAMA_CONTEXT_LENGTH)',
        },
      ],
    });
  }

  // ---------------------------------------------------------------- the outage: 14 tasks escalate
  for (let i = 0; i < DAY_FACTS.outage.escalations; i++) {
    const tsMs = Date.parse('2026-11-22T13:00:30Z') + i * 60_000;
    const task =
      i === 0
        ? DAY_FACTS.resetTask
        : i === 1
          ? DAY_FACTS.retriedTask
          : i === 2
            ? DAY_FACTS.blockedTask
            : `outage-task-${String(i).padStart(2, '0')}`;
    add({
      tsMs,
      model: DAY_FACTS.outage.model,
      task,
      status: 'ollama_unreachable',
      duration: 30 + Math.floor(random() * 40),
      escalate: true,
      reason: 'ollama_unreachable',
    });
  }
  control(Date.parse('2026-11-22T13:40:00Z'), 'status', DAY_FACTS.resetTask, null, 'escalated (ollama_unreachable)');
  control(
    Date.parse('2026-11-22T13:41:00Z'),
    'reset_task',
    DAY_FACTS.resetTask,
    null,
    `Cleared the ledger of ${DAY_FACTS.resetTask}.`,
  );
  add({
    tsMs: Date.parse('2026-11-22T13:50:00Z'),
    model: DAY_FACTS.outage.model,
    task: DAY_FACTS.retriedTask,
    status: 'ok',
    retryCount: 1,
  });
  for (let i = 0; i < 2; i++)
    add({
      tsMs: Date.parse('2026-11-22T14:05:00Z') + i * 300_000,
      model: 'qwen2.5-coder:7b',
      task: DAY_FACTS.blockedTask,
      status: 'blocked',
      escalate: true,
      reason: 'ollama_unreachable',
    });

  // ---------------------------------------------------------------- deepseek-r1:14b: retries burnt, then its circuit opens
  let failuresInRow = 0;
  for (let task = 0; task < DAY_FACTS.retries.escalations; task++) {
    const id = task === 0 ? DAY_FACTS.openTask : `deep-${String(task).padStart(2, '0')}`;
    for (let retry = 0; retry <= 3; retry++) {
      const tsMs = Date.parse('2026-11-22T09:00:00Z') + task * 1_500_000 + retry * 130_000 + Math.floor(random() * 5000);
      const last = retry === 3;
      // Answers between tasks keep the circuit closed until the bad spell at 15:30.
      failuresInRow = retry === 0 ? 1 : failuresInRow + 1;
      add({
        tsMs,
        model: 'deepseek-r1:14b',
        task: id,
        status: 'timeout',
        duration: 120_000 + Math.floor(random() * 30),
        retryCount: retry,
        escalate: last,
        reason: last ? 'max_retries_exceeded' : null,
        circuit: { state: 'closed', consecutive_failures: failuresInRow, retry_after_seconds: null, transition: null },
      });
    }
    add({
      tsMs: Date.parse('2026-11-22T09:00:00Z') + task * 1_500_000 + 600_000,
      model: 'deepseek-r1:14b',
      task: `deep-ok-${task}`,
      status: 'ok',
    });
  }
  // 15:30: five crashes in a row open the circuit; it never closes again today.
  const spell = Date.parse('2026-11-22T15:30:00Z');
  for (let i = 1; i <= 5; i++)
    add({
      tsMs: spell + i * 40_000,
      model: 'deepseek-r1:14b',
      task: `deep-late-${i}`,
      status: 'crashed',
      circuit: {
        state: i === 5 ? 'open' : 'closed',
        consecutive_failures: i,
        retry_after_seconds: i === 5 ? 600 : null,
        transition: i === 5 ? 'opened' : null,
      },
    });
  for (let i = 0; i < DAY_FACTS.circuit.escalations; i++) {
    const tsMs = spell + 300_000 + i * 8 * 60_000;
    add({
      tsMs,
      model: 'deepseek-r1:14b',
      task: `deep-after-${i}`,
      status: 'circuit_open',
      escalate: true,
      reason: 'circuit_open',
      circuit: { state: 'open', consecutive_failures: 5, retry_after_seconds: 600, transition: null },
    });
  }
  // A circuit opened and reset by hand: not open now.
  control(Date.parse('2026-11-22T11:00:00Z'), 'reset_circuit', null, 'gemma3:4b', 'Closed the circuit of gemma3:4b.');

  // ---------------------------------------------------------------- fallback chains qwen3:8b -> llama3.2
  for (let i = 0; i < DAY_FACTS.chainCalls; i++) {
    const tsMs = Date.parse('2026-11-22T11:00:00Z') + i * 11 * 60_000;
    const chainId = `chain-${String(i).padStart(2, '0')}`;
    const task = `chain-task-${i}`;
    if (i < DAY_FACTS.chainFellThrough) {
      add({ tsMs, model: 'qwen3:8b', task, status: 'crashed', chainId, chainStep: 0, willRetry: true, duration: 900 });
      add({ tsMs: tsMs + 3000, model: 'llama3.2:latest', task, status: 'ok', chainId, chainStep: 1 });
    } else add({ tsMs, model: 'qwen3:8b', task, status: 'ok', chainId, chainStep: 0 });
  }

  // ---------------------------------------------------------------- busy retries by the server
  const busyCalls = [3, 2, 1, 1]; // tries before the answer: 7 in all
  busyCalls.forEach((tries, call) => {
    const tsMs = Date.parse('2026-11-22T16:40:00Z') + call * 5 * 60_000;
    for (let b = 0; b < tries; b++)
      add({
        tsMs: tsMs + b * 1500,
        model: 'qwen2.5-coder:7b',
        task: `busy-${call}`,
        status: 'server_busy',
        duration: 40,
        busyTry: b,
        willRetry: true,
      });
    add({ tsMs: tsMs + tries * 1500 + 500, model: 'qwen2.5-coder:7b', task: `busy-${call}`, status: 'ok', busyTry: tries });
  });

  // Write order: by time, with a few neighbours swapped (two server processes share the log).
  records.sort((a, b) => a.tsMs - b.tsMs);
  for (let i = 1; i < records.length; i++)
    if (random() < 0.03 && records[i]!.tsMs - records[i - 1]!.tsMs < 2000)
      [records[i - 1], records[i]] = [records[i]!, records[i - 1]!];
  return records.map((r) => r.line);
}

function gauss(random: () => number): number {
  const u = 1 - random();
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** Writes the day as `dir/runs.jsonl`; returns the file. */
export function writeRealisticDay(dir: string, seed = 9): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'runs.jsonl');
  writeFileSync(file, `${realisticDayLines(seed).join('\n')}\n`);
  return file;
}
