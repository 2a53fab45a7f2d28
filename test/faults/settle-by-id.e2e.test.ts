// A server killed after recording an attempt's verdict in the ledger, before its runs.jsonl line,
// while another server on the same data dir goes on with the same task: the next server settles the
// dead one's attempt from the ledger by the attempt's own id, so it is never counted twice, however
// many attempts of the task were recorded meanwhile.
import { describe, expect, it } from 'vitest';
import { makeSandbox, readRuns, startTestServer, waitFor } from '../e2e/harness.js';
import { crashAfterVerdict } from '../helpers/crashing-server.js';

describe.skipIf(process.platform === 'win32')("settling a dead server's attempt by its id", () => {
  it('is not counted again when a live server recorded another attempt of the task meanwhile', async () => {
    const sandbox = makeSandbox();
    // A live server, started before the crash: its own start-up settles nothing of it.
    const live = await startTestServer({}, sandbox);
    await crashAfterVerdict(sandbox, 'twice');
    expect(readRuns(sandbox)).toEqual([]); // the dead server recorded the verdict (ok) but wrote no line

    // The live server records a failure of the same task: the task's last attempt is now this one.
    const failed = await live.run({ model: 'llama3.2', prompt: 'x @fake:exit=1', task_id: 'twice' });
    expect(failed.metadata).toMatchObject({ status: 'crashed', retry_count: 0 });

    // The next server settles the dead one's attempt: from the ledger, by its id, as it ended.
    const next = await startTestServer({}, sandbox);
    await waitFor(() => readRuns(sandbox).length === 2, 10_000, "the dead server's attempt to be settled");
    const settled = readRuns(sandbox).find((line) => line.run_id !== failed.metadata.run_id)!;
    expect(settled).toMatchObject({ status: 'ok', task_id: 'twice', retry_count: 0 });
    expect(settled.error).toContain('before logging it');

    // One failure for one failed attempt: the next failure is the second, not the third.
    const status = await next.client.callTool({
      name: 'ollama_task_status',
      arguments: { task_id: 'twice', response_format: 'detailed' },
    });
    expect(status.structuredContent).toMatchObject({ attempts: 2, failures: 1, total_failures: 1 });
  });
});
