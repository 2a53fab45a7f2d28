import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/** test/fixtures/runs/: small logs with known answers (see its README.md). */
export const RUNS_FIXTURES = resolve(__dirname, '../fixtures/runs');
export const BASIC_DIR = join(RUNS_FIXTURES, 'basic');
export const ROTATED_DIR = join(RUNS_FIXTURES, 'rotated');
/** The clock of every test: two hours after the basic log's last run. */
export const NOW = new Date('2025-11-22T12:00:00.000Z');

/** A complete v1 record; override any field. */
export function record(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    v: 1,
    ts: '2025-11-22T10:00:00.000Z',
    run_id: 'r-1',
    batch_id: null,
    tool: 'ollama_run',
    model: 'qwen3:8b',
    task_id: 't-1',
    status: 'ok',
    exit_code: 0,
    signal: null,
    timed_out: false,
    truncated: false,
    duration_ms: 1000,
    queue_ms: 0,
    timeout_ms: 120000,
    prompt_chars: 10,
    output_chars: 10,
    thinking_chars: 0,
    retry_count: 0,
    max_retries: 3,
    escalate: false,
    escalation_reason: null,
    circuit: { state: 'closed', consecutive_failures: 0, retry_after_seconds: null, transition: null },
    error: null,
    server_pid: 1,
    ...overrides,
  };
}

/** Writes records (or raw lines) as `<dir>/<name>`, one per line. */
export async function writeLog(dir: string, name: string, lines: readonly (Record<string, unknown> | string)[]): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, name);
  await writeFile(file, lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n') + '\n');
  return file;
}

/** 500 tasks that each fail 4 times and escalate, with long error texts, over 3 models. */
export function manyEscalatedTasks(): Record<string, unknown>[] {
  const models = ['qwen3:8b', 'llama3.2:latest', 'deepseek-r1:14b'];
  const lines: Record<string, unknown>[] = [];
  const start = Date.parse('2025-11-22T08:00:00.000Z');
  let n = 0;
  for (let task = 0; task < 500; task++) {
    for (let retry = 0; retry < 4; retry++) {
      const last = retry === 3;
      lines.push(
        record({
          ts: new Date(start + n++ * 1000).toISOString(),
          run_id: `r-${n}`,
          model: models[task % 3],
          task_id: `task-with-a-longish-identifier-${String(task).padStart(4, '0')}`,
          status: retry % 2 === 0 ? 'timeout' : 'crashed',
          duration_ms: 1000 + task * 7 + retry,
          retry_count: retry,
          escalate: last,
          escalation_reason: last ? 'max_retries_exceeded' : null,
          error: `Error: ${'the model process printed a very long complaint on stderr; '.repeat(8)}`.slice(0, 500),
        }),
      );
    }
  }
  return lines;
}
