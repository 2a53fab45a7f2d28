import { spawn } from 'node:child_process';
import { existsSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StateStore } from '../../../src/store/state/state-store.js';
import { tempDir } from '../../helpers/temp-dir.js';

const RUNS = path.resolve(__dirname, '../../fixtures/state-runs.mjs');
const STATE_LOCK = path.resolve(__dirname, '../../../dist/store/state/state-lock.js');

describe('StateStore across processes', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = tempDir('state-store-mp-');
    file = path.join(dir, 'state.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('4 processes x 200 runs: every task, the shared task and the circuit count land exactly', async () => {
    expect(existsSync(path.resolve(__dirname, '../../../dist/store/state/state-store.js')), 'run `npm run build` first').toBe(
      true,
    );
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

  it('waits for a live holder in another process, without blocking the event loop, and goes on once it releases', async () => {
    // The holder keeps the lock 600 ms, then prints when it let go.
    const holder = lockHolder(
      file,
      'setTimeout(async () => { const at = Date.now(); await release(); say(`released ${at}`); }, 600);',
    );
    await holder.locked;
    const store = new StateStore(file);
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 10);
    const committedAt = await store.transact(['t'], () => Date.now());
    clearInterval(ticker);
    await holder.exited;
    const releasedAt = Number(/released (\d+)/.exec(holder.out())?.[1]);
    expect(committedAt).toBeGreaterThanOrEqual(releasedAt);
    expect(ticks).toBeGreaterThan(5);
  }, 20_000);

  it('takes over at once the lock of a holder that was SIGKILLed, even dated an hour ahead, and says who it was', async () => {
    const holder = lockHolder(file, 'setInterval(() => {}, 1000);');
    await holder.locked;
    holder.child.kill('SIGKILL');
    await holder.exited;
    const ahead = new Date(Date.now() + 3_600_000);
    utimesSync(`${file}.lock`, ahead, ahead);
    const warnings: string[] = [];
    const store = new StateStore(file, { onWarning: (m) => warnings.push(m) });
    const started = performance.now();
    await store.transact(['t'], () => undefined);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(warnings).toEqual([`the state lock ${file}.lock was held by pid ${holder.child.pid} (gone): taken over`]);
  }, 20_000);
});

/** A process holding the store's lock (from dist/) until `then` (JS, with `release` and `say`) lets go. */
function lockHolder(file: string, then: string) {
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { StateLock } from ${JSON.stringify(STATE_LOCK)};
       const say = (line) => process.stdout.write(line + '\\n');
       const file = ${JSON.stringify(file)};
       const release = await new StateLock(file + '.lock', { guards: file, staleMs: 10_000, maxWaitMs: 15_000, warn: say }).acquire();
       say('locked');
       ${then}`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const locked = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('locked')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`lock holder exited before locking (${code})`)));
  });
  return { child, locked, exited, out: () => out };
}
