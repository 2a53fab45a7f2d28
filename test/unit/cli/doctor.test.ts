import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { runDoctor } from '../../../src/cli/doctor.js';
import { tempDir } from '../../helpers/temp-dir.js';

const FAKE_OLLAMA = path.resolve(__dirname, '../../fixtures/fake-ollama.mjs');

async function doctor(env: Record<string, string> = {}): Promise<{ code: number; text: string }> {
  const dir = tempDir('doctor-');
  const config = loadConfig({ OLLAMA_BIN: FAKE_OLLAMA, OLLAMA_MCP_TELEMETRY_DIR: path.join(dir, 'telemetry'), ...env });
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const code = await runDoctor(config, out);
  return { code, text };
}

describe('runDoctor', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('exit 0 and a ✓ report when everything works', async () => {
    const { code, text } = await doctor();
    expect(code).toBe(0);
    expect(text).toMatch(/^Ollama runner health: OK/);
    expect(text).toContain('✓ Ollama server: reachable');
    expect(text).toContain('(version 0.12.0)');
  });

  it('exit 1 with the fix when the server is down', async () => {
    vi.stubEnv('FAKE_OLLAMA_SERVER', 'down'); // the doctor hands its own environment to the CLI
    const { code, text } = await doctor();
    expect(code).toBe(1);
    expect(text).toContain('✗ Ollama server: not reachable');
    expect(text).toContain('`ollama serve`');
  });

  it('exit 1 when the CLI is missing', async () => {
    const { code, text } = await doctor({ OLLAMA_BIN: '/nonexistent/ollama' });
    expect(code).toBe(1);
    expect(text).toContain('✗ ollama CLI: /nonexistent/ollama cannot be run');
  });

  it('shows the CLI version and the server version apart, and warns when they differ', async () => {
    vi.stubEnv('FAKE_OLLAMA_VERSION', '0.33.0');
    vi.stubEnv('FAKE_OLLAMA_CLIENT_VERSION', '0.13.1');
    const { code, text } = await doctor();
    expect(code).toBe(0);
    expect(text).toMatch(/✓ ollama CLI: \S+ \(version 0\.13\.1\)/);
    expect(text).toMatch(/✓ Ollama server: reachable at \S+ \(version 0\.33\.0\)/);
    expect(text).toMatch(/the ollama CLI \(0\.13\.1\) and the Ollama server \(0\.33\.0\) are different versions/);
  });
});
