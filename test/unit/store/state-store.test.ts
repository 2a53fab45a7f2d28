import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { shardOf, StateStore, TASK_SHARDS } from '../../../src/store/state/state-store.js';
import { isStateStoreError } from '../../../src/store/state/state-store-error.js';
import type { TaskLedgerEntry } from '../../../src/policy/task-ledger.js';
import { tempDir } from '../../helpers/temp-dir.js';

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
    recent: [],
  };
}

describe('StateStore', () => {
  let dir: string;
  let file: string;
  let warnings: string[];
  beforeEach(() => {
    dir = tempDir('state-store-');
    file = path.join(dir, 'state.json');
    warnings = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
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

  it('a refused out-of-scope write leaves nothing behind: not on disk, not in the cache of the next transaction', async () => {
    const store = open();
    await store.transact(['t'], (s) => void (s.tasks.t = entry(1)));
    const other = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].find((id) => shardOf(id) !== shardOf('t'))!;
    await expect(
      store.transact(['t'], (s) => {
        s.tasks.t = entry(50);
        s.tasks[other] = entry(2);
      }),
    ).rejects.toThrow('outside');
    // The next transaction on the same shard sees the file as it was, and can write it.
    const seen = await store.transact(['t'], (s) => {
      const before = { t: s.tasks.t?.failures, other: s.tasks[other] };
      s.tasks.t = entry(2);
      return before;
    });
    expect(seen).toEqual({ t: 1, other: undefined });
    const reread = await open().snapshot('all');
    expect(Object.keys(reread.tasks)).toEqual(['t']);
    expect(reread.tasks.t?.failures).toBe(2);
  });

  it('a one-task transaction that throws writes nothing and leaves no half-change in the cache', async () => {
    const store = open();
    await store.transact(['t'], (s) => void (s.tasks.t = entry(1)));
    await expect(
      store.transact(['t'], (s) => {
        s.tasks.t = entry(99);
        s.breakers.m = { state: 'closed', consecutiveFailures: 3 };
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const seen = await store.transact(['t'], (s) => ({ t: s.tasks.t?.failures, m: s.breakers.m }));
    expect(seen).toEqual({ t: 1, m: undefined });
    expect((await open().snapshot(['t'])).tasks.t?.failures).toBe(1);
  });

  it('writes every shard byte for byte as JSON.stringify would, across changes, deletions and odd task ids', async () => {
    const store = open();
    const ids = ['t', '__proto__', 'constructor', '42', '7', 'quote"and\\slash', 'é-ü-😀', 'line\nbreak', 'toString'];
    for (const [i, id] of ids.entries()) await store.transact([id], (s) => void (s.tasks[id] = entry(i)));
    await store.transact(['42'], (s) => void delete s.tasks['42']);
    await store.transact(['t'], (s) => void (s.tasks.t = entry(77)));
    await store.transact(['0'], (s) => void (s.tasks['0'] = entry(5)));
    const shardDir = path.join(dir, 'state.tasks');
    const all = await open().snapshot('all');
    for (const name of readdirSync(shardDir)) {
      const text = readFileSync(path.join(shardDir, name), 'utf8');
      expect(text).toBe(JSON.stringify(JSON.parse(text)));
    }
    expect(Object.keys(all.tasks).sort()).toEqual([...ids.filter((id) => id !== '42'), '0'].sort());
    expect(all.tasks.t?.failures).toBe(77);
    expect(all.tasks['0']?.failures).toBe(5);
    expect(all.tasks.__proto__?.failures).toBe(1);
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
    expect(existsSync(path.resolve(__dirname, '../../../dist/store/state/state-store.js')), 'run `npm run build` first').toBe(
      true,
    );
    const perProcess = 60;
    await Promise.all([0, 1, 2, 3].map(() => execa('node', [HAMMER, file, String(perProcess), 'shared-task'])));
    const state = await open().snapshot(['shared-task']);
    expect(state.tasks['shared-task']?.failures).toBe(4 * perProcess);
    expect(state.tasks['shared-task']?.attempts).toBe(4 * perProcess);
  });
});

describe('StateStore under faults', () => {
  let dir: string;
  let file: string;
  let warnings: string[];
  beforeEach(() => {
    dir = tempDir('state-store-faults-');
    file = path.join(dir, 'state.json');
    warnings = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const open = () => new StateStore(file, { onWarning: (m) => warnings.push(m) });
  const shardFile = (taskId: string) => path.join(dir, 'state.tasks', `${shardOf(taskId).toString(16).padStart(2, '0')}.json`);
  const asideOf = (target: string) =>
    readdirSync(path.dirname(target)).filter((name) => name.startsWith(`${path.basename(target)}.corrupt-`));

  it('treats an empty (0-byte) state.json as corrupt: warns what was lost and keeps it aside', async () => {
    writeFileSync(file, '');
    const store = open();
    expect(Object.keys((await store.snapshot()).breakers)).toEqual([]);
    expect(warnings.join('\n')).toMatch(/state\.json is empty \(0 bytes\): every model's circuit/);
    await store.transact([], (s) => void (s.breakers['m:latest'] = { state: 'closed', consecutiveFailures: 1 }));
    expect(asideOf(file)).toHaveLength(1);
    expect(warnings.join('\n')).toMatch(/moved it to .*state\.json\.corrupt-/);
  });

  it('treats an empty shard as corrupt: says which ledger was lost and keeps it aside', async () => {
    const shard = shardFile('t');
    mkdirSync(path.dirname(shard), { recursive: true });
    writeFileSync(shard, '');
    const store = open();
    await store.transact(['t'], (s) => void (s.tasks.t = entry(1)));
    expect(asideOf(shard)).toHaveLength(1);
    expect(warnings.join('\n')).toMatch(/is empty \(0 bytes\): the retry ledger of the tasks in this shard/);
    expect((await open().snapshot(['t'])).tasks.t?.failures).toBe(1);
  });

  it('keeps a copy of a shard before a write drops its malformed entry', async () => {
    const shard = shardFile('good');
    mkdirSync(path.dirname(shard), { recursive: true });
    const original = JSON.stringify({ tasks: { good: entry(2), bad: { attempts: 'x' } } });
    writeFileSync(shard, original);
    await open().transact(['good'], (s) => void (s.tasks.good = entry(3)));
    const copies = asideOf(shard);
    expect(copies).toHaveLength(1);
    expect(readFileSync(path.join(path.dirname(shard), copies[0]!), 'utf8')).toBe(original);
    expect(warnings.join('\n')).toMatch(/dropped 1 malformed entry: task "bad"; a copy of the file is at/);
  });

  it('a shard file holding a task of another shard (hand-edited): that task is dropped with a copy kept, the rest stays usable', async () => {
    const shard = shardFile('good');
    const stray = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].find((id) => shardOf(id) !== shardOf('good'))!;
    mkdirSync(path.dirname(shard), { recursive: true });
    const original = JSON.stringify({ tasks: { good: entry(2), [stray]: entry(4) } });
    writeFileSync(shard, original);
    const store = open();
    expect(await store.transact(['good'], (s) => s.tasks.good?.failures)).toBe(2);
    await store.transact(['good'], (s) => void (s.tasks.good = entry(3)));
    expect(warnings.join('\n')).toContain(
      `task ${JSON.stringify(stray)} (it belongs in another shard); a copy of the file is at`,
    );
    const copies = asideOf(shard);
    expect(copies).toHaveLength(1);
    expect(readFileSync(path.join(path.dirname(shard), copies[0]!), 'utf8')).toBe(original);
    expect(JSON.parse(readFileSync(shard, 'utf8')).tasks).toEqual({ good: entry(3) });
  });

  it('keeps that copy too when the shard was first read without the lock (then from the cache)', async () => {
    const shard = shardFile('good');
    mkdirSync(path.dirname(shard), { recursive: true });
    const original = JSON.stringify({ tasks: { good: entry(2), bad: { attempts: 'x' } } });
    writeFileSync(shard, original);
    const store = open();
    await store.snapshot(['good']);
    expect(asideOf(shard)).toHaveLength(0);
    await store.transact(['good'], (s) => void (s.tasks.good = entry(3)));
    expect(asideOf(shard).map((name) => readFileSync(path.join(path.dirname(shard), name), 'utf8'))).toEqual([original]);
  });

  it('keeps task ids that are Object.prototype member names as ordinary tasks', async () => {
    const ids = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__'];
    const store = open();
    const before = await store.snapshot(ids);
    for (const id of ids) expect(before.tasks[id]).toBeUndefined();
    expect(before.breakers.constructor).toBeUndefined();
    await store.transact(ids, (s) => {
      for (const id of ids) s.tasks[id] = entry(ids.indexOf(id) + 1);
    });
    const after = await open().snapshot(ids);
    for (const id of ids) expect(after.tasks[id]?.failures).toBe(ids.indexOf(id) + 1);
    expect(Object.keys(after.tasks).sort()).toEqual([...ids].sort());
  });

  it('a first prune over every shard writes no empty shard files', async () => {
    const store = open();
    await store.transact(['one'], (s) => void (s.tasks.one = entry(1)));
    await store.transact('all', (s) => void (s.prunedAt = 5));
    expect(readdirSync(path.join(dir, 'state.tasks'))).toEqual([path.basename(shardFile('one'))]);
  });

  it('creates its files 0600 and the shard dir 0700', async () => {
    const store = open();
    await store.transact(['t'], (s) => {
      s.tasks.t = entry(1);
      s.breakers['m:latest'] = { state: 'closed', consecutiveFailures: 1 };
    });
    const mode = (p: string) => statSync(p).mode & 0o777;
    expect(mode(file)).toBe(0o600);
    expect(mode(shardFile('t'))).toBe(0o600);
    expect(mode(path.join(dir, 'state.tasks'))).toBe(0o700);
  });

  it('refuses to start with a one-line error naming the path when state.tasks is a file', () => {
    writeFileSync(path.join(dir, 'state.tasks'), 'not a dir');
    let error: unknown;
    try {
      open();
    } catch (e) {
      error = e;
    }
    expect(isStateStoreError(error)).toBe(true);
    expect((error as Error).message).toContain(path.join(dir, 'state.tasks'));
    expect((error as Error).message).not.toContain('\n');
  });

  it('reports an unreadable shard and a directory where a state file should be', async () => {
    const store = open();
    mkdirSync(shardFile('x'));
    mkdirSync(file);
    const problems = await store.inspect();
    expect(problems.join('\n')).toContain(`${shardFile('x')} is not a regular file`);
    expect(problems.join('\n')).toContain(`${file} is not a regular file`);
  });
});

describe('StateStore: a damaged state.json keeps what is valid', () => {
  let dir: string;
  let file: string;
  let warnings: string[];
  beforeEach(() => {
    dir = tempDir('state-store-repair-');
    file = path.join(dir, 'state.json');
    warnings = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const open = () => new StateStore(file, { onWarning: (m) => warnings.push(m) });
  const open5 = { state: 'open', consecutiveFailures: 5, openedAt: 1_000, retryAt: 61_000 } as const;
  const asides = () => readdirSync(dir).filter((name) => name.startsWith('state.json.corrupt-'));

  it('one wrong-typed top-level field (prunedAt: "x") loses no circuit: the field is repaired, a copy kept, one warning', async () => {
    const original = JSON.stringify({
      version: 1,
      breakers: { 'm:latest': open5, 'n:latest': { state: 'closed', consecutiveFailures: 2 } },
      prunedAt: 'x',
    });
    writeFileSync(file, original);
    const store = open();
    expect((await store.snapshot()).breakers['m:latest']).toEqual(open5);
    expect((await store.snapshot()).breakers['n:latest']).toEqual({ state: 'closed', consecutiveFailures: 2 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/prunedAt/);

    await store.transact([], () => undefined);
    const repaired = JSON.parse(readFileSync(file, 'utf8'));
    expect(repaired.breakers['m:latest']).toEqual(open5);
    expect(repaired.prunedAt).toBe(0);
    expect(asides().map((name) => readFileSync(path.join(dir, name), 'utf8'))).toEqual([original]);
  });

  it('a missing or mistyped version is repaired too; another version number is another format, set aside whole', async () => {
    writeFileSync(file, JSON.stringify({ breakers: { 'm:latest': open5 }, prunedAt: 0 }));
    expect((await open().snapshot()).breakers['m:latest']).toEqual(open5);
    writeFileSync(file, JSON.stringify({ version: 2, breakers: { 'm:latest': open5 } }));
    const store = open();
    expect((await store.snapshot()).breakers['m:latest']).toBeUndefined();
    await store.transact([], () => undefined);
    expect(asides()).toHaveLength(1);
    expect(warnings.join('\n')).toMatch(/version 2 is not 1/);
  });

  it('says what is wrong with a file once per version of it, not on every read', async () => {
    writeFileSync(file, '{"version":1,"breakers":');
    const store = open();
    for (let i = 0; i < 3; i += 1) await store.snapshot();
    expect(warnings).toHaveLength(1);
    writeFileSync(file, '{"version":1,"breakers":{"m":{"state":"weird"}},"prunedAt":0}');
    for (let i = 0; i < 3; i += 1) await store.snapshot();
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toContain('circuit "m"');
  });
});
