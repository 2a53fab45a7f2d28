import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { beforeEach, describe, expect, it } from 'vitest';
import { DirLock } from '../../../src/store/dir-lock.js';
import { StateStore } from '../../../src/store/state-store.js';

const RUNS = path.resolve(__dirname, '../../fixtures/state-runs.mjs');
const PROPER_LOCKFILE = createRequire(import.meta.url).resolve('proper-lockfile');

describe('StateStore across processes', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'state-store-mp-'));
    file = path.join(dir, 'state.json');
  });

  it('4 processes x 200 runs: every task, the shared task and the circuit count land exactly', async () => {
    expect(existsSync(path.resolve(__dirname, '../../../dist/store/state-store.js')), 'run `npm run build` first').toBe(true);
    const processes = 4;
    const runs = 200;
    const results = await Promise.all(
      Array.from({ length: processes }, (_, worker) =>
        execa('node', [RUNS, file, String(runs), 'shared', String(worker)], { reject: false }),
      ),
    );
    for (const result of results)
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: '' });

    const state = await new StateStore(file).snapshot('all');
    expect(state.tasks.shared).toMatchObject({ attempts: processes * runs, failures: processes * runs });
    expect(state.breakers['m:latest']).toMatchObject({ consecutiveFailures: processes * runs });
    for (let worker = 0; worker < processes; worker += 1) {
      for (let i = 0; i < runs; i += 1) expect(state.tasks[`w${worker}-task-${i}`]?.attempts, `w${worker}-task-${i}`).toBe(1);
    }
    expect(Object.keys(state.tasks)).toHaveLength(processes * runs + 1);
    // No temp file or lock left behind.
    expect(readdirSync(dir).filter((name) => name !== 'state.json' && name !== 'state.tasks')).toEqual([]);
    expect(readdirSync(path.join(dir, 'state.tasks')).filter((name) => !/^[0-9a-f]{2}\.json$/.test(name))).toEqual([]);
  }, 60_000);

  it('waits for a live proper-lockfile holder (an older server) and goes on once it releases', async () => {
    // The holder keeps the lock 600 ms, refreshing it as proper-lockfile does, then prints when it let go.
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import lockfile from ${JSON.stringify(PROPER_LOCKFILE)};
         const file = ${JSON.stringify(file)};
         const release = await lockfile.lock(file, { realpath: false, lockfilePath: file + '.lock', stale: 10000 });
         process.stdout.write('locked\\n');
         setTimeout(async () => { const at = Date.now(); await release(); process.stdout.write('released ' + at + '\\n'); }, 600);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    const locked = new Promise<void>((resolve, reject) => {
      holder.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('locked')) resolve();
      });
      holder.on('exit', (code) => reject(new Error(`lock holder exited before locking (${code})`)));
    });
    await locked;
    const exited = new Promise((resolve) => holder.on('exit', resolve));

    const store = new StateStore(file);
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 10);
    const committedAt = await store.transact(['t'], () => Date.now());
    clearInterval(ticker);
    await exited;
    const releasedAt = Number(/released (\d+)/.exec(out)?.[1]);
    expect(committedAt).toBeGreaterThanOrEqual(releasedAt);
    // The wait yielded to the event loop rather than blocking the server for 600 ms.
    expect(ticks).toBeGreaterThan(5);
  }, 20_000);

  it('an older server (proper-lockfile) is refused while this one holds the lock, and gets it once released', async () => {
    // The lock is a file now, proper-lockfile's a directory: each one's create must fail on the other's.
    const lockfile = (await import(PROPER_LOCKFILE)) as { lock: (file: string, options: object) => Promise<() => Promise<void>> };
    const options = { realpath: false, lockfilePath: `${file}.lock`, stale: 10_000, retries: 0 };
    const ours = new DirLock(`${file}.lock`, 10_000);
    expect(ours.tryAcquire()).toBe(true);
    const refused = await lockfile.lock(file, options).then(
      () => 'taken',
      (error: NodeJS.ErrnoException) => error.code,
    );
    expect(refused).toBe('ELOCKED');
    expect(ours.release()).toBeNull();
    const release = await lockfile.lock(file, options);
    expect(ours.tryAcquire()).toBe(false); // and the other way round
    await release();
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('takes over a lock whose holder died (mtime older than the stale time), and only then', async () => {
    const lock = `${file}.lock`;
    mkdirSync(lock);
    const store = new StateStore(file, { staleLockMs: 2_000 });
    // Fresh: a live holder. The transaction waits until the dir's mtime is 2 s old.
    const started = Date.now();
    await store.transact(['t'], () => undefined);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
    expect(existsSync(lock)).toBe(false);

    // Already stale: taken over at once.
    mkdirSync(lock);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    const again = Date.now();
    await store.transact(['t'], () => undefined);
    expect(Date.now() - again).toBeLessThan(1_000);
    expect(existsSync(lock)).toBe(false);

    // A stale lock file (this server's own format, left by a crash): taken over at once too.
    writeFileSync(lock, '');
    utimesSync(lock, old, old);
    const third = Date.now();
    await store.transact(['t'], () => undefined);
    expect(Date.now() - third).toBeLessThan(1_000);
    expect(existsSync(lock)).toBe(false);
  }, 20_000);
});
