/**
 * Answer files never take the room the ledger needs. A file that would leave the disk less than the
 * reserve (64 MiB) is not written: the reply says `answer_not_saved`, and the next call is still
 * counted. A write that fails anyway (someone else filled the disk meanwhile) leaves no partial file.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statfsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AnswerFiles } from '../../src/app/reply/answer-files.js';
import { fitReply } from '../../src/app/reply/reply-fit.js';
import { startServer, type RunningServer } from '../e2e/harness.js';
import { fillDiskLeaving, isMounted, mountTmpfs, sandboxAt, type Tmpfs } from './fault-env.js';

const probe = mountTmpfs('64k');
if (!isMounted(probe)) console.warn(probe.skip);
else probe.unmount();
const canMount = isMounted(probe);

const MiB = 1024 * 1024;
const FAIL = { model: 'llama3.2', prompt: 'broken @fake:exit=1' };
const answer = (bytes: number) => ({ model: 'llama3.2', prompt: `big @fake:flood_bytes=${bytes}` });

describe.skipIf(!canMount)('a disk filling up with answers (an 80 MiB tmpfs)', () => {
  let fs: Tmpfs;
  let server: RunningServer | undefined;
  beforeAll(() => {
    const mounted = mountTmpfs('80m');
    if (!isMounted(mounted)) throw new Error(mounted.skip);
    fs = mounted;
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    for (const name of readdirSync(fs.dir).filter((n) => n.startsWith('filler'))) execFileSync('rm', [path.join(fs.dir, name)]);
  });
  afterAll(() => fs?.unmount());
  const free = () => statfsSync(fs.dir).bavail * statfsSync(fs.dir).bsize;

  it('an answer that would eat into the 64 MiB reserve is not saved; one that fits is', async () => {
    const sandbox = sandboxAt(path.join(fs.dir, 'reserve'));
    server = await startServer(sandbox, { OLLAMA_MCP_MAX_OUTPUT_BYTES: '8000000' });
    fillDiskLeaving(fs.dir, 66 * MiB);
    const fits = await server.run(answer(1_000_000));
    expect(fits.metadata.output_file).not.toBeNull();
    expect(fits.metadata.warnings).toEqual([]);

    const tooBig = await server.run(answer(3_000_000));
    expect(tooBig.status).toBe('ok');
    expect(tooBig.metadata.output_file).toBeNull();
    expect(tooBig.metadata.warnings).toEqual([
      {
        kind: 'answer_not_saved',
        message: expect.stringMatching(
          /only \d+\.\d MiB free on the disk, and 64\.0 MiB are kept for the retry ledger and runs\.jsonl/,
        ),
      },
    ]);
    expect(tooBig.text).toMatch(/WARNING \(answer_not_saved\)/);
    expect(readdirSync(path.join(sandbox.telemetryDir, 'answers'))).toEqual([path.basename(fits.metadata.output_file!.path)]);
  });

  it('a nearly full disk: no partial answer file takes the last bytes, and the next call is still counted', async () => {
    const sandbox = sandboxAt(path.join(fs.dir, 'full'));
    server = await startServer(sandbox, { OLLAMA_MCP_MAX_OUTPUT_BYTES: '8000000' });
    const first = await server.run({ ...FAIL, task_id: 'disk-task', max_retries: 3 });
    expect(first.metadata.retry_count).toBe(0);
    fillDiskLeaving(fs.dir, MiB);
    const before = free();

    const big = await server.run(answer(3_000_000));
    expect(big.metadata.warnings.map((w) => w.kind)).toEqual(['answer_not_saved']);
    expect(readdirSync(path.join(sandbox.telemetryDir, 'answers'))).toEqual([]);
    expect(free()).toBeGreaterThan(before - 256 * 1024); // the line in runs.jsonl, not megabytes of a partial answer

    const second = await server.run({ ...FAIL, task_id: 'disk-task', max_retries: 3 });
    expect(second.metadata.warnings).toEqual([]);
    expect(second.metadata.retry_count).toBe(1);
    const status = await server.client.callTool({ name: 'ollama_task_status', arguments: { task_id: 'disk-task' } });
    expect(status.structuredContent).toMatchObject({ known: true, failures: 2 });
  });

  it('a write that fails midway (the disk filled by someone else after the check) leaves no partial file', async () => {
    const dir = path.join(fs.dir, 'midway', 'answers');
    fillDiskLeaving(fs.dir, MiB);
    // A free-space reading from before the disk filled: the check passes, the write fails.
    const files = new AnswerFiles({ dir, freeBytes: () => Promise.resolve(1024 * MiB) });
    const reply = await fitReply(
      { runId: 'midway', answer: 'w'.repeat(7 * MiB), thinking: '', includeThinking: false, share: 1 },
      files,
    );
    expect(reply.warnings).toEqual([{ kind: 'answer_not_saved', message: expect.stringMatching(/ENOSPC/) }]);
    expect(readdirSync(dir)).toEqual([]);
  });
});
