import { describe, expect, it } from 'vitest';
import type { HealthReport } from '../../../src/health/health-report-schema.js';
import { renderHealth } from '../../../src/health/render-health.js';

const healthy: HealthReport = {
  ok: true,
  problems: [],
  warnings: [],
  cli: { bin: '/usr/local/bin/ollama', found: true, version: '0.12.0' },
  server: { reachable: true, version: '0.12.0', host: 'http://127.0.0.1:11434' },
  models: { installed: ['llama3.2:latest', 'qwen2.5-coder:7b'] },
  circuits: [{ model: 'llama3.2:latest', state: 'closed', consecutive_failures: 0, retry_after_seconds: null }],
  runs: {
    in_flight: 0,
    running: 0,
    queued: 0,
    concurrency: 3,
    parallel: 1,
    loaded_models: ['llama3.2:latest'],
    max_loaded_models: 1,
    memory_budget_bytes: null,
  },
  processes: null,
  telemetry: { dir: '/var/t', writable: true, runs_log: '/var/t/runs.jsonl' },
  ledger: { ok: true, problems: [], last_write_failure: null },
  config: { concurrency: 3, http_token: 'unset', ollama_host: null },
  checked_at: '2025-06-01T12:00:00.000Z',
};

describe('renderHealth', () => {
  it('healthy: a ✓ line per check, no problems section', () => {
    const text = renderHealth(healthy);
    expect(text.split('\n')[0]).toMatch(/OK/);
    expect(text).toContain('✓ ollama CLI: /usr/local/bin/ollama (version 0.12.0)');
    expect(text).toContain('✓ Ollama server: reachable at http://127.0.0.1:11434 (version 0.12.0)');
    expect(text).toContain('✓ models: 2 installed: llama3.2:latest, qwen2.5-coder:7b');
    expect(text).toContain('✓ circuits: all 1 closed');
    expect(text).toContain('✓ runs: 0 in flight, 0 running, 0 queued, concurrency 3');
    expect(text).toContain('✓ telemetry: /var/t is writable');
    expect(text).toContain('✓ ledger: the retry ledger and circuit files can be read and written');
    expect(text).toContain('http_token=unset');
    expect(text).not.toContain('✗');
    expect(text).not.toContain('Problems:');
  });

  it('says how many models fit together: as set, or the memory learned from `ollama ps`', () => {
    expect(renderHealth(healthy)).toContain('loaded: llama3.2:latest (1 fit together)');
    const learned = renderHealth({ ...healthy, runs: { ...healthy.runs, max_loaded_models: 2, memory_budget_bytes: 5.2e9 } });
    expect(learned).toContain('loaded: llama3.2:latest (models fit together in 5.2 GB, as learned from ollama ps)');
  });

  it('unhealthy: ✗ lines, then the problems with their fixes, and the open circuits', () => {
    const text = renderHealth({
      ...healthy,
      ok: false,
      problems: ['the Ollama server is not reachable at http://127.0.0.1:11434: start it with `ollama serve`'],
      warnings: ['model llama3.2:latest: circuit open'],
      server: { reachable: false, version: null, host: 'http://127.0.0.1:11434' },
      models: { installed: [] },
      circuits: [{ model: 'llama3.2:latest', state: 'open', consecutive_failures: 5, retry_after_seconds: 42 }],
      telemetry: { dir: '/var/t', writable: false, runs_log: '/var/t/runs.jsonl' },
    });
    expect(text.split('\n')[0]).toMatch(/NOT OK, 1 problem\b/);
    expect(text).toContain('✗ Ollama server: not reachable at http://127.0.0.1:11434');
    expect(text).toContain('✗ models: unknown');
    expect(text).toContain('! circuits: 1 of 1 refusing runs: llama3.2:latest open after 5 failures, retry in 42 s');
    expect(text).toContain('✗ telemetry: /var/t is not writable');
    expect(text).toMatch(/Problems:\n✗ the Ollama server is not reachable.*`ollama serve`/);
    expect(text).toMatch(/Warnings:\n! model llama3\.2:latest: circuit open/);
  });

  it('the orphan sweep and the shared slots, with their holders', () => {
    const text = renderHealth({
      ...healthy,
      processes: {
        orphan_sweep: {
          enabled: true,
          reason: null,
          interval_seconds: 60,
          last: { at: '2025-06-01T11:59:00.000Z', ended: 1, forgotten: 2, kept: 3 },
        },
        shared_slots: {
          limit: 2,
          in_use: 2,
          waiting_here: 1,
          error: null,
          slots: [
            { slot: 0, pid: 41, since: '2025-06-01T11:58:00.000Z', holder: 'this_server' },
            { slot: 1, pid: 42, since: '2025-06-01T11:58:00.000Z', holder: 'dead' },
          ],
        },
      },
    });
    expect(text).toContain(
      '✓ orphan sweep: on, at start-up and every 60 s; last sweep 2025-06-01T11:59:00.000Z: 1 orphan(s) ended, 2 stale record(s) removed',
    );
    expect(text).toContain(
      '✓ shared cap: 2 of 2 slots in use across server processes (slot 0: pid 41 (this server), slot 1: pid 42 (dead, to be reclaimed)), 1 waiting here',
    );
  });

  it('says why the orphan sweep is off where there is no /proc', () => {
    const text = renderHealth({
      ...healthy,
      processes: {
        orphan_sweep: { enabled: false, reason: 'no /proc on this platform', interval_seconds: 60, last: null },
        shared_slots: null,
      },
    });
    expect(text).toContain('! orphan sweep: off (no /proc on this platform)');
    expect(text).not.toContain('shared cap');
  });

  it('a missing CLI', () => {
    const text = renderHealth({
      ...healthy,
      ok: false,
      cli: { bin: 'ollama', found: false, version: null },
      server: { reachable: null, version: null, host: 'x' },
    });
    expect(text).toContain('✗ ollama CLI: ollama cannot be run');
    expect(text).toContain('✗ Ollama server: unknown');
  });

  it('never shows ✓ circuits when the circuit state cannot be read', () => {
    const text = renderHealth({
      ...healthy,
      ok: false,
      circuits: [],
      ledger: { ok: false, problems: ['cannot read the circuit state: EACCES: permission denied'], last_write_failure: null },
    });
    expect(text).not.toMatch(/✓ circuits/);
    expect(text).toContain('✗ circuits: unknown');
    expect(text).toContain('✗ ledger: cannot be used (cannot read the circuit state: EACCES: permission denied)');
  });

  it('says since when the ledger has not been updated', () => {
    const text = renderHealth({
      ...healthy,
      ok: false,
      ledger: { ok: false, problems: [], last_write_failure: { at: '2025-06-01T11:59:00.000Z', message: 'EROFS' } },
    });
    expect(text).toContain('✗ ledger: not updated since 2025-06-01T11:59:00.000Z');
  });

  it('shows the CLI version and the server version apart', () => {
    const text = renderHealth({
      ...healthy,
      cli: { ...healthy.cli, version: '0.13.1' },
      server: { ...healthy.server, version: '0.33.0' },
    });
    expect(text).toContain('✓ ollama CLI: /usr/local/bin/ollama (version 0.13.1)');
    expect(text).toContain('✓ Ollama server: reachable at http://127.0.0.1:11434 (version 0.33.0)');
  });

  it('shows every control or bidi character of a field escaped, and a field never forges a line', () => {
    const text = renderHealth({
      ...healthy,
      ok: false,
      problems: ['the CLI said: boom\n✓ all fine\u001b[2J'],
      telemetry: { ...healthy.telemetry, dir: '/var/\u202et' },
    });
    expect(text).toContain('✗ the CLI said: boom\\x0a✓ all fine\\x1b[2J');
    expect(text).toContain('telemetry: /var/\\u202et is writable');
    expect(text.split('\n').filter((line) => line.includes('all fine'))).toHaveLength(1);
  });
});
