import { describe, expect, it } from 'vitest';
import { LiveCall } from '../../../src/app/call/live-call.js';
import type { AttemptInfo } from '../../../src/app/attempt/types.js';

const attempt = { runId: 'r', model: 'llama3.2' } as AttemptInfo;
import { describeLiveRun } from '../../../src/tools/ollama-run.js';

describe('progress messages of a call with busy retries and a fallback chain', () => {
  it('says the call waits to retry a busy Ollama, which retry, and for how long', () => {
    const live = new LiveCall();
    live.listen({ type: 'busy_wait', retry: 2, of: 3, waitMs: 1_600, status: 'server_busy', attempt });
    expect(describeLiveRun('llama3.2', live, 4_000)).toMatch(
      /^llama3\.2: Ollama is busy; waiting to retry \(retry 2 of 3\) in 2 s, 4 s elapsed$/,
    );
    live.listen({ type: 'first_byte', attempt });
    expect(live.busy).toBeNull();
    expect(describeLiveRun('llama3.2', live, 4_000)).toMatch(/^llama3\.2: running for/);
  });

  it('says when the wait is for the machine, not Ollama (the CLI could not be started)', () => {
    const live = new LiveCall();
    live.listen({ type: 'busy_wait', retry: 1, of: 3, waitMs: 200, status: 'spawn_failed', attempt });
    expect(describeLiveRun('llama3.2', live, 1_000)).toMatch(
      /^llama3\.2: the machine could not start the CLI; waiting to retry \(retry 1 of 3\) in 1 s, 1 s elapsed$/,
    );
  });

  it('names the model of the chain being tried now', () => {
    const live = new LiveCall();
    live.listen({ type: 'next_model', next: 'qwen2.5-coder:7b', attempt });
    expect(live.model).toBe('qwen2.5-coder:7b');
    expect(describeLiveRun(live.model ?? 'first', live, 1_000)).toBe(
      'qwen2.5-coder:7b: trying the next model of the fallback chain, 1 s elapsed',
    );
  });
});
