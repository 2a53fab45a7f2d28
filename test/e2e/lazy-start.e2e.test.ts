import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { makeSandbox, ROOT, SERVER_ENTRY, serverEnv } from './harness.js';
import { startRawServer } from '../helpers/raw-stdio.js';

// An MCP client waits for the server's `initialize` reply before it can do anything: a stdio start
// must not load the HTTP server, the report or `doctor`, and loads execa only with the services.
// The `--import` hook records every module the process loads, dynamic imports included.
const RECORDER = path.join(ROOT, 'test/fixtures/record-modules.mjs');

const NOT_FOR_STDIO_START: Record<string, RegExp> = {
  'the HTTP transport': /\/dist\/transport\/http\//,
  'the report command': /\/dist\/cli\/report-command\.js$/,
  'the report (summary, text, HTML)': /\/dist\/report\/(summary|render-text|render-html|html)\.js$/,
  doctor: /\/dist\/cli\/doctor\.js$/,
  'the Redis client (team mode only)': /\/node_modules\/@redis\/|\/dist\/store\/redis-state-store\.js$/,
  // Off unless an OTLP endpoint is set: neither a start nor a call loads any of it.
  OpenTelemetry: /\/node_modules\/@opentelemetry\/|\/dist\/otel\/(?!settings\.js$)[^/]+\.js$/,
};

// What only a call needs: loaded after the `initialize` reply (the services start once the client
// confirms it with `notifications/initialized`, or on the first call).
const NOT_BEFORE_INITIALIZE_REPLY: Record<string, RegExp> = {
  ...NOT_FOR_STDIO_START,
  // Loaded with the services, before any spawn needs it (a spawn under EMFILE must not be the first).
  execa: /\/node_modules\/execa\//,
  'the run service': /\/dist\/app\/(run-service|call-runner|attempt-ledger)\.js$/,
  'the state store (lowdb)': /\/dist\/store\/(state-store|state-backend)\.js$|\/node_modules\/lowdb\//,
  'the run log': /\/dist\/telemetry\/(run-log|jsonl-appender)\.js$/,
  'the orphan sweep and process groups': /\/dist\/(app\/orphan-sweep|app\/process-hygiene|ollama\/process-group)\.js$/,
  'the spawn function': /\/dist\/ollama\/(model-process|load-execa)\.js$/,
  'the context-window look-up': /\/dist\/ollama\/context-window\.js$/,
  'the health check': /\/dist\/health\/collect-health\.js$/,
};

function loadedModules(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean);
}

function unexpectedlyLoaded(modules: readonly string[], patterns = NOT_FOR_STDIO_START): string[] {
  return Object.entries(patterns)
    .filter(([, pattern]) => modules.some((url) => pattern.test(url)))
    .map(([what]) => what);
}

describe('lazy loading', () => {
  it('a stdio start answers initialize before loading the services and execa; the report loads on first use', async () => {
    const sandbox = makeSandbox();
    const record = path.join(sandbox.traceDir, 'modules.txt');
    const child = spawn(process.execPath, ['--import', RECORDER, SERVER_ENTRY], {
      // With the review tool listed too, so that its first use can be checked.
      env: serverEnv(sandbox, { RECORD_MODULES_FILE: record, OLLAMA_MCP_RUNS_SUMMARY_TOOL: '1' }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const replies = new Map<number, (message: { result?: unknown }) => void>();
    createInterface({ input: child.stdout }).on('line', (line) => {
      const message = JSON.parse(line) as { id?: number; result?: unknown };
      if (message.id !== undefined) replies.get(message.id)?.(message);
    });
    const request = (id: number, method: string, params: unknown) =>
      new Promise<{ result?: unknown }>((resolve) => {
        replies.set(id, resolve);
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      });

    try {
      await request(1, 'initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'lazy-test', version: '1.0.0' },
      });
      const atReply = loadedModules(record);
      expect(atReply.some((url) => url.endsWith('/dist/mcp/server.js'))).toBe(true);
      expect(unexpectedlyLoaded(atReply, NOT_BEFORE_INITIALIZE_REPLY)).toEqual([]);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
      const list = (await request(2, 'tools/list', {})) as { result: { tools: { name: string }[] } };
      expect(list.result.tools.map((tool) => tool.name)).toContain('ollama_runs_summary');

      const atStart = loadedModules(record);
      // The recorder works: it saw the entry and the MCP server.
      expect(atStart.some((url) => url.endsWith('/dist/cli.js'))).toBe(true);
      expect(atStart.some((url) => url.endsWith('/dist/mcp/server.js'))).toBe(true);
      expect(unexpectedlyLoaded(atStart)).toEqual([]);

      const run = (await request(3, 'tools/call', {
        name: 'ollama_run',
        arguments: { model: 'llama3.2', prompt: 'say ok', task_id: 'lazy-1' },
      })) as { result: { isError?: boolean; content: { text: string }[] } };
      expect(run.result.isError).toBeFalsy();
      expect(run.result.content[0]!.text).toMatch(/^fake answer from llama3\.2: say ok/);
      const summary = (await request(4, 'tools/call', { name: 'ollama_runs_summary', arguments: {} })) as {
        result: { isError?: boolean; content: { text: string }[] };
      };
      expect(summary.result.isError).toBeFalsy();
      expect(summary.result.content[0]!.text).toContain('llama3.2');

      const afterUse = loadedModules(record);
      expect(afterUse.some((url) => NOT_BEFORE_INITIALIZE_REPLY.execa!.test(url))).toBe(true);
      expect(afterUse.some((url) => url.endsWith('/dist/report/summary.js'))).toBe(true);
      // Still nothing of HTTP or doctor.
      expect(unexpectedlyLoaded(afterUse)).toEqual(['the report (summary, text, HTML)']);
    } finally {
      child.stdin.end();
      await exited;
    }
  });

  it('a state that cannot be used still stops a stdio start: one `cannot start:` line, exit 1, once initialize is answered', async () => {
    const sandbox = makeSandbox();
    mkdirSync(sandbox.telemetryDir, { recursive: true });
    writeFileSync(path.join(sandbox.telemetryDir, 'state.tasks'), 'a file where the task ledger dir goes');
    const server = startRawServer(serverEnv(sandbox));
    await server.initialize();
    expect(await server.exited).toBe(1);
    const lines = server.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^ollama-runner-mcp: cannot start: cannot use .*state\.tasks as the task ledger's directory/);
  });

  it('`report` and `doctor` still load what they need when asked for', () => {
    const sandbox = makeSandbox();
    const record = path.join(sandbox.traceDir, 'modules.txt');
    const env = serverEnv(sandbox, { RECORD_MODULES_FILE: record });
    const report = spawnSync(process.execPath, ['--import', RECORDER, SERVER_ENTRY, 'report', '--json'], {
      env,
      encoding: 'utf8',
    });
    expect(report.status).toBe(0);
    expect(() => JSON.parse(report.stdout)).not.toThrow();
    expect(loadedModules(record).some((url) => url.endsWith('/dist/cli/report-command.js'))).toBe(true);

    const doctor = spawnSync(process.execPath, ['--import', RECORDER, SERVER_ENTRY, 'doctor'], { env, encoding: 'utf8' });
    expect(doctor.stdout + doctor.stderr).toMatch(/\S/);
    expect(loadedModules(record).some((url) => url.endsWith('/dist/cli/doctor.js'))).toBe(true);
  });
});
