import { mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sweepOrphans } from '../../../../src/app/hygiene/orphan-sweep.js';
import type { ChildRecord, ProcView } from '../../../../src/policy/process-identity.js';
import { tempDir } from '../../../helpers/temp-dir.js';

const HERE = { host: 'box', boot: 'b1', pidns: 'pid:[1]' };
const identity = { self: { pid: 1, start: 1 }, place: HERE, hasProc: true };
const ARGS = ['run', 'llama3.2', '--nowordwrap'];

let dir: string;
afterEach(() => rmSync(path.dirname(dir), { recursive: true, force: true })); // the temp dir around it

function setup(records: ChildRecord[]): void {
  dir = path.join(tempDir('sweep-'), 'children');
  mkdirSync(dir);
  for (const r of records) writeFileSync(path.join(dir, `${r.pid}-${r.start}.json`), JSON.stringify(r));
}

function child(pid: number, owner: number): ChildRecord {
  return { ...HERE, pid, start: pid * 10, bin: 'ollama', args: ARGS, owner: { pid: owner, start: owner * 10 }, at: 0 };
}

/** Processes that exist (pid -> start); `ignoresTerm` ones survive SIGTERM. */
function world(alive: number[], ignoresTerm: number[] = []) {
  const running = new Set(alive);
  const signals: string[] = [];
  const proc: ProcView = {
    startOf: (pid) => (running.has(pid) ? pid * 10 : null),
    exists: (pid) => running.has(pid),
    cmdlineOf: (pid) => (running.has(pid) ? ['ollama', ...ARGS] : null),
  };
  const signalGroup = (pid: number, signal: NodeJS.Signals) => {
    signals.push(`${signal} -${pid}`);
    if (signal === 'SIGKILL' || !ignoresTerm.includes(pid)) running.delete(pid);
    return true;
  };
  return { proc, signalGroup, signals, running };
}

/** One sweep of `dir` in world `w`, with a 1 ms kill grace. */
function sweep(w: ReturnType<typeof world>, warn: (message: string) => void = () => {}) {
  return sweepOrphans({ dir, identity, proc: w.proc, killGraceMs: 1, signalGroup: w.signalGroup, warn });
}

describe('sweepOrphans', () => {
  it("ends the children of a gone server, leaves a live server's alone, and removes the records it acted on", async () => {
    setup([child(201, 100), child(202, 100), child(301, 300), child(203, 100)]);
    // Server 100 is gone; 300 is alive. 201 and 301 run; 202 has exited; 203 ignores SIGTERM.
    const w = world([300, 201, 301, 203], [203]);
    const warnings: string[] = [];
    const summary = await sweep(w, (m) => warnings.push(m));
    expect(summary).toMatchObject({ ended: 2, forgotten: 1, kept: 1 });
    expect(w.signals).toEqual(['SIGTERM -201', 'SIGTERM -203', 'SIGKILL -203']);
    expect(w.running.has(301)).toBe(true);
    expect(readdirSync(dir)).toEqual(['301-3010.json']);
    expect(warnings.join('\n')).toContain('ending orphaned model process 201 (ollama run llama3.2 --nowordwrap');
    expect(warnings.join('\n')).toContain('its server (pid 100) is gone');
    expect(warnings.join('\n')).toContain('model process 203 ignored SIGTERM for 1 ms: killed');
  });

  it('removes an unreadable record only once it is old (it may be being written)', async () => {
    setup([]);
    writeFileSync(path.join(dir, 'fresh.json'), '');
    writeFileSync(path.join(dir, 'old.json'), '{"pid":');
    const old = new Date(Date.now() - 120_000);
    utimesSync(path.join(dir, 'old.json'), old, old);
    const w = world([]);
    const summary = await sweep(w);
    expect(summary).toMatchObject({ ended: 0, forgotten: 1, kept: 1 });
    expect(readdirSync(dir)).toEqual(['fresh.json']);
    expect(w.signals).toEqual([]);
  });

  it('a missing dir is an empty sweep', async () => {
    dir = path.join(tempDir('sweep-'), 'children'); // never created
    const w = world([]);
    expect(await sweep(w)).toMatchObject({ ended: 0, forgotten: 0, kept: 0 });
  });
});
