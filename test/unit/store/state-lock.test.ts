import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readStart, selfIdentity } from '../../../src/store/processes/proc-reader.js';
import { StateLock } from '../../../src/store/state/state-lock.js';
import { StateStore } from '../../../src/store/state/state-store.js';
import { isStateStoreError } from '../../../src/store/state/state-store-error.js';
import { tempDir } from '../../helpers/temp-dir.js';

const HOUR = 3_600_000;

/** The identity of a process that has exited: what a crashed server leaves in its lock. */
async function deadHolder(): Promise<{ pid: number; start: number | null }> {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  await once(child, 'spawn');
  const pid = child.pid!;
  const start = readStart(pid);
  child.kill('SIGKILL');
  await once(child, 'exit');
  return { pid, start };
}

let dir: string;
let file: string;
let warnings: string[];
beforeEach(() => {
  dir = tempDir('state-lock-');
  file = path.join(dir, 'state.json');
  warnings = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const open = (staleLockMs?: number) =>
  new StateStore(file, { onWarning: (m) => warnings.push(m), ...(staleLockMs ? { staleLockMs } : {}) });

/** A lock file as a server writes it, naming `holder`, dated `mtimeMs`. */
function leaveLock(holder: { pid: number; start: number | null }, mtimeMs: number): string {
  const lock = `${file}.lock`;
  writeFileSync(lock, JSON.stringify({ ...holder, ...selfIdentity().place, at: Date.now() - HOUR, token: 'crashed' }));
  utimesSync(lock, mtimeMs / 1000, mtimeMs / 1000);
  return lock;
}

describe('the state lock, judged by who holds it', () => {
  it('a lock left by a crashed server and dated in the future (the clock stepped back) is taken over at once', async () => {
    const dead = await deadHolder();
    const lock = leaveLock(dead, Date.now() + HOUR);
    const store = open();
    const started = performance.now();
    await store.transact(['t'], (s) => {
      s.tasks.t = {
        attempts: 1,
        failures: 1,
        totalFailures: 1,
        lastStatus: 'crashed',
        lastRunId: 'r',
        lastModel: 'm',
        escalated: false,
        escalationReason: null,
        firstSeenAt: 1,
        updatedAt: 1,
        recent: [],
      };
    });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect((await open().snapshot(['t'])).tasks.t?.failures).toBe(1);
    expect(existsSync(lock)).toBe(false);
    // stderr says the truth: the holder is gone, not "held by a live process".
    expect(warnings.join('\n')).toContain(`pid ${dead.pid}`);
    expect(warnings.join('\n')).toMatch(/gone/);
    expect(warnings.join('\n')).not.toMatch(/live process/);
  }, 30_000);

  it('a lock of a live process is waited for, then taken over once it has not changed for the stale time, whatever its mtime says', async () => {
    const lock = leaveLock({ pid: process.pid, start: selfIdentity().self.start }, Date.now() + HOUR);
    const store = open(1_000);
    const started = performance.now();
    await store.transact([], () => undefined);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(waited).toBeLessThan(5_000);
    expect(existsSync(lock)).toBe(false);
    expect(warnings.join('\n')).toContain(`pid ${process.pid}`);
  }, 30_000);
});

describe('StateLock', () => {
  const lockOf = (staleMs = 200, warn: (m: string) => void = (m) => warnings.push(m)) =>
    new StateLock(`${file}.lock`, { guards: file, staleMs, maxWaitMs: staleMs + 5_000, warn });

  it('writes its holder into the lock (pid, start time, host) and removes it on release', async () => {
    const release = await lockOf().acquire();
    const holder = JSON.parse(readFileSync(`${file}.lock`, 'utf8'));
    expect(holder).toMatchObject({ pid: process.pid, start: selfIdentity().self.start, host: selfIdentity().place.host });
    await release();
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(warnings).toEqual([]);
  });

  it('a lock it cannot judge (not a holder it writes, or from another host) is taken over once unchanged for the stale time', async () => {
    writeFileSync(`${file}.lock`, '');
    let started = performance.now();
    await (
      await lockOf().acquire()
    )();
    expect(performance.now() - started).toBeGreaterThanOrEqual(180);
    expect(warnings.at(-1)).toMatch(/held by a process this server cannot name .*unchanged for over 200 ms: taken over/);

    leaveLock({ pid: 1, start: 1 }, Date.now());
    const elsewhere = { ...JSON.parse(readFileSync(`${file}.lock`, 'utf8')), host: 'other-box' };
    writeFileSync(`${file}.lock`, JSON.stringify(elsewhere));
    started = performance.now();
    await (
      await lockOf().acquire()
    )();
    expect(performance.now() - started).toBeGreaterThanOrEqual(180);
    expect(warnings.at(-1)).toContain(
      'held by pid 1 on "other-box" (cannot be checked from here), unchanged for over 200 ms: taken over',
    );
  });

  it('a holder whose lock was taken over says so when it releases', async () => {
    const first = await lockOf(100).acquire();
    const second = await lockOf(100).acquire(); // the same lock for 100 ms: taken over
    await first();
    expect(warnings.at(-1)).toBe(
      `the state lock ${file}.lock was taken over by pid ${process.pid} while this server held it: an update may have been lost`,
    );
    expect(existsSync(`${file}.lock`)).toBe(true);
    await second();
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('an error that waiting cannot cure fails at once, as a StateStoreError of the lock step', async () => {
    writeFileSync(path.join(dir, 'not-a-dir'), '');
    const lock = new StateLock(path.join(dir, 'not-a-dir', 'state.json.lock'), {
      guards: file,
      staleMs: 10_000,
      maxWaitMs: 15_000,
      warn: () => {},
    });
    const started = performance.now();
    const error = await lock.acquire().catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(isStateStoreError(error) && error.step).toBe('lock');
    expect((error as Error).message).toMatch(/^cannot lock .*state\.json: ENOTDIR/);
  });

  it('creates the lock with its holder already in it, and leaves no temp file behind', async () => {
    const release = await lockOf().acquire();
    expect(parseHolderOf(`${file}.lock`)).toMatchObject({ pid: process.pid });
    const waiting = lockOf(60_000).acquire(); // waits: the lock is held
    await release();
    await (
      await waiting
    )();
    expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('an empty lock written seconds ago (its writer was killed before writing its holder) is taken over at once', async () => {
    writeFileSync(`${file}.lock`, '');
    const written = (Date.now() - 5_000) / 1000;
    utimesSync(`${file}.lock`, written, written);
    // Waiting at most 1 s for a lock that goes stale after 60 s: only judging the empty file can free it.
    const lock = new StateLock(`${file}.lock`, {
      guards: file,
      staleMs: 60_000,
      maxWaitMs: 1_000,
      warn: (m) => warnings.push(m),
    });
    await (
      await lock.acquire()
    )();
    expect(warnings).toEqual([
      `the state lock ${file}.lock was empty (written 5 s ago: a server was killed while taking it): taken over`,
    ]);
  });

  it('an empty lock written this instant is waited for: its writer may be about to write its holder', async () => {
    writeFileSync(`${file}.lock`, '');
    const lock = new StateLock(`${file}.lock`, { guards: file, staleMs: 60_000, maxWaitMs: 300, warn: (m) => warnings.push(m) });
    const error = await lock.acquire().catch((e: unknown) => e);
    expect(isStateStoreError(error) && error.step).toBe('lock');
    expect(warnings).toEqual([]);
  });
});

function parseHolderOf(lock: string): unknown {
  return JSON.parse(readFileSync(lock, 'utf8'));
}
