import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { makeSandbox, SERVER_ENTRY, startServer } from './harness.js';

describe('reviewing runs: report command and ollama_runs_summary', () => {
  it('summarises what the server logged, for the developer and for the agent', async () => {
    const sandbox = makeSandbox();
    const server = await startServer(sandbox, { OLLAMA_MCP_BREAKER_THRESHOLD: '100' });
    try {
      await server.run({ model: 'llama3.2', prompt: 'ok' });
      await server.run({ model: 'llama3.2', prompt: 'ok again' });
      await server.run({ model: 'llama3.2', prompt: 'slow @fake:hang', timeout_ms: 300 });
      for (let i = 0; i < 2; i += 1)
        await server.run({ model: 'qwen2.5-coder:7b', prompt: 'broken @fake:exit=1', task_id: 'bad', max_retries: 1 });
      await server.client.callTool({ name: 'ollama_task_status', arguments: { task_id: 'bad' } }); // a control line, not a run

      const { stdout, exitCode } = await execa(process.execPath, [SERVER_ENTRY, 'report', '--json', '--since', 'all'], {
        env: { OLLAMA_MCP_TELEMETRY_DIR: sandbox.telemetryDir, PATH: process.env.PATH ?? '' },
      });
      expect(exitCode).toBe(0);
      const summary = JSON.parse(stdout);
      expect(summary.total_runs).toBe(5);
      const byModel = Object.fromEntries(summary.models.map((m: { model: string }) => [m.model, m]));
      expect(byModel['llama3.2:latest']).toMatchObject({ runs: 3, ok: 2, timeouts: 1 });
      expect(byModel['qwen2.5-coder:7b']).toMatchObject({ runs: 2, ok: 0, escalations: 1, failures: { crashed: 2 } });
      expect(summary.escalated_tasks).toEqual([
        expect.objectContaining({ task_id: 'bad', escalation_reason: 'max_retries_exceeded' }),
      ]);

      const tool = await server.client.callTool({ name: 'ollama_runs_summary', arguments: {} });
      const small = tool.structuredContent as { total_runs: number; models: { model: string }[] };
      expect(small.total_runs).toBe(5);
      expect(JSON.stringify(tool.structuredContent).length).toBeLessThan(8_000);
    } finally {
      await server.close();
    }
  });
});
