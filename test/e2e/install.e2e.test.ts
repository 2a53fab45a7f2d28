/**
 * The server as a user meets it outside the repo: started in a pipe, with a telemetry dir it cannot
 * write, and installed from the packed tarball (as `npm i -g` lays it out) by a user who is not root.
 * As root, the processes run as `nobody` (permissions mean nothing to root). The installed copy,
 * its production dependencies and the fake CLI sit in a world-readable temp dir: the clone itself
 * may be where `nobody` cannot read (a 0700 temp dir). When nobody cannot run node at all (installed
 * under root's home) or reach the temp dir, the tests run as nobody skip, saying so in one line.
 */
import { spawn, type SpawnOptions } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { readDoc, relativeLinksOf } from '../helpers/markdown.js';
import { cannotReach, copyFakeOllama, copyProductionDependencies, NOBODY, USER_PATH } from '../helpers/other-user.js';
import { makeSandbox, ROOT, SERVER_ENTRY, serverEnv, waitFor } from './harness.js';

const packageJson = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
const AS_ROOT = process.getuid?.() === 0;
/** Run the server as an unprivileged user: `nobody` when the tests run as root, else the user itself. */
const USER: Pick<SpawnOptions, 'uid' | 'gid'> = AS_ROOT ? NOBODY : {};
/** As root: why nobody cannot run the bin's `node` or reach the temp dir (node under root's home, a private TMPDIR), else null. */
const NOBODY_PROBLEM = AS_ROOT ? cannotReach(NOBODY, [tmpdir()], true) : null;
if (NOBODY_PROBLEM !== null) process.stderr.write(`install tests run as nobody skipped: ${NOBODY_PROBLEM}\n`);

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** A process with piped stdio whose output the test reads as it comes. */
function start(command: string, args: string[], options: SpawnOptions) {
  const child = spawn(command, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('exit', (code) => resolve(code));
    child.on('error', reject);
  });
  const send = (message: object) => child.stdin!.write(`${JSON.stringify(message)}\n`);
  const responses = () =>
    stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { id?: number; result?: { structuredContent?: Record<string, unknown> } });
  return { child, send, exited, responses, stdout: () => stdout, stderr: () => stderr };
}

/** A temp dir the unprivileged user owns (and can reach: mkdtemp makes 0700 dirs). */
function ownedTempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  if (AS_ROOT) chownSync(dir, NOBODY.uid, NOBODY.gid);
  return dir;
}

const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);

describe('starting in a pipe, as an MCP client starts it', () => {
  it('says on stderr, in one line, that it waits for a client and where the data goes; stdout stays the protocol', async () => {
    const sandbox = makeSandbox();
    const server = start(process.execPath, [SERVER_ENTRY], { env: serverEnv(sandbox) });
    try {
      await waitFor(() => server.stderr().includes('\n'), 10_000, 'the start-up line');
      expect(server.stderr()).toBe(
        `${packageJson.name} ${packageJson.version}: waiting for an MCP client on stdin/stdout. ` +
          `Telemetry: ${sandbox.telemetryDir} (OLLAMA_MCP_TELEMETRY_DIR is set)\n`,
      );
      expect(server.stdout()).toBe('');
      server.send(INIT); // and then it serves
      await waitFor(() => server.responses().length === 1, 10_000, 'the initialize response');
      expect(server.responses()[0]).toMatchObject({ id: 1, result: { serverInfo: { name: packageJson.name } } });
    } finally {
      server.child.stdin!.end();
      expect(await server.exited).toBe(0);
      rmSync(path.dirname(sandbox.telemetryDir), { recursive: true, force: true });
    }
  });

  it.each([
    ['--help', `${packageJson.name} ${packageJson.version}: an MCP server`],
    ['--version', `${packageJson.version}\n`],
  ])('%s prints to stdout and exits 0', async (flag, expected) => {
    const result = await execa(process.execPath, [SERVER_ENTRY, flag], { reject: false, env: { PATH: process.env.PATH ?? '' } });
    expect(result.exitCode).toBe(0);
    expect(`${result.stdout}\n`).toContain(expected);
    expect(result.stderr).toBe('');
  });
});

