// Every jq recipe of docs/reviewing-runs.md and telemetry/README.md, run on a runs.jsonl the built server wrote:
// control records (ollama_task_status, ollama_reset) between the runs, one model under two spellings
// (slow1 and slow1:latest, which the report counts as one), a rejected call, a torn last line.
// jq itself comes from the jq-wasm devDependency (jq 1.7.1 compiled to WebAssembly: no binary needed);
// when a jq binary is on PATH too, each recipe is also run with it and must print the same.
import { execFileSync } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSandbox, startServer, type RunningServer, type Sandbox } from './harness.js';
import { loadJq, DOC_RECIPES, systemJq, type JqRaw } from './jq-recipes.js';

const RECIPES = DOC_RECIPES;

describe('the jq recipes on a log the server wrote', () => {
  let sandbox: Sandbox;
  let server: RunningServer;
  let log: string;
  let jq: JqRaw;
  beforeAll(async () => {
    jq = await loadJq();
    sandbox = makeSandbox();
    server = await startServer(sandbox, {
      FAKE_OLLAMA_MODELS: 'slow1:latest,fast2:7b',
      OLLAMA_MCP_BREAKER_THRESHOLD: '2',
    });
    // slow1 under both spellings: two answers, then two failures that open its circuit.
    await server.run({ model: 'slow1', prompt: 'a', task_id: 'fm-42' });
    await server.run({ model: 'slow1:latest', prompt: 'b', task_id: 'refactor-parser' });
    await server.client.callTool({ name: 'ollama_task_status', arguments: { task_id: 'fm-42' } });
    await server.run({ model: 'slow1', prompt: 'x @fake:exit=1', task_id: 'fm-42', max_retries: 0 });
    await server.run({ model: 'slow1:latest', prompt: 'x @fake:exit=1', task_id: 'refactor-parser', max_retries: 0 });
    await server.run({ model: 'slow1', prompt: 'refused: circuit open', task_id: 'fm-42' });
    await server.client.callTool({ name: 'ollama_reset', arguments: { model: 'slow1' } });
    await server.client.callTool({ name: 'ollama_reset', arguments: { task_id: 'fm-42' } });
    await server.run({ model: 'fast2:7b', prompt: 'c' });
    await server.run({ model: 'missing-model', prompt: 'd', task_id: 'fm-43' }); // escalates: model_not_found
    await server.run({ model: 'bad model!', prompt: 'e' }); // invalid_input
    await server.close();
    const file = path.join(sandbox.telemetryDir, 'runs.jsonl');
    appendFileSync(file, '{"v":1,"ts":"2026-'); // a torn last line, as a crash leaves it
    log = readFileSync(file, 'utf8');
  });
  afterAll(async () => server?.close());

  it('the log holds what the recipes must cope with', () => {
    const lines = log.split('\n');
    expect(lines.at(-1)).toBe('{"v":1,"ts":"2026-'); // the torn last line
    const records = lines.slice(0, -1).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.filter((r) => r.kind === 'control').map((r) => r.tool)).toEqual([
      'ollama_task_status',
      'ollama_reset',
      'ollama_reset',
    ]);
    const slow = records.filter((r) => r.model_key === 'slow1:latest');
    expect(new Set(slow.map((r) => r.model))).toEqual(new Set(['slow1', 'slow1:latest']));
    expect(records.filter((r) => r.kind === undefined).every((r) => typeof r.model_key === 'string')).toBe(true);
  });

  it('found the recipes of both pages', () => {
    expect(RECIPES.filter((r) => r.source === 'docs/reviewing-runs.md').length).toBeGreaterThanOrEqual(5);
    expect(RECIPES.filter((r) => r.source === 'telemetry/README.md').length).toBeGreaterThanOrEqual(8);
  });

  it.each(RECIPES.map((r) => [`${r.source}: ${r.program.slice(0, 70)}`, r] as const))('%s', async (_name, recipe) => {
    const out = await jq(log, recipe.program, recipe.flags);
    expect(out.trim()).not.toBe('');
    if (/group_by\(\.model|model_key/.test(recipe.program)) {
      // one model, however it was spelled: never a group of its own for "slow1", never a null model
      expect(out).not.toMatch(/"slow1"|^slow1\t|"model":null|^null\t/m);
    }
    const jqBin = systemJq();
    if (jqBin !== null) {
      const viaBinary = execFileSync(jqBin, [...recipe.flags, recipe.program], { input: log, encoding: 'utf8' });
      expect(viaBinary.trim()).toBe(out.trim());
    }
  });

  it('per model, slow1 and slow1:latest are one row, as in the report', async () => {
    const readme = RECIPES.find(
      (r) => r.source === 'docs/reviewing-runs.md' && r.program.includes('group_by(.model_key // .model)[]'),
    )!;
    const rows = (await jq(log, readme.program, readme.flags)).trim().split('\n').sort();
    expect(rows).toEqual(
      [
        'bad model!\tinvalid_input=1',
        'fast2:7b\tok=1',
        'missing-model:latest\tmodel_not_found=1',
        'slow1:latest\tcircuit_open=1 crashed=2 ok=2',
      ].sort(),
    );

    const failures = RECIPES.find((r) => r.program.includes('failures: length'))!;
    const parsed = JSON.parse(await jq(log, failures.program, failures.flags)) as { model: string; failures: number }[];
    expect(parsed.find((m) => m.model === 'slow1:latest')).toMatchObject({
      failures: 3,
      by_status: { crashed: 2, circuit_open: 1 },
    });
  });

  it('the control records are still there for the recipe that wants them', async () => {
    const control = RECIPES.find((r) => r.program.includes('select(.kind == "control")'))!;
    const lines = (await jq(log, control.program, control.flags))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l: { action: string }) => l.action)).toEqual(['status', 'reset_circuit', 'reset_task']);
  });
});
