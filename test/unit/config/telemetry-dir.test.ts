import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/config.js';
import {
  detectSourceCheckout,
  prepareTelemetryDir,
  resolveTelemetryDir,
  TelemetryDirError,
  type TelemetryDirContext,
} from '../../../src/config/telemetry-dir.js';
import { tempDir } from '../../helpers/temp-dir.js';

/** An installed package on Linux, run by a user whose home is /home/ana. */
const INSTALLED: TelemetryDirContext = {
  env: {},
  platform: 'linux',
  home: '/home/ana',
  cwd: '/work/project',
  packageRoot: '/usr/lib/node_modules/ollama-runner-mcp',
  sourceCheckout: null,
};

const resolve = (change: Partial<TelemetryDirContext>) => resolveTelemetryDir({ ...INSTALLED, ...change });
/** The chosen dir; fails the test when no dir could be chosen. */
function dirOf(change: Partial<TelemetryDirContext>): string {
  const choice = resolve(change);
  if (!('dir' in choice)) throw new Error(`no dir: ${choice.message}`);
  return choice.dir;
}

describe('resolveTelemetryDir: which dir, and why', () => {
  it('an installed package on Linux uses ~/.local/state/ollama-runner-mcp, never its own folder', () => {
    expect(resolve({})).toEqual({
      dir: '/home/ana/.local/state/ollama-runner-mcp',
      why: 'installed package: the per-user state dir in ~/.local/state, as XDG_STATE_HOME is unset',
    });
  });

  it('honours an absolute XDG_STATE_HOME and ignores a relative one (as the XDG spec says)', () => {
    expect(resolve({ env: { XDG_STATE_HOME: '/data/state' } })).toMatchObject({
      dir: '/data/state/ollama-runner-mcp',
      why: 'installed package: the per-user state dir under $XDG_STATE_HOME',
    });
    expect(resolve({ env: { XDG_STATE_HOME: 'state' } })).toMatchObject({
      dir: '/home/ana/.local/state/ollama-runner-mcp',
      why: 'installed package: the per-user state dir in ~/.local/state, as XDG_STATE_HOME is not an absolute path',
    });
    expect(dirOf({ env: { XDG_STATE_HOME: '  ' } })).toBe('/home/ana/.local/state/ollama-runner-mcp');
  });

  it('macOS: ~/Library/Application Support, whatever XDG_STATE_HOME says', () => {
    const mac = {
      platform: 'darwin' as const,
      home: '/Users/ana',
      packageRoot: '/opt/homebrew/lib/node_modules/ollama-runner-mcp',
    };
    expect(resolve(mac)).toEqual({
      dir: '/Users/ana/Library/Application Support/ollama-runner-mcp',
      why: 'installed package: the per-user state dir of macOS, in ~/Library/Application Support',
    });
    expect(dirOf({ ...mac, env: { XDG_STATE_HOME: '/Users/ana/.state' } })).toBe(
      '/Users/ana/Library/Application Support/ollama-runner-mcp',
    );
  });

  it('Windows: %LOCALAPPDATA%\\ollama-runner-mcp, else the home AppData\\Local', () => {
    const win = { platform: 'win32' as const, home: 'C:\\Users\\ana', cwd: 'C:\\work' };
    expect(resolve({ ...win, env: { LOCALAPPDATA: 'D:\\Local' } })).toMatchObject({
      dir: 'D:\\Local\\ollama-runner-mcp',
      why: 'installed package: the per-user state dir under %LOCALAPPDATA%',
    });
    expect(resolve(win)).toMatchObject({
      dir: 'C:\\Users\\ana\\AppData\\Local\\ollama-runner-mcp',
      why: 'installed package: the per-user state dir in AppData\\Local, as %LOCALAPPDATA% is unset',
    });
    expect(dirOf({ ...win, env: { OLLAMA_MCP_TELEMETRY_DIR: '~\\runner' } })).toBe('C:\\Users\\ana\\runner');
  });

  it("a source checkout keeps the repo's telemetry/", () => {
    expect(resolve({ packageRoot: '/src/ollama-runner-mcp', sourceCheckout: '/src/ollama-runner-mcp has .git' })).toEqual({
      dir: '/src/ollama-runner-mcp/telemetry',
      why: 'running from a source checkout: /src/ollama-runner-mcp has .git',
    });
  });

  it('OLLAMA_MCP_TELEMETRY_DIR wins everywhere: ~ expanded, a relative path taken from the working directory', () => {
    for (const sourceCheckout of [null, '/x has .git']) {
      expect(resolve({ sourceCheckout, env: { OLLAMA_MCP_TELEMETRY_DIR: '~/runs', XDG_STATE_HOME: '/s' } })).toEqual({
        dir: '/home/ana/runs',
        why: 'OLLAMA_MCP_TELEMETRY_DIR is set',
      });
    }
    expect(dirOf({ env: { OLLAMA_MCP_TELEMETRY_DIR: '~' } })).toBe('/home/ana');
    expect(dirOf({ env: { OLLAMA_MCP_TELEMETRY_DIR: ' /var/runner/ ' } })).toBe('/var/runner');
    expect(dirOf({ env: { OLLAMA_MCP_TELEMETRY_DIR: 'data/runs' } })).toBe('/work/project/data/runs');
  });

  it.each([
    [{ env: { OLLAMA_MCP_TELEMETRY_DIR: ' ' } }, 'set but empty'],
    [{ env: { OLLAMA_MCP_TELEMETRY_DIR: '~bob/runs' } }, 'only `~` and `~/...` are expanded'],
    [{ env: { OLLAMA_MCP_TELEMETRY_DIR: '~/runs' }, home: '' }, 'the home directory is unknown'],
    [{ home: '' }, 'set OLLAMA_MCP_TELEMETRY_DIR to a writable folder'],
  ])('%j cannot choose a dir: a problem naming OLLAMA_MCP_TELEMETRY_DIR', (change, message) => {
    expect(resolve(change)).toEqual({
      kind: 'telemetry_dir_problem',
      variable: 'OLLAMA_MCP_TELEMETRY_DIR',
      message: expect.stringContaining(message),
    });
  });

  it('loadConfig carries the choice and its reason, and turns a problem into a ConfigError', () => {
    expect(loadConfig({}, INSTALLED)).toMatchObject({
      telemetryDir: '/home/ana/.local/state/ollama-runner-mcp',
      telemetryDirReason: expect.stringContaining('per-user state dir'),
    });
    expect(() => loadConfig({ OLLAMA_MCP_TELEMETRY_DIR: '' }, INSTALLED)).toThrow(ConfigError);
  });
});

