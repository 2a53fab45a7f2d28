import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { JobFiles, type JobRecord } from '../../../src/store/job-files.js';
import { tempDir } from '../../helpers/temp-dir.js';

const HOUR = 60 * 60 * 1000;

function job(over: Partial<JobRecord> = {}): JobRecord {
  return {
    id: randomUUID(),
    kind: 'run',
    owner: 'token:abc',
    tasks: ['t1'],
    model: 'llama3.2',
    startedAt: 1_000,
    server: { pid: 100, start: 1000, host: 'here', boot: 'boot-1', pidns: 'pid:[1]' },
    createdAt: 2_000,
    finishedAt: null,
    result: null,
    task: null,
    ...over,
  };
}

describe('JobFiles', () => {
  let dir: string;
  let files: JobFiles;
  beforeEach(() => {
    dir = tempDir('job-files-');
    files = new JobFiles(dir);
  });

  it('reads back a running job and then its result whole, also from another instance (another server)', async () => {
    const running = job({ task: { ttlMs: HOUR, pollIntervalMs: 1000, toolResult: null, status: null } });
    await files.write(running);
    expect(await new JobFiles(dir).read(running.id)).toEqual(running);
    const result = { output: 'the answer', metadata: { status: 'ok', nested: [1, { a: null }] } };
    const done = { ...running, finishedAt: 9_000, result };
    await files.write(done);
    expect(await new JobFiles(dir).read(running.id)).toEqual(done);
    expect(await files.list()).toEqual([done]);
  });

  it('keeps the files private to the user running the server (dir 0700, file 0600)', async () => {
    const one = job();
    await files.write(one);
    expect(statSync(files.dir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(files.dir, `${one.id}.json`)).mode & 0o777).toBe(0o600);
  });

  it('reads a record written before tasks, model, startedAt and task were kept, with their defaults', async () => {
    const { id, kind, owner, server, createdAt, finishedAt, result } = job({ createdAt: 5_000 });
    const older = { id, kind, owner, server, createdAt, finishedAt, result };
    mkdirSync(files.dir, { recursive: true });
    writeFileSync(path.join(files.dir, `${id}.json`), JSON.stringify(older));
    expect(await files.read(id)).toEqual({ ...older, tasks: [], model: null, startedAt: 5_000, task: null });
  });

  it('knows no job by an id that is not a UUID, so an id cannot name a file outside the jobs dir', async () => {
    const outside = job();
    writeFileSync(path.join(dir, 'secret.json'), JSON.stringify(outside));
    expect(await files.read('../secret')).toBeNull();
    expect(await files.read('')).toBeNull();
    expect(await files.read(randomUUID())).toBeNull();
  });

  it('reads a corrupt, partial or foreign file as no job, and lists the others', async () => {
    const good = job();
    await files.write(good);
    const [torn, empty, foreign, wrongKind] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    writeFileSync(path.join(files.dir, `${torn}.json`), JSON.stringify(job({ id: torn })).slice(0, 40));
    writeFileSync(path.join(files.dir, `${empty}.json`), '');
    writeFileSync(path.join(files.dir, `${foreign}.json`), 'null');
    writeFileSync(path.join(files.dir, `${wrongKind}.json`), JSON.stringify({ ...job({ id: wrongKind }), kind: 'other' }));
    for (const id of [torn, empty, foreign, wrongKind]) expect(await files.read(id)).toBeNull();
    expect((await files.list()).map((j) => j.id)).toEqual([good.id]);
  });

  it('lists nothing before any job was written', async () => {
    expect(await files.list()).toEqual([]);
  });

  it('a cancel asked by one instance is seen by another, for that job only', async () => {
    const [one, two] = [job(), job()];
    await files.write(one);
    await files.write(two);
    const other = new JobFiles(dir);
    expect(await other.cancelRequested(one.id)).toBe(false);
    await files.requestCancel(one.id);
    expect(await other.cancelRequested(one.id)).toBe(true);
    expect(await other.cancelRequested(two.id)).toBe(false);
  });

  it('prune removes a job (and its cancel marker) once it ended keepMs ago, and keeps younger and running ones', async () => {
    const old = job({ finishedAt: 10_000 });
    const young = job({ finishedAt: 10_001 });
    const running = job({ createdAt: 0, finishedAt: null });
    for (const one of [old, young, running]) await files.write(one);
    await files.requestCancel(old.id);

    await files.prune(10_000 + HOUR - 1, HOUR);
    expect((await files.list()).map((j) => j.id).sort()).toEqual([old.id, young.id, running.id].sort());

    await files.prune(10_000 + HOUR, HOUR);
    expect((await files.list()).map((j) => j.id).sort()).toEqual([young.id, running.id].sort());
    expect(await files.cancelRequested(old.id)).toBe(false);
    expect(readdirSync(files.dir).filter((name) => name.startsWith(old.id))).toEqual([]);

    await files.prune(Number.MAX_SAFE_INTEGER, HOUR);
    expect((await files.list()).map((j) => j.id)).toEqual([running.id]);
  });
});
