import { describe, expect, it } from 'vitest';
import { lookupContextWindow, parsePsContext, parseShowContext } from '../../../src/ollama/context-window.js';
import type { CliCommandRequest, CliCommandResult } from '../../../src/ollama/cli-command.js';

// cmd/cmd.go ListRunningHandler: tablewriter, left aligned, 4-space padding, no borders.
const PS_NEW =
  'NAME                ID              SIZE      PROCESSOR          CONTEXT    UNTIL                 \n' +
  'qwen3:8b            500a1f067a9f    6.8 GB    48%/52% CPU/GPU    8192       4 minutes from now    \n' +
  'llama3.2:latest     a80c4f17acd5    3.5 GB    100% GPU           4096       Forever               \n';
const PS_OLD =
  'NAME               ID              SIZE      PROCESSOR    UNTIL              \n' +
  'llama3.2:latest    a80c4f17acd5    3.5 GB    100% GPU     4 minutes from now    \n';

const SHOW =
  '  Model\n' +
  '    architecture        qwen3     \n' +
  '    parameters          8.2B      \n' +
  '    context length      40960     \n' +
  '    embedding length    4096      \n' +
  '    quantization        Q4_K_M    \n' +
  '\n' +
  '  Capabilities\n' +
  '    completion    \n' +
  '\n' +
  '  Parameters\n' +
  '    num_ctx           8192                  \n' +
  '    stop              "<|im_start|>"        \n' +
  '\n';

describe('parsePsContext', () => {
  it('reads the CONTEXT of the model (any spelling of its name), even beside a multi-word PROCESSOR', () => {
    expect(parsePsContext(PS_NEW, 'qwen3:8b')).toEqual({ hasColumn: true, context: 8192 });
    expect(parsePsContext(PS_NEW, 'llama3.2')).toEqual({ hasColumn: true, context: 4096 });
    expect(parsePsContext(PS_NEW, 'library/llama3.2:latest')).toEqual({ hasColumn: true, context: 4096 });
  });

  it('says when the model is not loaded, and when the CLI has no CONTEXT column (before v0.9.7)', () => {
    expect(parsePsContext(PS_NEW, 'mistral')).toEqual({ hasColumn: true, context: null });
    expect(parsePsContext(PS_OLD, 'llama3.2')).toEqual({ hasColumn: false, context: null });
    expect(parsePsContext('', 'llama3.2')).toEqual({ hasColumn: false, context: null });
    expect(parsePsContext('Error: something\n', 'llama3.2')).toEqual({ hasColumn: false, context: null });
  });
});

describe('parseShowContext', () => {
  it("reads the model's maximum and its num_ctx parameter", () => {
    expect(parseShowContext(SHOW)).toEqual({ modelMax: 40960, numCtx: 8192 });
  });

  it('gives null for what the output does not hold', () => {
    expect(parseShowContext(SHOW.slice(0, SHOW.indexOf('  Parameters')))).toEqual({ modelMax: 40960, numCtx: null });
    expect(parseShowContext('')).toEqual({ modelMax: null, numCtx: null });
  });
});

function answer(stdout: string, exitCode = 0): CliCommandResult {
  return { stdout, stderr: '', exitCode, timedOut: false, spawnError: null, spawnErrorCode: null };
}

describe('lookupContextWindow', () => {
  const request = { bin: 'ollama', env: {}, model: 'qwen3:8b', budgetMs: 1000 };

  it('asks ps only when the model is loaded', async () => {
    const calls: string[][] = [];
    const run = async (r: CliCommandRequest) => (calls.push([...r.args]), answer(PS_NEW));
    expect(await lookupContextWindow(request, run)).toEqual({ loaded: 8192, numCtx: null, modelMax: null });
    expect(calls).toEqual([['ps']]);
  });

  it('falls back to show when ps cannot tell', async () => {
    const calls: string[][] = [];
    const run = async (r: CliCommandRequest) => (calls.push([...r.args]), answer(r.args[0] === 'ps' ? PS_OLD : SHOW));
    expect(await lookupContextWindow(request, run)).toEqual({ loaded: null, numCtx: 8192, modelMax: 40960 });
    expect(calls).toEqual([['ps'], ['show', 'qwen3:8b']]);
  });

  it('gives null when the CLI fails or does not answer within the budget', async () => {
    expect(await lookupContextWindow(request, async () => answer('', 1))).toBeNull();
    const never = () => new Promise<CliCommandResult>(() => {});
    const started = performance.now();
    expect(await lookupContextWindow({ ...request, budgetMs: 50 }, never)).toBeNull();
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