describe('installed from a clone with `npm install -g .`, as the README says', () => {
  it("links the ollama-runner-mcp command to the clone: it runs the clone's build, with the clone's dependencies", async () => {
    const prefix = mkdtempSync(path.join(tmpdir(), 'install-link-'));
    try {
      // --prefix: where a user who may not write the global prefix installs (~/.local); a link needs no network.
      await execa('npm', ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', ROOT]);
      const bin = path.join(prefix, 'bin', packageJson.name);
      expect(realpathSync(bin)).toBe(realpathSync(SERVER_ENTRY));
      const run = (flag: string) =>
        execa(bin, [flag], { reject: false, cwd: prefix, env: { PATH: USER_PATH }, extendEnv: false });
      expect(await run('--version')).toMatchObject({ exitCode: 0, stdout: packageJson.version, stderr: '' });
      expect((await run('--help')).stdout).toContain(`${packageJson.name} ${packageJson.version}: an MCP server`);
    } finally {
      rmSync(prefix, { recursive: true, force: true });
    }
  });
});

/**
 * The packed package, as `npm i -g --prefix` lays it out: lib/node_modules/NAME with its production
 * dependencies beside it (copied from the repo's node_modules, as listed in the lock file, so that no
 * network is needed), and bin/NAME linking to dist/cli.js.
 */
const installation = {
  work: '',
  prefix: '',
  tarball: '',
  packedFiles: [] as string[],
  /** The fake CLI, where the unprivileged user can run it. */
  fake: '',
  /** A clean PATH with node on it. */
  path: USER_PATH,
};

/** Unpack the tarball into the prefix, replacing the package folder whole as an upgrade does. */
async function install(): Promise<string> {
  const packageDir = path.join(installation.prefix, 'lib', 'node_modules', packageJson.name);
  rmSync(packageDir, { recursive: true, force: true });
  mkdirSync(packageDir, { recursive: true });
  await execa('tar', ['-xzf', installation.tarball, '-C', packageDir, '--strip-components=1']);
  symlinkSync(path.join(installation.work, 'deps', 'node_modules'), path.join(packageDir, 'node_modules'));
  const bin = path.join(installation.prefix, 'bin', packageJson.name);
  rmSync(bin, { force: true });
  mkdirSync(path.dirname(bin), { recursive: true });
  symlinkSync(path.join('..', 'lib', 'node_modules', packageJson.name, 'dist', 'cli.js'), bin);
  chmodSync(bin, 0o755); // npm makes a bin's target executable when it links it
  return bin;
}

beforeAll(async () => {
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run \`npm run build\` first`);
  const work = mkdtempSync(path.join(tmpdir(), 'install-'));
  chmodSync(work, 0o755);
  installation.work = work;
  installation.prefix = path.join(work, 'prefix');
  // dist/ is fresh (npm test builds first); --ignore-scripts skips the prepack rebuild.
  const packed = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: ROOT });
  const [info] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }];
  installation.tarball = path.join(work, info.filename);
  installation.packedFiles = info.files.map((f) => f.path).sort();
  copyProductionDependencies(path.join(work, 'deps', 'node_modules'));
  installation.fake = copyFakeOllama(work);
}, 60_000);

afterAll(() => {
  if (installation.work) rmSync(installation.work, { recursive: true, force: true });
});

