import { describe, expect, it } from 'vitest';
import type { HealthReport } from '../../src/health/health-report-schema.js';
import { makeSandbox, readRuns, readTrace, startTestServer, type Sandbox } from './harness.js';

describe('ollama_health end to end', () => {
  async function health(sandbox: Sandbox, env: Record<string, string> = {}) {
    const server = await startTestServer(env, sandbox);
    const { tools } = await server.client.listTools();
    expect(tools.map((t) => t.name)).toContain('ollama_health');
    const result = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const text = (result.content as { type: string; text: string }[]).map((c) => c.text).join('\n');
    return { report: result.structuredContent as HealthReport, isError: result.isError === true, text };
  }

  it('reports a working setup: ok, the installed models and the CLI version; runs no model', async () => {
    const sandbox = makeSandbox();
    const { report, isError, text } = await health(sandbox);
    expect(isError).toBe(false);
    expect(report.ok).toBe(true);
    expect(report.problems).toEqual([]);
    expect(report.cli).toMatchObject({ found: true, version: '0.12.0' });
    expect(report.server.reachable).toBe(true);
    expect(report.models.installed).toEqual(expect.arrayContaining(['llama3.2:latest', 'qwen2.5-coder:7b']));
    expect(report.telemetry).toMatchObject({ dir: sandbox.telemetryDir, writable: true });
    expect(report.config.http_token).toBe('unset');
    expect(text).toContain('✓ Ollama server: reachable');

    const trace = readTrace(sandbox);
    expect(trace.some((e) => e.event === 'start')).toBe(true);
    expect(trace.filter((e) => e.event === 'start' && e.argv?.[0] === 'run')).toEqual([]);
    expect(readRuns(sandbox)).toEqual([]); // a health check is not a run
  });

  it('with the Ollama server down: still a successful call, ok false, and the fix', async () => {
    const sandbox = makeSandbox();
    const { report, isError } = await health(sandbox, { FAKE_OLLAMA_SERVER: 'down' });
    expect(isError).toBe(false);
    expect(report.ok).toBe(false);
    expect(report.server.reachable).toBe(false);
    expect(report.problems.join('\n')).toMatch(/OLLAMA_HOST.*`ollama serve`/);
    expect(readTrace(sandbox).filter((e) => e.event === 'start' && e.argv?.[0] === 'run')).toEqual([]);
  });
});
