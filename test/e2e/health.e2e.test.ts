import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { HealthReport } from '../../src/health/health-report-schema.js';
import {
  FAKE_OLLAMA,
  makeSandbox,
  readRuns,
  readTrace,
  SERVER_ENTRY,
  serverEnv,
  startTestServer,
  type Sandbox,
} from './harness.js';

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

/** Characters a terminal acts on or that reorder the text: C0 but newline, DEL, C1, bidi controls and marks. */
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('a version string from a hostile server, in doctor and ollama_health', () => {
  // `ollama --version` prints the version the server at OLLAMA_HOST sends (`ollama version is X`), and
  // the CLI's own after a warning: a remote server can put escapes in the first, a wrapper in both.
  const OSC52 = '\u001b]52;c;ZXZpbA==\u0007'; // write the clipboard
  const TITLE = '\u001b]0;owned\u0007'; // set the window title
  const RLO = '\u202e'; // show what follows right to left
  function hostileCli(sandbox: Sandbox): string {
    const bin = path.join(sandbox.root, 'ollama');
    // printf's octal escapes, byte by byte, for every byte that is not plain ASCII (or is % \ ').
    const printf = (text: string) =>
      [...Buffer.from(text, 'utf8')]
        .map((b) =>
          b >= 0x20 && b < 0x7f && !"%\\'".includes(String.fromCharCode(b))
            ? String.fromCharCode(b)
            : `\\${b.toString(8).padStart(3, '0')}`,
        )
        .join('');
    const version = `ollama version is 0.12.0${OSC52}${TITLE}\nWarning: client version is 0.11.0${RLO}exe.txt\n`;
    // Everything else is the fake CLI's (exec: the same process).
    const script = `#!/bin/sh\ncase "$1" in --version|-v) printf '${printf(version)}'; exit 0;; esac\nexec "${FAKE_OLLAMA}" "$@"\n`;
    writeFileSync(bin, script);
    chmodSync(bin, 0o755);
    return bin;
  }

  it('doctor prints the version with the escapes shown, none obeyed', async () => {
    const sandbox = makeSandbox();
    const env = serverEnv(sandbox, { OLLAMA_BIN: hostileCli(sandbox) });
    const doctor = await execa(process.execPath, [SERVER_ENTRY, 'doctor'], { env, extendEnv: false, reject: false });
    expect(doctor.stdout).toContain('(version 0.11.0\\u202eexe.txt)');
    expect(doctor.stdout).toContain('(version 0.12.0\\x1b]52;c;ZXZpbA==\\x07\\x1b]0;owned\\x07)');
    expect(doctor.stdout).not.toMatch(RAW);
  });

  it('ollama_health: the text and the report show the same escapes', async () => {
    const sandbox = makeSandbox();
    const server = await startTestServer({ OLLAMA_BIN: hostileCli(sandbox) }, sandbox);
    const result = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const text = (result.content as { type: string; text: string }[]).map((c) => c.text).join('\n');
    const report = result.structuredContent as HealthReport;
    expect(text).toContain('ollama CLI: ');
    expect(text).not.toMatch(RAW);
    expect(report.cli.version).toBe('0.11.0\\u202eexe.txt');
    expect(report.server.version).toBe('0.12.0\\x1b]52;c;ZXZpbA==\\x07\\x1b]0;owned\\x07');
    expect(JSON.stringify(report)).not.toMatch(/\\u001b|\\u0007|\u202e/);
  });
});