describe.skipIf(NOBODY_PROBLEM !== null)('a telemetry dir that cannot be used stops start-up with one line', () => {
  it.each([
    ['a dir it may not create (EACCES)', 'locked/telemetry', 'EACCES'],
    ['an existing dir it may not write (EACCES, caught by the write probe)', 'locked', 'EACCES'],
    ['a path under a file (ENOTDIR)', 'a-file/telemetry', 'ENOTDIR'],
  ])('%s: exit 2, the path and the variable named, no stack trace, nothing on stdout', async (_what, under, code) => {
    const root = ownedTempDir('telemetry-fatal-');
    onTestFinished(() => rmSync(root, { recursive: true, force: true }));
    // A root-owned dir the unprivileged user may read but not write, and a file.
    mkdirSync(path.join(root, 'locked'), { mode: 0o555 });
    if (AS_ROOT) chownSync(path.join(root, 'locked'), 0, 0);
    writeFileSync(path.join(root, 'a-file'), '');
    const dir = path.join(root, under);
    const server = start(await install(), [], {
      ...USER,
      cwd: root,
      env: { PATH: installation.path, HOME: root, OLLAMA_MCP_TELEMETRY_DIR: dir },
    });
    expect(await server.exited).toBe(2);
    const lines = server.stderr().split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^${packageJson.name}: cannot use the telemetry dir ${dir} \\(${code}: `));
    expect(lines[0]).toContain('set OLLAMA_MCP_TELEMETRY_DIR to a writable folder');
    expect(server.stderr()).not.toMatch(/^\s+at /m);
    expect(server.stdout()).toBe('');
    expect(existsSync(path.join(root, 'locked/telemetry'))).toBe(false);
    expect(existsSync(path.join(root, 'a-file'))).toBe(true);
  });
});

describe.skipIf(NOBODY_PROBLEM !== null)('installed from the packed tarball, run by a user who is not root', () => {
  let home: string;

  /** Start the installed bin as the user, with a bare environment (no telemetry setting), run one prompt, stop. */
  async function serveOneRun(bin: string, taskId: string): Promise<string> {
    const fake = ownedTempDir('install-fake-');
    const server = start(bin, [], {
      ...USER,
      cwd: home,
      env: {
        PATH: installation.path,
        HOME: home,
        OLLAMA_BIN: installation.fake,
        FAKE_OLLAMA_TRACE_DIR: fake,
        FAKE_OLLAMA_STATE_DIR: fake,
      },
    });
    try {
      await waitFor(() => server.stderr().includes('\n') || server.child.exitCode !== null, 10_000, 'the start-up line');
      server.send(INIT);
      server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      server.send({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: {
          name: 'ollama_run',
          arguments: { model: 'llama3.2', prompt: 'hello', task_id: taskId, response_format: 'detailed' },
        },
      });
      await waitFor(
        () => server.responses().some((r) => r.id === 2),
        20_000,
        `the ollama_run response (stderr: ${server.stderr()})`,
      );
      expect(server.responses().find((r) => r.id === 2)?.result?.structuredContent).toMatchObject({
        metadata: { ok: true, task_id: taskId },
      });
    } finally {
      server.child.stdin!.end();
      rmSync(fake, { recursive: true, force: true });
    }
    expect(await server.exited).toBe(0);
    return server.stderr();
  }

  beforeAll(() => {
    home = ownedTempDir('install-home-');
  });

  afterAll(() => {
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('the tarball holds the built server, the licence and the docs, and no source or tests', () => {
    const files = installation.packedFiles;
    const docs = readdirSync(path.join(ROOT, 'docs'))
      .filter((file) => file.endsWith('.md'))
      .map((file) => `docs/${file}`);
    expect(docs.length).toBeGreaterThan(10);
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json', 'telemetry/README.md', 'dist/cli.js']));
    expect(files.filter((f) => !f.startsWith('dist/'))).toEqual(
      ['LICENSE', 'README.md', 'package.json', 'telemetry/README.md', ...docs].sort(),
    );
    expect(files.filter((f) => f.startsWith('dist/') && f.endsWith('.js')).length).toBeGreaterThan(30);
  });

  it("the installed README's links lead to pages the package holds (only the development page's lead into a clone)", () => {
    const shipped = new Set(installation.packedFiles);
    const pages = installation.packedFiles.filter((file) => file.endsWith('.md') && file !== 'docs/development.md');
    const missing = pages.flatMap((page) =>
      relativeLinksOf(readDoc(page))
        .filter((link) => link.file !== '')
        .map((link) => path.posix.normalize(path.posix.join(path.posix.dirname(page), link.file)))
        .filter((target) => !shipped.has(target))
        .map((target) => `${page} -> ${target}`),
    );
    expect(missing).toEqual([]);
  });

  it('keeps its data in ~/.local/state/ollama-runner-mcp (0700, runs.jsonl 0600), and an upgrade keeps it', async () => {
    const dataDir = path.join(home, '.local', 'state', packageJson.name);
    const bin = await install();
    const stderr = await serveOneRun(bin, 'first');
    expect(stderr).toContain(
      `Telemetry: ${dataDir} (installed package: the per-user state dir in ~/.local/state, as XDG_STATE_HOME is unset)\n`,
    );
    // Nothing was written inside the package.
    expect(existsSync(path.join(installation.prefix, 'lib', 'node_modules', packageJson.name, 'telemetry', 'runs.jsonl'))).toBe(
      false,
    );
    expect(mode(dataDir)).toBe('700');
    expect(mode(path.join(home, '.local', 'state'))).toBe('700'); // created by the server, so the XDG mode
    expect(mode(path.join(dataDir, 'runs.jsonl'))).toBe('600');
    if (AS_ROOT) expect(statSync(path.join(dataDir, 'runs.jsonl')).uid).toBe(NOBODY.uid);

    await install(); // the upgrade: the package folder is deleted and unpacked again
    await serveOneRun(bin, 'second');
    const runs = readFileSync(path.join(dataDir, 'runs.jsonl'), 'utf8')
      .split('\n')
      .filter((line) => line.includes('"task_id"'))
      .map((line) => (JSON.parse(line) as { task_id: string }).task_id);
    expect(runs).toEqual(['first', 'second']);

    // `report`, run the same way, reads the same dir.
    const report = await execa(bin, ['report', '--json'], {
      ...USER,
      reject: false,
      cwd: home,
      env: { PATH: installation.path, HOME: home },
    });
    expect(report.exitCode).toBe(0);
    expect(JSON.parse(report.stdout)).toMatchObject({ total_runs: 2 });
  });

  it('XDG_STATE_HOME moves the data; OLLAMA_MCP_TELEMETRY_DIR=~/... wins over it', async () => {
    const bin = await install();
    const doctor = (env: Record<string, string>) =>
      execa(bin, ['doctor'], {
        ...USER,
        reject: false,
        cwd: home,
        env: { PATH: installation.path, HOME: home, OLLAMA_BIN: installation.fake, ...env },
      });
    const xdg = path.join(home, 'xdg-state');
    const withXdg = await doctor({ XDG_STATE_HOME: xdg });
    expect(withXdg.stdout).toContain(`telemetry: ${path.join(xdg, packageJson.name)} is writable`);
    expect(withXdg.stdout).toContain(
      'telemetry dir chosen because: installed package: the per-user state dir under $XDG_STATE_HOME',
    );
    expect(mode(path.join(xdg, packageJson.name))).toBe('700');

    const withVariable = await doctor({ XDG_STATE_HOME: xdg, OLLAMA_MCP_TELEMETRY_DIR: '~/runner-data' });
    expect(withVariable.stdout).toContain(`telemetry: ${path.join(home, 'runner-data')} is writable`);
    expect(withVariable.stdout).toContain('telemetry dir chosen because: OLLAMA_MCP_TELEMETRY_DIR is set');
  });

  it('a home it cannot write is one line naming the dir and the variable, not a stack trace', async () => {
    const bin = await install();
    const lockedHome = path.join(installation.work, 'locked-home'); // root-owned 0555 (as root); the user's own 0555 otherwise
    mkdirSync(lockedHome, { mode: 0o555 });
    const server = start(bin, [], { ...USER, cwd: installation.work, env: { PATH: installation.path, HOME: lockedHome } });
    expect(await server.exited).toBe(2);
    expect(server.stderr()).toMatch(
      new RegExp(
        `^${packageJson.name}: cannot use the telemetry dir ${lockedHome}/\\.local/state/${packageJson.name} \\(EACCES: [^\\n]*OLLAMA_MCP_TELEMETRY_DIR[^\\n]*\\n$`,
      ),
    );
    expect(server.stdout()).toBe('');
  });
});
