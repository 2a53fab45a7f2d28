/**
 * Tests that run a process as another user (`nobody`, when the tests run as root) need that user to
 * reach what it runs. A clone in a private dir (`mktemp -d` makes it 0700) is out of its reach, and so
 * is a node installed under root's home (nvm). These helpers copy the built server where the user can
 * run it, and say why in one line when even that is not enough, so that the test skips instead of
 * failing for the machine's layout.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const SERVER_ENTRY = path.join(ROOT, 'dist/cli.js');
const FAKE_OLLAMA = path.join(ROOT, 'test/fixtures/fake-ollama.mjs');

/** Copies the fake `ollama` (its entry and the fake-ollama/ folder of its modules) into `dir`; returns the entry. */
export function copyFakeOllama(dir: string): string {
  const fake = path.join(dir, 'fake-ollama.mjs');
  copyFileSync(FAKE_OLLAMA, fake);
  chmodSync(fake, 0o755);
  cpSync(path.join(path.dirname(FAKE_OLLAMA), 'fake-ollama'), path.join(dir, 'fake-ollama'), { recursive: true });
  return fake;
}

/** The PATH the tests give processes run as another user: this node's dir, then the system's. */
export const USER_PATH = `${path.dirname(process.execPath)}:/usr/bin:/bin`;

export interface UserIds {
  readonly uid: number;
  readonly gid: number;
}

/** The account the tests use as "another local user" when they run as root. */
export const NOBODY: UserIds = { uid: 65534, gid: 65534 };

/** Why `user` cannot run `command args` (its first line of error), or null when it exits 0. */
export function cannotRun(user: UserIds, command: string, args: readonly string[]): string | null {
  const result = spawnSync(command, args, {
    ...user,
    cwd: '/',
    env: { PATH: USER_PATH },
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (result.error !== undefined) return `${command}: ${result.error.message}`;
  if (result.status === 0) return null;
  const said = `${result.stderr}`.split('\n').find((line) => line.trim() !== '') ?? `exit ${result.status ?? result.signal}`;
  return `${command} ${args.join(' ')}: ${said.trim()}`;
}

/**
 * Why `user` cannot run node or open each of `paths`, or null when it can. The node is this one
 * (process.execPath), or with `viaPath` the first on that PATH, as a bin's `#!/usr/bin/env node` finds it.
 */
export function cannotReach(user: UserIds, paths: readonly string[], viaPath = false): string | null {
  const script = "for (const p of process.argv.slice(1)) require('node:fs').accessSync(p)";
  const [command, ...node] = viaPath ? ['/usr/bin/env', 'node'] : [process.execPath];
  return cannotRun(user, command!, [...node, '-e', script, ...paths]);
}

/**
 * Copy the production dependencies (the lock file's top-level packages that are not dev-only) from
 * the repo's node_modules into `nodeModules`: what `npm install` of the package would lay out, with no
 * network.
 */
export function copyProductionDependencies(nodeModules: string): void {
  const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  for (const [where, entry] of Object.entries(lock.packages)) {
    const name = where.slice('node_modules/'.length);
    const topLevel = where.startsWith('node_modules/') && !name.includes('/node_modules/');
    if (!topLevel || entry.dev === true || !existsSync(path.join(ROOT, where))) continue;
    cpSync(path.join(ROOT, where), path.join(nodeModules, name), { recursive: true, dereference: true });
  }
}

export interface ServerForUser {
  /** dist/cli.js the user can run. */
  readonly entry: string;
  /** The fake `ollama` the user can run (OLLAMA_BIN). */
  readonly fake: string;
  /** Why the user cannot run them even so (the test should skip, saying this), or null. */
  readonly unusable: string | null;
  /** Remove the copy, if one was made. */
  dispose(): void;
}

/**
 * The built server and the fake CLI where `user` can run them: the repo's own when it can, else a
 * copy (package.json, dist/, the production dependencies, the fake) in a world-readable temp dir.
 */
export function serverFor(user: UserIds): ServerForUser {
  const runs = (entry: string, fake: string) =>
    cannotRun(user, process.execPath, [entry, '--version']) ?? cannotRun(user, fake, ['--version']);
  const nodeProblem = cannotRun(user, process.execPath, ['--version']);
  if (nodeProblem !== null)
    return {
      entry: SERVER_ENTRY,
      fake: FAKE_OLLAMA,
      unusable: `uid ${user.uid} cannot run node: ${nodeProblem}`,
      dispose: () => {},
    };
  if (runs(SERVER_ENTRY, FAKE_OLLAMA) === null)
    return { entry: SERVER_ENTRY, fake: FAKE_OLLAMA, unusable: null, dispose: () => {} };

  const dir = mkdtempSync(path.join(tmpdir(), 'server-copy-'));
  chmodSync(dir, 0o755);
  copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json')); // "type": "module", the version
  cpSync(path.join(ROOT, 'dist'), path.join(dir, 'dist'), { recursive: true });
  copyProductionDependencies(path.join(dir, 'node_modules'));
  const fake = copyFakeOllama(dir);
  const entry = path.join(dir, 'dist/cli.js');
  const problem = runs(entry, fake);
  return {
    entry,
    fake,
    unusable: problem === null ? null : `uid ${user.uid} cannot run the server, even copied to ${dir}: ${problem}`,
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
