// Any MCP caller (a prompt-injected agent, say) can put terminal escapes or bidi controls in a call's
// arguments. The server logs invalid input too, and a developer reads the log with the documented jq
// recipes (`jq -r` among them) and the report: none may print a control character into their
// terminal, nor a bidi control that reorders the line (U+202E shows `txt.exe` as `exe.txt`).
import { execFileSync } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSandbox, ROOT, SERVER_ENTRY, serverEnv, startServer, type RunningServer, type Sandbox } from './harness.js';
import { loadJq, DOC_RECIPES, systemJq, type JqRaw } from './jq-recipes.js';

const OSC52 = '\u001b]52;c;ZXZpbA==\u0007'; // write the clipboard
const TITLE = '\u001b]0;owned\u0007'; // set the window title
const CLEAR = '\u001b[2J'; // clear the screen
const NESTED = '\u001b\u001b[0m[2J'; // a single-pass strip leaves CLEAR
const RLO = '\u202e'; // what follows is shown right to left
const CSI = '\u009b'; // C1: a one-character CSI
/**
 * What a terminal could act on, or that reorders a line: every control character but the newline and
 * tab that lay out output, and the bidi controls and marks.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('escapes planted through MCP arguments, read back with jq and the report', () => {
  let sandbox: Sandbox;
  let server: RunningServer;
  let log: string;
  let jq: JqRaw;
  beforeAll(async () => {
    jq = await loadJq();
    sandbox = makeSandbox();
    server = await startServer(sandbox, { FAKE_OLLAMA_MODELS: 'fast2:7b' });
    await server.run({ model: 'fast2:7b', prompt: 'a', task_id: 'fm-1' });
    // Invalid input is refused without spawning, and logged with what could be salvaged of it.
    const refused = await server.run({ model: `${OSC52}${TITLE}${CLEAR}`, prompt: 'b', task_id: `fm${NESTED}${RLO}gpj.exe` });
    expect(refused.metadata.status).toBe('invalid_input');
    await server.run({ model: `x${NESTED}`, prompt: 'c' });
    await server.close();
    const file = path.join(sandbox.telemetryDir, 'runs.jsonl');
    // A line an earlier server wrote with the raw escapes: the recipes must cope with old logs too.
    appendFileSync(
      file,
      `${JSON.stringify({ v: 2, ts: new Date().toISOString(), model: `old${OSC52}${RLO}`, model_key: `old${TITLE}${RLO}txt.exe`, task_id: `t${CLEAR}${RLO}`, status: `crashed${NESTED}${CSI}${RLO}`, escalate: true, error: `${RLO}fdp.exe` })}\n`,
    );
    log = readFileSync(file, 'utf8');
  });
  afterAll(async () => server?.close());

  it('the server logged the invalid input with every control and bidi character shown as its escape', () => {
    const records = log
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const refused = records.filter((r) => r.status === 'invalid_input');
    expect(refused).toHaveLength(2);
    for (const r of refused) {
      for (const field of ['model', 'model_key', 'task_id'] as const) {
        expect(String(r[field] ?? ''), field).not.toMatch(CONTROL);
      }
    }
    expect(refused[0]!.model).toBe('\\x1b]52;c;ZXZpbA==\\x07\\x1b]0;owned\\x07\\x1b[2J');
    expect(refused[0]!.task_id).toBe('fm\\x1b\\x1b[0m[2J\\u202egpj.exe');
  });

  it.each(DOC_RECIPES.map((r) => [`${r.source}: ${r.program.slice(0, 70)}`, r] as const))(
    '%s prints no control character',
    async (_name, recipe) => {
      const out = await jq(log, recipe.program, recipe.flags);
      expect(out).not.toMatch(CONTROL);
      const jqBin = systemJq();
      if (jqBin !== null)
        expect(execFileSync(jqBin, [...recipe.flags, recipe.program], { input: log, encoding: 'utf8' })).not.toMatch(CONTROL);
    },
  );

  it('the text report prints none either', () => {
    const text = execFileSync(process.execPath, [SERVER_ENTRY, 'report'], {
      cwd: ROOT,
      env: serverEnv(sandbox, { COLUMNS: '120' }),
      encoding: 'utf8',
    });
    expect(text).toContain('Runs: 4');
    expect(text).not.toMatch(CONTROL);
    expect(text).toContain('old\\x1b]52;c;ZXZpbA==\\x07\\u202e'); // shown, so a reader sees what was there
  });
});