describe('detectSourceCheckout', () => {
  const fs = (files: string[]) => (file: string) => files.includes(file);

  it('.git (a clone, or a worktree whose .git is a file) marks a checkout', () => {
    expect(detectSourceCheckout('/src/p', fs(['/src/p/.git']))).toBe('/src/p has .git');
  });

  it('src/cli.ts with tsconfig.json marks a checkout without git; either alone does not', () => {
    expect(detectSourceCheckout('/src/p', fs(['/src/p/src/cli.ts', '/src/p/tsconfig.json']))).toBe(
      '/src/p has src/ and tsconfig.json',
    );
    expect(detectSourceCheckout('/src/p', fs(['/src/p/src/cli.ts']))).toBeNull();
    expect(detectSourceCheckout('/src/p', fs(['/src/p/tsconfig.json']))).toBeNull();
  });

  it('a package under node_modules is installed, whatever it contains; so is one with none of the marks', () => {
    const root = '/usr/lib/node_modules/ollama-runner-mcp';
    expect(detectSourceCheckout(root, fs([`${root}/.git`, `${root}/src/cli.ts`, `${root}/tsconfig.json`]))).toBeNull();
    expect(detectSourceCheckout('/home/ana/.npm/_npx/1a2b/node_modules/ollama-runner-mcp', () => true)).toBeNull();
    expect(detectSourceCheckout('/opt/ollama-runner-mcp', fs(['/opt/ollama-runner-mcp/dist/cli.js']))).toBeNull();
  });

  it('reads the real file system by default: this repo is a checkout', () => {
    expect(detectSourceCheckout(path.resolve(__dirname, '../../..'))).toMatch(/has (\.git|src\/ and tsconfig\.json)$/);
  });
});

describe('prepareTelemetryDir', () => {
  it('creates the dir and its missing parents with mode 0700, and leaves no probe file', async () => {
    const root = tempDir('telemetry-dir-');
    const dir = path.join(root, 'state', 'ollama-runner-mcp');
    await prepareTelemetryDir(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(root, 'state')).mode & 0o777).toBe(0o700);
    expect(() => statSync(path.join(dir, `.write-probe-${process.pid}`))).toThrow();
  });

  it('keeps the mode of a dir that exists (the user chose it)', async () => {
    const dir = tempDir('telemetry-dir-');
    chmodSync(dir, 0o750);
    await prepareTelemetryDir(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o750);
  });

  it('a path that cannot be a dir is a TelemetryDirError naming the path and the variable', async () => {
    const root = tempDir('telemetry-dir-');
    writeFileSync(path.join(root, 'file'), '');
    const dir = path.join(root, 'file', 'telemetry');
    const error = await prepareTelemetryDir(dir).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TelemetryDirError);
    expect((error as Error).message).toContain(`cannot use the telemetry dir ${dir} (ENOTDIR`);
    expect((error as Error).message).toContain('set OLLAMA_MCP_TELEMETRY_DIR to a writable folder');
    mkdirSync(path.join(root, 'ok'));
    await expect(prepareTelemetryDir(path.join(root, 'ok'))).resolves.toBeUndefined();
  });
});
