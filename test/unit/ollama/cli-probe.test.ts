import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseVersions, probeCli } from '../../../src/ollama/cli-probe.js';
import { tempDir } from '../../helpers/temp-dir.js';

const FAKE_OLLAMA = path.resolve(__dirname, '../../fixtures/fake-ollama.mjs');
const baseEnv = () => ({ PATH: process.env.PATH, HOME: process.env.HOME });

describe('parseVersions', () => {
  it('the first line is the server; the client line is the CLI itself', () => {
    expect(parseVersions('ollama version is 0.33.0\nWarning: client version is 0.13.1\n')).toEqual({
      server: '0.33.0',
      client: '0.13.1',
    });
    expect(parseVersions('ollama version is 0.12.0\n')).toEqual({ server: '0.12.0', client: '0.12.0' });
    expect(parseVersions('Warning: could not connect to a running Ollama instance\nWarning: client version is 0.9.3\n')).toEqual({
      server: null,
      client: '0.9.3',
    });
    expect(parseVersions('something else')).toEqual({ server: null, client: null });
  });
});

describe('probeCli against the fake CLI', () => {
  it('a CLI and a server of different versions: both versions, apart', async () => {
    const probe = await probeCli({
      bin: FAKE_OLLAMA,
      env: { ...baseEnv(), FAKE_OLLAMA_VERSION: '0.33.0', FAKE_OLLAMA_CLIENT_VERSION: '0.13.1' },
    });
    expect(probe).toMatchObject({ found: true, version: '0.13.1', serverVersion: '0.33.0', serverReachable: true });
  });

  it('a remote host that cannot be reached: unreachable, the raw dial error kept', async () => {
    const probe = await probeCli({
      bin: FAKE_OLLAMA,
      env: { ...baseEnv(), OLLAMA_HOST: 'http://10.0.0.5:11434', FAKE_OLLAMA_SERVER: 'no_route' },
    });
    expect(probe).toMatchObject({ found: true, serverReachable: false, serverVersion: null, errorCause: 'unreachable' });
    expect(probe.error).toBe('Head "http://10.0.0.5:11434/": dial tcp 10.0.0.5:11434: connect: no route to host');
  });

  it('finds the CLI, its version and a reachable server', async () => {
    const probe = await probeCli({ bin: FAKE_OLLAMA, env: { ...baseEnv(), FAKE_OLLAMA_VERSION: '0.16.2' } });
    expect(probe).toMatchObject({ found: true, version: '0.16.2', serverReachable: true, warnings: [], error: null });
    expect(probe.installed).toContain('llama3.2:latest');
    expect(probe.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('server down: unreachable, with the warning of `--version` and the connect error of `list`', async () => {
    const probe = await probeCli({ bin: FAKE_OLLAMA, env: { ...baseEnv(), FAKE_OLLAMA_SERVER: 'down' } });
    expect(probe).toMatchObject({
      found: true,
      version: '0.12.0',
      serverReachable: false,
      errorCause: 'unreachable',
      installed: null,
    });
    expect(probe.warnings).toContain('could not connect to a running Ollama instance');
    expect(probe.error).toMatch(/could not connect to ollama server/);
  });

  it('a missing CLI: not found, never throws', async () => {
    const probe = await probeCli({ bin: '/nonexistent/dir/ollama', env: baseEnv() });
    expect(probe).toMatchObject({ found: false, version: null, serverReachable: null, errorCause: 'cli_not_found' });
    expect(probe.error).toMatch(/not found/);
  });

  it('a CLI that hangs (and whose child keeps the pipes open) is given up on within the bound', async () => {
    const dir = tempDir('cli-probe-');
    const bin = path.join(dir, 'ollama');
    writeFileSync(bin, '#!/bin/sh\nsleep 5\n');
    chmodSync(bin, 0o755);
    const started = Date.now();
    const probe = await probeCli({ bin, env: baseEnv(), timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(probe).toMatchObject({ found: true, version: null, serverReachable: null, errorCause: 'timeout' });
    expect(probe.error).toMatch(/did not answer within 300 ms/);
  });
});
