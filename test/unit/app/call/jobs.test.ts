import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { JOB_KEEP_MS, Jobs, type Adopted, type JobResult } from '../../../../src/app/call/jobs.js';
import { LiveCall } from '../../../../src/app/call/live-call.js';
import type { RunResult } from '../../../../src/app/reply/run-result.js';
import type { ProcView } from '../../../../src/policy/process-identity.js';
import { JobFiles } from '../../../../src/store/job-files.js';
import type { SelfIdentity } from '../../../../src/store/processes/proc-reader.js';
import { tempDir } from '../../../helpers/temp-dir.js';

const OWNER = 'token:alice';
const PLACE = { host: 'here', boot: 'boot-1', pidns: 'pid:[1]' };
const ANSWER = { output: 'the answer', metadata: { status: 'ok' } } as unknown as RunResult;

/** Servers on one data dir (pid 100 and pid 200, both alive until `kill`), sharing a clock the test moves. */
function world() {
  const dir = tempDir('jobs-');
  const alive: Record<number, number> = { 100: 1000, 200: 2000 };
  const proc: ProcView = { startOf: (pid) => alive[pid] ?? null, exists: (pid) => pid in alive, cmdlineOf: () => null };
  let now = 1_000_000;
  const server = (pid: number, settleInterrupted = async () => 0) => {
    const identity: SelfIdentity = { self: { pid, start: alive[pid] ?? null }, place: PLACE, hasProc: true };
    const files = new JobFiles(dir);
    const prune = vi.spyOn(files, 'prune');
    const jobs = new Jobs({ files, identity, proc, clock: () => now, settleInterrupted, warn: () => {} });
    /** Resolves once the `n`th job this server ran has ended and is kept (its end prunes old jobs last). */
    const kept = async (n: number) => {
      await vi.waitFor(() => expect(prune).toHaveBeenCalledTimes(n));
      await prune.mock.results[n - 1]!.value;
    };
    return { jobs, files, kept };
  };
  return { server, kill: (pid: number) => delete alive[pid], advance: (ms: number) => void (now += ms) };
}

/** A job whose work ends when the test says. */
function work(over: Partial<Adopted> = {}) {
  let finish!: (result: JobResult) => void;
  let fail!: (error: Error) => void;
  const result = new Promise<JobResult>((resolve, reject) => ((finish = resolve), (fail = reject)));
  const job: Adopted = {
    id: randomUUID(),
    kind: 'run',
    owner: OWNER,
    tasks: ['t1'],
    model: 'llama3.2',
    startedAt: Date.now(),
    result,
    live: new LiveCall(),
    cancel: new AbortController(),
    ...over,
  };
  return { job, finish, fail };
}

