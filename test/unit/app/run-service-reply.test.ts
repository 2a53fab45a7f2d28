import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPLY_ANSWER_BYTES } from '../../../src/app/reply/reply-budget.js';
import { RunService } from '../../../src/app/run-service.js';
import { loadConfig } from '../../../src/config/config.js';
import type { ModelProcessRequest } from '../../../src/ollama/model-process.js';
import { StateStore } from '../../../src/store/state/state-store.js';
import { RunLog } from '../../../src/telemetry/run-log.js';
import { processOutcome } from '../../helpers/process-outcome.js';
import { tempDir } from '../../helpers/temp-dir.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A RunService whose model prints `stdout`; its runs.jsonl lines, parsed. */
function service(stdout: (request: ModelProcessRequest) => string) {
  const dir = tempDir('run-service-reply-');
  dirs.push(dir);
  const config = loadConfig({ OLLAMA_MCP_TELEMETRY_DIR: dir });
  const spawn = async (request: ModelProcessRequest) => processOutcome({ stdout: stdout(request), maxOutputBytes: 1e9 });
  const store = new StateStore(path.join(dir, 'state.json'), { onWarning: () => {} });
  const runs = new RunService({ config, store, log: new RunLog(dir), spawn, env: {} });
  const lines = () =>
    readFileSync(path.join(dir, 'runs.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { runs, lines, dir };
}

describe('RunService: what the reply carries is decided before the line is written', () => {
  it('a small answer: whole, no file, the line as before', async () => {
    const s = service(() => 'fine\n\n');
    const result = await s.runs.run({ model: 'llama3.2', prompt: 'x' });
    expect(result.output).toBe('fine');
    expect(result.metadata.output_file).toBeNull();
    const [line] = s.lines();
    expect(line).not.toHaveProperty('returned_output_chars');
    expect(line).not.toHaveProperty('output_file');
  });

  it('an answer larger than the reply: cut, kept whole in a file, and the line says what the caller received', async () => {
    const answer = 'z'.repeat(REPLY_ANSWER_BYTES + 1000);
    const s = service(() => `${answer}\n\n`);
    const result = await s.runs.run({ model: 'llama3.2', prompt: 'x', taskId: 'big' });
    expect(result.output).toHaveLength(REPLY_ANSWER_BYTES);
    expect(result.metadata).toMatchObject({ status: 'ok', output_chars: answer.length });
    const file = result.metadata.output_file!;
    expect(readFileSync(file.path, 'utf8')).toBe(answer);
    expect(path.dirname(file.path)).toBe(path.join(s.dir, 'answers'));
    expect(s.lines()[0]).toMatchObject({
      output_chars: answer.length,
      returned_output_chars: REPLY_ANSWER_BYTES,
      output_file: file.path,
    });
  });

  it('a job of a batch gets its share: the same answer is cut shorter when 10 results share the reply', async () => {
    const answer = 'q'.repeat(1_000_000);
    const s = service(() => `${answer}\n\n`);
    const alone = await s.runs.run({ model: 'llama3.2', prompt: 'x' });
    const shared = await s.runs.run({ model: 'llama3.2', prompt: 'x' }, { batchId: 'b', replyShare: 10 });
    expect(alone.output).toBe(answer);
    expect(shared.output).toHaveLength(Math.floor(REPLY_ANSWER_BYTES / 10));
    expect(readdirSync(path.join(s.dir, 'answers'))).toHaveLength(2); // the first for the text content's sake
  });
});
