// `report` counts model loads per day from what the built server wrote, against the fake shared
// `ollama serve` (test/fixtures/fake-ollama.md, "Shared server mode") with room for one model: two
// models taking turns reload on every call, and the report says so in words (issue 28, item 3).
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';

import { startFakeServe, type FakeServe } from '../helpers/fake-serve.js';
import { makeSandbox, SERVER_ENTRY, startServer, type RunningServer, type Sandbox } from './harness.js';

const MODELS = 'sim-a:latest,sim-b:latest';

let world: { sandbox: Sandbox; serve: FakeServe; server: RunningServer } | null = null;
afterEach(async () => {
  await world?.server.close();
  await world?.serve.stop();
  world = null;
});

interface LoadRow {
  day: string;
  model: string;
  loads: number;
  load_ms: number;
  runs: number;
}

/** Per model, its rows summed over days (a test that runs across midnight UTC has two). */
function byModel(rows: readonly LoadRow[]): Record<string, Omit<LoadRow, 'day' | 'model'>> {
  const sums: Record<string, Omit<LoadRow, 'day' | 'model'>> = {};
  for (const { model, loads, load_ms: ms, runs } of rows) {
    const into = (sums[model] ??= { loads: 0, load_ms: 0, runs: 0 });
    into.loads += loads;
    into.load_ms += ms;
    into.runs += runs;
  }
  return sums;
}

describe('report: model loads per day, from a real run log', () => {
  it('counts the loads Ollama made, and says that two models taking turns reload on every call', async () => {
    const sandbox = makeSandbox();
    const serveEnv = { FAKE_OLLAMA_MODELS: MODELS, OLLAMA_MAX_LOADED_MODELS: '1', FAKE_OLLAMA_LOAD_MS: '300' };
    const serve = await startFakeServe({ env: serveEnv, traceDir: sandbox.traceDir });
    const server = await startServer(sandbox, { ...serve.env, FAKE_OLLAMA_MODELS: MODELS, OLLAMA_NUM_PARALLEL: '' });
    world = { sandbox, serve, server };
    // Taking turns: every call loads its model. Then sim-a twice in a row: the second finds it loaded.
    for (const model of ['sim-a', 'sim-b', 'sim-a', 'sim-b', 'sim-a', 'sim-b', 'sim-a', 'sim-a']) {
      const result = await server.run({ model, prompt: 'hi' });
      expect(result.metadata.status).toBe('ok');
    }
    const loadsByOllama = (model: string) => serve.events().filter((e) => e.event === 'load_done' && e.model === model).length;
    expect([loadsByOllama('sim-a:latest'), loadsByOllama('sim-b:latest')]).toEqual([4, 3]);

    const report = (args: string[]) =>
      execa(process.execPath, [SERVER_ENTRY, 'report', '--since', 'all', ...args], {
        env: { OLLAMA_MCP_TELEMETRY_DIR: sandbox.telemetryDir, PATH: process.env.PATH ?? '' },
        extendEnv: false,
      });
    const summary = JSON.parse((await report(['--json'])).stdout);
    const loads = byModel(summary.timeline.loads);
    expect(loads).toEqual({
      'sim-a:latest': { loads: 4, runs: 5, load_ms: expect.any(Number) },
      'sim-b:latest': { loads: 3, runs: 3, load_ms: expect.any(Number) },
    });
    expect(loads['sim-a:latest']!.load_ms).toBeGreaterThanOrEqual(4 * 250); // about 300 ms each

    const { stdout: text } = await report([]);
    expect(text).toContain('Model loads per day (UTC): 7 load(s) of 2 model(s)');
    if (summary.timeline.loads.length === 2) {
      // One UTC day: the thrash said in words.
      const day = summary.timeline.loads[0].day;
      expect(text).toMatch(new RegExp(`^sim-a:latest loaded 4 times for 5 runs on ${day} \\(\\d`, 'm'));
      expect(text).toMatch(new RegExp(`^sim-b:latest loaded 3 times for 3 runs on ${day} \\(\\d`, 'm'));
    }
  });
});