describe('Jobs', () => {
  let w: ReturnType<typeof world>;
  beforeEach(() => {
    w = world();
  });

  it('a job is running until its work ends, then done with its result, on its own server and on another', async () => {
    const first = w.server(100);
    const second = w.server(200);
    const { job, finish } = work();
    await first.jobs.adopt(job);
    expect(await first.jobs.get(job.id, OWNER)).toMatchObject({ state: 'running', live: job.live });
    expect(await second.jobs.get(job.id, OWNER)).toMatchObject({
      state: 'running',
      live: null,
      record: { server: { pid: 100 } },
    });

    finish(ANSWER);
    expect(await first.jobs.wait(job.id, OWNER, 5_000)).toMatchObject({ state: 'done', result: ANSWER });
    expect(await second.jobs.get(job.id, OWNER)).toMatchObject({ state: 'done', result: ANSWER });
    expect(first.jobs.running).toBe(0);
  });

  it('stays collectable after it was collected, also from a server started later', async () => {
    const first = w.server(100);
    const { job, finish } = work();
    await first.jobs.adopt(job);
    finish(ANSWER);
    await first.jobs.wait(job.id, OWNER, 5_000);
    expect(await first.jobs.get(job.id, OWNER)).toMatchObject({ state: 'done', result: ANSWER });
    w.kill(100);
    expect(await w.server(200).jobs.get(job.id, OWNER)).toMatchObject({ state: 'done', result: ANSWER });
  });

  it('another owner sees no such job and cannot cancel it', async () => {
    const first = w.server(100);
    const { job } = work();
    await first.jobs.adopt(job);
    for (const jobs of [first.jobs, w.server(200).jobs]) {
      expect(await jobs.get(job.id, 'token:mallory')).toBeNull();
      expect(await jobs.cancel(job.id, 'token:mallory')).toBe(false);
    }
    expect(job.cancel.signal.aborted).toBe(false);
  });

  it('a job whose server died while it ran reads as lost, once the attempts of dead servers were settled', async () => {
    const settle = vi.fn(async () => 0);
    const { job } = work();
    await w.server(100).jobs.adopt(job);
    w.kill(100);
    expect(await w.server(200, settle).jobs.get(job.id, OWNER)).toMatchObject({ state: 'lost', record: { id: job.id } });
    expect(settle).toHaveBeenCalledTimes(1);
  });

  it('a job of a dead server whose result the settling wrote reads as done', async () => {
    const { job } = work();
    const first = w.server(100);
    await first.jobs.adopt(job);
    w.kill(100);
    const settle = async () => {
      const record = (await first.files.read(job.id))!;
      await first.files.write({ ...record, finishedAt: Date.now(), result: ANSWER });
      return 1;
    };
    expect(await w.server(200, settle).jobs.get(job.id, OWNER)).toMatchObject({ state: 'done', result: ANSWER });
  });

  it('a job whose work threw ends as lost, not running forever', async () => {
    const first = w.server(100);
    const { job, fail } = work();
    await first.jobs.adopt(job);
    fail(new Error('bug'));
    expect(await first.jobs.wait(job.id, OWNER, 5_000)).toMatchObject({ state: 'lost' });
  });

  it('cancel aborts a job its own server runs, and a job that ended cannot be cancelled', async () => {
    const first = w.server(100);
    const { job, finish } = work();
    await first.jobs.adopt(job);
    expect(await first.jobs.cancel(job.id, OWNER)).toBe(true);
    expect(job.cancel.signal.aborted).toBe(true);

    const { job: other, finish: finishOther } = work();
    await first.jobs.adopt(other);
    finish(ANSWER);
    finishOther(ANSWER);
    await first.jobs.wait(other.id, OWNER, 5_000);
    expect(await first.jobs.cancel(other.id, OWNER)).toBe(false);
    expect(other.cancel.signal.aborted).toBe(false);
  });

  describe('a cancel asked of another server', () => {
    beforeEach(() => void vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] }));
    afterEach(() => void vi.useRealTimers());

    it('reaches the server that runs the job, which aborts it', async () => {
      const first = w.server(100);
      const { job } = work();
      await first.jobs.adopt(job);
      expect(await w.server(200).jobs.cancel(job.id, OWNER)).toBe(true);
      expect(job.cancel.signal.aborted).toBe(false);
      await vi.advanceTimersByTimeAsync(1_000);
      await vi.waitFor(() => expect(job.cancel.signal.aborted).toBe(true));
    });
  });

  it(`a job's result is removed once it ended ${JOB_KEEP_MS} ms ago (when another job ends), not before`, async () => {
    const first = w.server(100);
    const jobs = [work(), work(), work()];
    for (const { job } of jobs) await first.jobs.adopt(job);
    const [a, b, c] = jobs.map((one) => one.job);

    jobs[0]!.finish(ANSWER);
    await first.kept(1);
    w.advance(JOB_KEEP_MS - 1);
    jobs[1]!.finish(ANSWER);
    await first.kept(2);
    expect(await first.jobs.get(a!.id, OWNER)).toMatchObject({ state: 'done' });

    w.advance(1);
    jobs[2]!.finish(ANSWER);
    await first.kept(3);
    expect(await first.jobs.get(a!.id, OWNER)).toBeNull();
    expect(await first.jobs.get(b!.id, OWNER)).toMatchObject({ state: 'done' });
    expect(await first.jobs.get(c!.id, OWNER)).toMatchObject({ state: 'done' });
  });

  it('a job reserved as an MCP task keeps its task when its work is adopted, and is listed for its owner only', async () => {
    const first = w.server(100);
    const id = randomUUID();
    const task = { ttlMs: 60_000, pollIntervalMs: 1_000, toolResult: null, status: null };
    await first.jobs.reserve(id, 'run', OWNER, task);
    await first.jobs.adopt(work({ id }).job);
    expect(await first.jobs.get(id, OWNER)).toMatchObject({ state: 'running', record: { task } });
    expect((await first.jobs.tasks(OWNER)).map((job) => job.id)).toEqual([id]);
    expect(await first.jobs.tasks('token:mallory')).toEqual([]);
  });

  it('drain resolves only once each job it waits for has its result kept, so a server may exit then', async () => {
    const first = w.server(100);
    const { job, finish } = work();
    await first.jobs.adopt(job);
    const drained = first.jobs.drain();
    finish(ANSWER);
    await drained;
    expect(await first.files.read(job.id)).toMatchObject({ result: ANSWER });
    expect((await first.files.read(job.id))?.finishedAt).not.toBeNull();
  });

  it("a batch's progress written as it ends never reopens it", async () => {
    const first = w.server(100);
    const { job, finish } = work({ kind: 'batch' });
    await first.jobs.adopt(job);
    const late = first.jobs.progress(job.id, { batch_id: 'b', results: [null] });
    finish(ANSWER);
    await Promise.all([late, first.jobs.drain()]);
    expect(await w.server(200).jobs.get(job.id, OWNER)).toMatchObject({ state: 'done', result: ANSWER });
  });

  it('a job runs and is collectable on its server when the data dir cannot keep its record', async () => {
    const first = w.server(100);
    vi.spyOn(first.files, 'write').mockRejectedValue(new Error('EROFS'));
    const { job } = work();
    await first.jobs.adopt(job);
    expect(await first.jobs.get(job.id, OWNER)).toMatchObject({ state: 'running' });
    expect(await first.jobs.cancel(job.id, OWNER)).toBe(true);
    expect(job.cancel.signal.aborted).toBe(true);
  });

  it(`a job that ended ${JOB_KEEP_MS} ms ago is no longer collectable, even before anything removed its file`, async () => {
    const first = w.server(100);
    const { job, finish } = work();
    await first.jobs.adopt(job);
    finish(ANSWER);
    await first.jobs.drain();
    w.advance(JOB_KEEP_MS);
    expect(await first.files.read(job.id)).not.toBeNull();
    expect(await first.jobs.get(job.id, OWNER)).toBeNull();
  });
});
