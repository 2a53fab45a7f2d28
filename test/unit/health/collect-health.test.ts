import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { collectHealth, publicConfig, type HealthDeps } from '../../../src/health/collect-health.js';
import { healthReportSchema } from '../../../src/health/health-report-schema.js';
import { InstalledModels } from '../../../src/ollama/installed-models.js';
import { StateStore } from '../../../src/store/state/state-store.js';
import { tempDir } from '../../helpers/temp-dir.js';

const FAKE_OLLAMA = path.resolve(__dirname, '../../fixtures/fake-ollama.mjs');
const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const TOKEN = 'a-very-secret-token-1234567890';

describe('collectHealth', () => {
  let dir: string;
  let telemetryDir: string;
  let store: StateStore;
  beforeEach(() => {
    dir = tempDir('collect-health-');
    telemetryDir = path.join(dir, 'telemetry');
    store = new StateStore(path.join(telemetryDir, 'state.json'), { onWarning: () => {} });
  });

  const deps = (options: { env?: Record<string, string>; configEnv?: Record<string, string>; bin?: string } = {}): HealthDeps => {
    const config = loadConfig({
      OLLAMA_BIN: options.bin ?? FAKE_OLLAMA,
      OLLAMA_MCP_TELEMETRY_DIR: telemetryDir,
      ...options.configEnv,
    });
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env };
    return {
      config,
      store,
      runs: {
        inFlight: 2,
        queue: { running: 1, waiting: 1, limit: config.concurrency, loaded: [], capacity: 1, memoryBudget: null },
      },
      installedModels: new InstalledModels({ bin: config.ollamaBin, env, ttlMs: 30_000, clock: () => NOW }),
      clock: () => NOW,
    };
  };

  it('healthy: ok, no problems, version, installed models, queue, writable telemetry, no token shown', async () => {
    const report = await collectHealth(deps({ configEnv: { OLLAMA_MCP_HTTP_TOKEN: TOKEN, OLLAMA_HOST: '127.0.0.1:11500' } }));
    expect(healthReportSchema.parse(report)).toEqual(report);
    expect(report).toMatchObject({
      ok: true,
      problems: [],
      cli: { bin: FAKE_OLLAMA, found: true, version: '0.12.0' },
      server: { reachable: true, version: '0.12.0', host: '127.0.0.1:11500' },
      models: { installed: ['llama3.2:latest', 'qwen2.5-coder:7b', 'qwen3:8b', 'deepseek-r1:7b'] },
      circuits: [],
      runs: { in_flight: 2, running: 1, queued: 1, concurrency: 3 },
      telemetry: { dir: telemetryDir, writable: true, runs_log: path.join(telemetryDir, 'runs.jsonl') },
      checked_at: '2025-06-01T12:00:00.000Z',
    });
    expect(report.config).toMatchObject({
      http_token: 'set',
      concurrency: 3,
      timeout_ms: 120_000,
      ollama_host: '127.0.0.1:11500',
    });
    expect(JSON.stringify(report)).not.toContain(TOKEN);
    // The writability probe leaves nothing behind, and touched neither runs.jsonl nor the state.
    expect(readdirSync(telemetryDir).sort()).toEqual(['state.tasks']);
  });

  it('shares the model list with preflight: after the check, the cache answers without a new `ollama list`', async () => {
    const traceDir = tempDir('collect-health-trace-');
    const d = deps({ env: { FAKE_OLLAMA_TRACE_DIR: traceDir } });
    await collectHealth(d);
    expect(d.installedModels.cached).toMatchObject({ ok: true });
    expect(await d.installedModels.check('llama3.2')).toEqual({ kind: 'installed' });
    const starts = readFileSync(path.join(traceDir, 'trace.jsonl'), 'utf8')
      .split('\n')
      .filter((line) => line.includes('"event":"start"'))
      .map((line) => (JSON.parse(line) as { argv: string[] }).argv[0]);
    expect(starts.sort()).toEqual(['--version', 'list']);
  });

  it('server down: not ok, with a problem naming OLLAMA_HOST and `ollama serve`', async () => {
    const report = await collectHealth(deps({ env: { FAKE_OLLAMA_SERVER: 'down' } }));
    expect(report.ok).toBe(false);
    expect(report.server).toEqual({ reachable: false, version: null, host: 'http://127.0.0.1:11434' });
    expect(report.cli.version).toBe('0.12.0');
    expect(report.models.installed).toEqual([]);
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatch(
      /not reachable at http:\/\/127\.0\.0\.1:11434 \(the default: OLLAMA_HOST is unset\).*`ollama serve`/,
    );
    expect(report.warnings).toEqual([]); // the CLI's "could not connect" / "client version" lines are in the problem

    const remote = await collectHealth(
      deps({ env: { FAKE_OLLAMA_SERVER: 'down' }, configEnv: { OLLAMA_HOST: 'gpu-box:11434' } }),
    );
    expect(remote.server).toEqual({ reachable: false, version: null, host: 'gpu-box:11434' });
    expect(remote.problems[0]).toMatch(/not reachable at OLLAMA_HOST=gpu-box:11434: start it with `ollama serve`/);
  });

  it('a CLI older than its server: both versions, and a warning that names them', async () => {
    const report = await collectHealth(deps({ env: { FAKE_OLLAMA_VERSION: '0.33.0', FAKE_OLLAMA_CLIENT_VERSION: '0.13.1' } }));
    expect(report.ok).toBe(true);
    expect(report.cli.version).toBe('0.13.1');
    expect(report.server).toMatchObject({ reachable: true, version: '0.33.0' });
    expect(report.warnings).toEqual([
      expect.stringMatching(/the ollama CLI \(0\.13\.1\) and the Ollama server \(0\.33\.0\) are different versions/),
    ]);
  });

  it('a remote OLLAMA_HOST that cannot be reached is "not reachable", with the dial error', async () => {
    const report = await collectHealth(
      deps({
        // the CLI's environment carries the configured OLLAMA_HOST (server.ts and doctor.ts add it)
        env: { FAKE_OLLAMA_SERVER: 'no_route', OLLAMA_HOST: 'http://10.0.0.5:11434' },
        configEnv: { OLLAMA_HOST: 'http://10.0.0.5:11434' },
      }),
    );
    expect(report.server).toEqual({ reachable: false, version: null, host: 'http://10.0.0.5:11434' });
    expect(report.problems[0]).toContain('Head "http://10.0.0.5:11434/": dial tcp 10.0.0.5:11434: connect: no route to host');
  });

  it('CLI missing: not ok, with a problem naming OLLAMA_BIN', async () => {
    const report = await collectHealth(deps({ bin: path.join(dir, 'no-ollama') }));
    expect(report.ok).toBe(false);
    expect(report.cli.found).toBe(false);
    expect(report.server.reachable).toBeNull();
    expect(report.problems.join('\n')).toMatch(/OLLAMA_BIN/);
  });

  it('no model installed is a problem with the fix', async () => {
    const report = await collectHealth(deps({ env: { FAKE_OLLAMA_MODELS: '' } }));
    expect(report.ok).toBe(false);
    expect(report.problems[0]).toMatch(/ollama pull/);
  });

  it('lists every circuit on record; an open one with retry_after_seconds (a warning, not a problem)', async () => {
    await store.transact([], (state) => {
      state.breakers['llama3.2:latest'] = {
        state: 'open',
        consecutiveFailures: 5,
        openedAt: NOW - 18_000,
        retryAt: NOW + 42_000,
      };
      state.breakers['qwen3:8b'] = { state: 'closed', consecutiveFailures: 2 };
    });
    const report = await collectHealth(deps());
    expect(report.circuits).toEqual([
      { model: 'llama3.2:latest', state: 'open', consecutive_failures: 5, retry_after_seconds: 42 },
      { model: 'qwen3:8b', state: 'closed', consecutive_failures: 2, retry_after_seconds: null },
    ]);
    expect(report.ok).toBe(true);
    expect(report.warnings.join('\n')).toMatch(/llama3\.2:latest.*open.*42 s/);
  });

  it('a telemetry dir that cannot be written is a problem (here: a path under a regular file)', async () => {
    const file = path.join(dir, 'not-a-dir');
    writeFileSync(file, 'x');
    const report = await collectHealth(deps({ configEnv: { OLLAMA_MCP_TELEMETRY_DIR: path.join(file, 'telemetry') } }));
    expect(report.ok).toBe(false);
    expect(report.telemetry.writable).toBe(false);
    expect(report.problems.join('\n')).toMatch(/not writable.*OLLAMA_MCP_TELEMETRY_DIR/);

    const asFile = await collectHealth(deps({ configEnv: { OLLAMA_MCP_TELEMETRY_DIR: file } }));
    expect(asFile.problems.join('\n')).toMatch(/not a directory/);
  });

  it('runs.jsonl being a directory makes the telemetry dir unusable (every run line would be lost)', async () => {
    mkdirSync(path.join(telemetryDir, 'runs.jsonl'));
    const report = await collectHealth(deps());
    expect(report.ok).toBe(false);
    expect(report.telemetry.writable).toBe(false);
    expect(report.problems.join('\n')).toMatch(/runs\.jsonl: EISDIR/);
  });

  it('a shard that cannot be read, or state.json that is not a file, is a ledger problem', async () => {
    mkdirSync(path.join(telemetryDir, 'state.tasks', '0a.json'));
    mkdirSync(path.join(telemetryDir, 'state.json'));
    const report = await collectHealth(deps());
    expect(report.ok).toBe(false);
    expect(report.ledger.ok).toBe(false);
    expect(report.ledger.problems.join('\n')).toContain(
      `${path.join(telemetryDir, 'state.tasks', '0a.json')} is not a regular file`,
    );
    expect(report.problems.join('\n')).toMatch(/retry ledger and circuit state cannot be used/);
  });

  it('reports the last ledger update that could not be saved', async () => {
    const failing = {
      snapshot: (scope?: string[] | 'all') => store.snapshot(scope),
      inspect: async () => [],
      lastWriteFailure: { at: NOW - 60_000, message: 'cannot lock state.json: EROFS: read-only file system' },
    };
    const report = await collectHealth({ ...deps(), store: failing });
    expect(report.ok).toBe(false);
    expect(report.ledger.last_write_failure).toEqual({
      at: '2025-06-01T11:59:00.000Z',
      message: failing.lastWriteFailure.message,
    });
    expect(report.problems.join('\n')).toMatch(/not been updated since 2025-06-01T11:59:00\.000Z.*EROFS/);
  });

  it('a hanging CLI does not hang the check', async () => {
    const bin = path.join(dir, 'ollama');
    writeFileSync(bin, '#!/bin/sh\nexec sleep 5\n');
    chmodSync(bin, 0o755);
    const d = { ...deps({ bin }), cliTimeoutMs: 300 };
    const started = Date.now();
    const report = await collectHealth(d);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(report.ok).toBe(false);
    expect(report.server.reachable).toBeNull();
    expect(report.problems[0]).toMatch(/cannot tell whether the Ollama server is up.*did not answer/);
  });
});

describe('publicConfig', () => {
  it('never shows the HTTP token, nor the password in a host URL', () => {
    const config = loadConfig({ OLLAMA_HOST: 'https://me:pw@ollama.example:443', OLLAMA_MCP_TELEMETRY_DIR: '/tmp/t' });
    const shown = publicConfig(config);
    expect(shown.http_token).toBe('unset');
    expect(shown.ollama_host).toBe('https://***@ollama.example:443');
    expect(shown.telemetry_dir).toBe('/tmp/t');
  });
});
