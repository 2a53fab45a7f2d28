// Runs test/fixtures/fake-ollama.mjs alone (per-process mode) for its own tests, and reads what it
// printed the way a terminal would show it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

import { tempDir } from '../helpers/temp-dir.js';

export const FAKE = fileURLToPath(new URL('../fixtures/fake-ollama.mjs', import.meta.url));

export const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;
export const strip = (s: string): string => s.replace(ANSI, '');
export const FRAME = /\x1b\[\?2026h\x1b\[\?25l\x1b\[1G[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] \x1b\[K\x1b\[\?25h\x1b\[\?2026l/g;
export const CLEAR = '\x1b[?25l\x1b[2K\x1b[1G\x1b[?25h';
export const CLOUD_MSG = 'You need to be signed in to Ollama to run Cloud models.\n';
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A temp dir for one fake process's files, removed when the test file ends. */
export function tmpDir(): string {
  return tempDir('fake-ollama-test-');
}

export interface FakeOptions {
  /** text written to stdin, then stdin is closed; without it stdin is 'ignore' unless openStdin */
  input?: string;
  /** leave stdin as an open pipe nobody closes */
  openStdin?: boolean;
  env?: Record<string, string>;
}

/** Spawn the fake with a clean environment (no inherited FAKE_OLLAMA_*). */
export function spawnFake(args: string[], opts: FakeOptions = {}) {
  const env = { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), ...opts.env };
  const common = { env, extendEnv: false, reject: false, stripFinalNewline: false, timeout: 12_000 } as const;
  if (opts.input !== undefined) return execa(FAKE, args, { ...common, input: opts.input });
  return execa(FAKE, args, { ...common, stdin: opts.openStdin ? 'pipe' : 'ignore' });
}

export async function run(args: string[], opts: FakeOptions = {}) {
  const r = await spawnFake(args, opts);
  return { ...r, stdout: String(r.stdout), stderr: String(r.stderr) };
}

export interface TraceLine {
  event: string;
  pid: number;
  t: number;
  argv?: string[];
  model?: string | null;
  prompt?: string | null;
  code?: number | null;
  signal?: string | null;
}

export function readTrace(dir: string): TraceLine[] {
  const file = path.join(dir, 'trace.jsonl');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as TraceLine);
}

export async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error('waitFor: timed out');
    await sleep(20);
  }
}

/**
 * Replays output on a tiny terminal: ESC[nD moves left, ESC[nG moves to column n, ESC[A moves up,
 * ESC[K clears to the end of the line, ESC[2K clears the line; other escapes are ignored.
 */
export function renderTerminal(s: string): string[] {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  for (const m of s.matchAll(/\x1b\[([?0-9;]*)([A-Za-z])|\n|[\s\S]/gu)) {
    const line = lines[row] ?? [];
    const param = m[1] ?? '';
    if (m[0] === '\n') {
      row++;
      if (lines.length <= row) lines.push([]);
      col = 0;
    } else if (m[2] === 'D') {
      col = Math.max(0, col - Number(param || '1'));
    } else if (m[2] === 'G') {
      col = Math.max(0, Number(param || '1') - 1);
    } else if (m[2] === 'A') {
      row = Math.max(0, row - Number(param || '1'));
    } else if (m[2] === 'K') {
      if (param === '2') line.length = 0;
      else line.length = Math.min(line.length, col);
    } else if (m[2] === undefined) {
      for (let i = line.length; i < col; i++) line[i] = ' ';
      line[col] = m[0];
      col++;
    }
  }
  return lines.map((l) => l.join(''));
}

/** What a terminal would show for stderr (spinner frames drawn and cleared). */
export const screen = (stderr: string): string[] => renderTerminal(stderr);

export function errorLines(stderr: string): string[] {
  return screen(stderr).filter((l) => l.includes('Error:'));
}

/** The last non-empty line a terminal would show for stderr. */
export function lastErrLine(stderr: string): string {
  const lines = screen(stderr).filter((l) => l.trim() !== '');
  return lines[lines.length - 1] ?? '';
}

export const NO_WRAP = ['--nowordwrap'];
