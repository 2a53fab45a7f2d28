import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { makeSandbox, maxConcurrent, readRunTrace, SERVER_ENTRY, serverEnv, startTestServer } from './harness.js';

const TIERS = {
  defaults: { timeout_ms: 60_000, max_retries: 3 },
  tiers: {
    quick: { timeout_ms: 700, start_timeout_ms: 20_000, max_retries: 1 },
    reasoning: { timeout_ms: 600_000, max_retries: 0, parallel: 1 },
  },
  models: [
    { match: 'deepseek-r1*', tier: 'reasoning' },
    { match: 'llama3.2', tier: 'quick' },
  ],
};

describe('per-model tiers (OLLAMA_MCP_CONFIG)', () => {
  it('applies the matching tier; per-call arguments still win', async () => {
    const sandbox = makeSandbox();
    const file = path.join(sandbox.telemetryDir, 'tiers.json');
    writeFileSync(file, JSON.stringify(TIERS));
    const server = await startTestServer({ OLLAMA_MCP_CONFIG: file }, sandbox);
    const quick = await server.run({ model: 'llama3.2:latest', prompt: 'slow @fake:sleep_ms=3000' });
    expect(quick.metadata).toMatchObject({ status: 'timeout', timeout_ms: 700, start_timeout_ms: 20_000, max_retries: 1 });
    const overridden = await server.run({ model: 'llama3.2', prompt: 'hi', timeout_ms: 5_000, max_retries: 7 });
    expect(overridden.metadata).toMatchObject({ status: 'ok', timeout_ms: 5_000, max_retries: 7 });
    const other = await server.run({ model: 'qwen2.5-coder:7b', prompt: 'hi' });
    expect(other.metadata).toMatchObject({ timeout_ms: 60_000, max_retries: 3 });

    // The reasoning tier sends Ollama one request of a model at a time, whatever the server's other settings.
    await Promise.all([0, 1, 2].map((i) => server.run({ model: 'deepseek-r1:7b', prompt: `think ${i} @fake:sleep_ms=300` })));
    const trace = readRunTrace(sandbox);
    const pids = new Set(trace.filter((e) => e.event === 'start' && e.argv?.includes('deepseek-r1:7b')).map((e) => e.pid));
    expect(pids.size).toBe(3);
    expect(maxConcurrent(trace.filter((e) => pids.has(e.pid)))).toBe(1);
  });

  it('a bad file stops start-up with the path and the offending key', async () => {
    const sandbox = makeSandbox();
    const file = path.join(sandbox.telemetryDir, 'tiers.json');
    writeFileSync(file, JSON.stringify({ ...TIERS, models: [{ match: 'x*', tier: 'reasonin' }] }));
    const child = spawn(process.execPath, [SERVER_ENTRY], {
      env: serverEnv(sandbox, { OLLAMA_MCP_CONFIG: file }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain(file);
    expect(stderr).toContain('models[0].tier: no tier named "reasonin"');
  });
});
