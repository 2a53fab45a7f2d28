import { RUN_RECORD_SCHEMA_VERSION, type RunRecord } from '../../src/telemetry/run-record.js';

/** A complete, realistic RunRecord; override any field. */
export function sampleRecord(overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    v: RUN_RECORD_SCHEMA_VERSION,
    ts: '2025-11-22T10:15:30.123Z',
    run_id: 'r-0001',
    batch_id: null,
    tool: 'ollama_run',
    model: 'qwen3:8b',
    model_key: 'qwen3:8b',
    task_id: 'refactor-parser',
    status: 'ok',
    exit_code: 0,
    signal: null,
    timed_out: false,
    truncated: false,
    duration_ms: 4210,
    queue_ms: 3,
    timeout_ms: 120000,
    prompt_chars: 812,
    output_chars: 2048,
    thinking_chars: 0,
    usage: {
      prompt_tokens: 203,
      output_tokens: 512,
      tokens_per_second: 41.37,
      prompt_tokens_per_second: 1520.5,
      load_ms: 12.5,
      total_ms: 4185.2,
    },
    retry_count: 0,
    max_retries: 2,
    escalate: false,
    escalation_reason: null,
    circuit: { state: 'closed', consecutive_failures: 0, retry_after_seconds: null, transition: null },
    error: null,
    server_pid: 4242,
    warnings: [],
    ...overrides,
  };
}
