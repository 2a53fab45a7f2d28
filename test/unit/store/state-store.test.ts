import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { beforeEach, describe, expect, it } from 'vitest';
import { shardOf, StateStore, TASK_SHARDS } from '../../../src/store/state-store.js';
import type { TaskLedgerEntry } from '../../../src/policy/task-ledger.js';

const HAMMER = path.resolve(__dirname, '../../fixtures/state-hammer.mjs');

function entry(failures: number): TaskLedgerEntry {
  return {
    attempts: failures,
    failures,
    totalFailures: failures,
    lastStatus: 'timeout',
    lastRunId: 'r',
    lastModel: 'm',
    escalated: false,
    escalationReason: null,
    firstSeenAt: 1,
    updatedAt: 1,
  };
}

describe('StateStore', () => {
  let dir: string;
  let file: string;
  let warnings: string[];
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'state-store-'));
    file = path.join(dir, 'state.json');
    warnings = [];
  });
  const open = () => new StateStore(file, { onWarning: (m) => warnings.push(m) });

  it('starts empty when there is no file, and persists transactions for a new instance (a restart)', async () => {
    const store = open();
    expect((await store.snapshot()).tasks).toEqual({});
    await store.transact(['t', 't1', 'fresh'], (state) => {
      state.tasks.t1 = entry(2);
    });
    const restarted = open();
    expect((await restarted.snapshot(['t1'])).tasks.t1?.failures).toBe(2);
  });

  it('sees writes made by another instance (another process) even when its own cache is warm', async () => {
    const a = open();
    const b = open();
    await a.transact(['t'], (s) => void (s.tasks.t = entry(1)));
    expect((await b.snapshot(['t'])).tasks.t?.failures).toBe(1);
    await b.transact(['t'], (s) => void (s.tasks.t = entry(5)));
    expect((await a.snapshot(['t'])).tasks.t?.failures).toBe(5);
    await a.transact(['t'], (s) => void (s.tasks.t = entry((s.tasks.t?.failures ?? 0) + 1)));
    expect((await b.snapshot(['t'])).tasks.t?.failures).toBe(6);
  });

  it('sets a corrupt file aside instead of overwriting it, and carries on', async () => {
    writeFileSync(file, '{"version":1,"breakers":{"m":');
    const store = open();
    await store.transact([], (s) => void (s.breakers['m:latest'] = { state: 'closed', consecutiveFailures: 2 }));
    const aside = readdirSync(dir).filter((name) => name.startsWith('state.json.corrupt-'));
    expect(aside).toHaveLength(1);
    expect(readFileSync(path.join(dir, aside[0]!), 'utf8')).toBe('{"version":1,"breakers":{"m":');
    expect(JSON.parse(readFileSync(file, 'utf8')).breakers['m:latest'].consecutiveFailures).toBe(2);
    expect(warnings.join('\n')).toMatch(/not valid JSON.*moved it to/);
  });

  it('drops a malformed entry on its own and keeps the rest', async () => {
    const shard = path.join(dir, 'state.tasks', `${shardOf('good').toString(16).padStart(2, '0')}.json`);
    mkdirSync(path.dirname(shard), { recursive: true });
    writeFileSync(shard, JSON.stringify({ tasks: { good: entry(2), bad: { attempts: 'x' } } }));
    const state = await open().snapshot(['good']);
    expect(Object.keys(state.tasks)).toEqual(['good']);
    expect(warnings.join('\n')).toContain('task "bad"');
  });

  it('keeps every task when many share the ledger, and a transaction touches only its own shard', async () => {
    const store = open();
    const ids = Array.from({ length: 500 }, (_, i) => `task-${i}`);
    await store.transact('all', (s) => {
      for (const id of ids) s.tasks[id] = entry(1);
    });
    expect(new Set(ids.map(shardOf)).size).toBe(TASK_SHARDS);
    await store.transact(['task-7'], (s) => void (s.tasks['task-7'] = entry(9)));
    const all = await open().snapshot('all');
    expect(Object.keys(all.tasks)).toHaveLength(500);
    expect(all.tasks['task-7']?.failures).toBe(9);
    expect(all.tasks['task-8']?.failures).toBe(1);
  });

  it('refuses to write a task outside the transaction scope rather than lose it', async () => {
    const store = open();
    const other = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].find((id) => shardOf(id) !== shardOf('t'))!;
    await expect(store.transact(['t'], (s) => void (s.tasks[other] = entry(1)))).rejects.toThrow('outside');
  });

  it('a transaction that throws writes nothing', async () => {
    const store = open();
    await store.transact(['t', 't1', 'fresh'], (s) => void (s.tasks.t = entry(1)));
    await expect(
      store.transact(['t', 't1', 'fresh'], (s) => {
        s.tasks.t = entry(99);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect((await store.snapshot(['t'])).tasks.t?.failures).toBe(1);
    expect((await open().snapshot(['t'])).tasks.t?.failures).toBe(1);
  });

  it('loses no update when 4 processes hammer one task at once (exact count)', async () => {
    expect(existsSync(path.resolve(__dirname, '../../../dist/store/state-store.js')), 'run `npm run build` first').toBe(true);
    const perProcess = 60;
    await Promise.all([0, 1, 2, 3].map(() => execa('node', [HAMMER, file, String(perProcess), 'shared-task'])));
    const state = await open().snapshot(['shared-task']);
    expect(state.tasks['shared-task']?.failures).toBe(4 * perProcess);
    expect(state.tasks['shared-task']?.attempts).toBe(4 * perProcess);
  });
});
