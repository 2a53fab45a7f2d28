// Helpers for the tests of the fake's shared server mode: a fake `ollama serve` per test, and CLI
// processes that talk to it, observed through the server's trace (serve.jsonl).
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execa, type ResultPromise } from 'execa';
import { afterEach } from 'vitest';
import { FAKE_OLLAMA, startFakeServe, type FakeServe, type ServeEvent } from '../helpers/fake-serve.js';
import { tempDir } from '../helpers/temp-dir.js';

export { FAKE_OLLAMA };
export type { FakeServe, ServeEvent };

export const BUSY_LINE = 'Error: 503 Service Unavailable: server busy, please try again.  maximum pending requests exceeded';

const started: FakeServe[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((serve) => serve.stop()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fake server with a fresh trace dir, stopped (and its dir removed) after the test. */
export async function useServe(env: Record<string, string> = {}): Promise<FakeServe> {
  const traceDir = tempDir('fake-serve-test-');
  dirs.push(traceDir);
  const serve = await startFakeServe({ env, traceDir });
  started.push(serve);
  return serve;
}

type Cli = ResultPromise<{ reject: false; stripFinalNewline: false; encoding: 'utf8' }>;

/** `fake-ollama.mjs ARGS` in shared mode against `serve`; `input` goes to stdin (else stdin is /dev/null). */
export function cli(serve: FakeServe, args: string[], options: { input?: string; env?: Record<string, string> } = {}): Cli {
  const common = {
    env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), ...serve.env, ...options.env },
    extendEnv: false,
    reject: false,
    stripFinalNewline: false,
    timeout: 15_000,
    encoding: 'utf8',
  } as const;
  if (options.input !== undefined) return execa(FAKE_OLLAMA, args, { ...common, input: options.input }) as Cli;
  return execa(FAKE_OLLAMA, args, { ...common, stdin: 'ignore' }) as Cli;
}

/** `run MODEL --nowordwrap` with the prompt on stdin. */
export function run(
  serve: FakeServe,
  model: string,
  prompt: string,
  extra: string[] = [],
  env: Record<string, string> = {},
): Cli {
  return cli(serve, ['run', model, '--nowordwrap', ...extra], { input: prompt, env });
}

/** When the process first wrote to stdout (epoch ms), or null if it never did. */
export function firstStdoutAt(sub: Cli): Promise<number | null> {
  return new Promise((resolve) => {
    sub.stdout?.once('data', () => resolve(Date.now()));
    void sub.then(() => resolve(null));
  });
}

export async function waitFor(check: () => boolean, what: string, timeoutMs = 8000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`waitFor: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}

/** Wait until the trace holds an event matching `match`; returns it. */
export async function waitForEvent(serve: FakeServe, match: (e: ServeEvent) => boolean, what: string): Promise<ServeEvent> {
  await waitFor(() => serve.events().some(match), what);
  return serve.events().find(match)!;
}

/** The request id the server gave the CLI process `pid` (its `received` event). */
export async function requestOf(serve: FakeServe, pid: number | undefined): Promise<string> {
  const received = await waitForEvent(serve, (e) => e.event === 'received' && e.client_pid === pid, `request of pid ${pid}`);
  return received.id!;
}

/** Wait until the request of the CLI process `pid` reaches `event` (`request_start`, `queued`, `attached`...); returns that event. */
export async function untilRequest(
  serve: FakeServe,
  pid: number | undefined,
  event: string,
  what: string,
): Promise<ServeEvent & { readonly id: string }> {
  const id = await requestOf(serve, pid);
  return { ...(await waitForEvent(serve, (e) => e.event === event && e.id === id, what)), id };
}

/** The position of the first event matching `event` (and `id` or `model` when given) in the trace; -1 if none. */
export function at(events: ServeEvent[], event: string, where: { id?: string; model?: string } = {}): number {
  return events.findIndex(
    (e) =>
      e.event === event &&
      (where.id === undefined || e.id === where.id) &&
      (where.model === undefined || e.model === where.model),
  );
}

/** The events of one kind, as `event:model` strings, for order assertions. */
export function steps(events: ServeEvent[], kinds: string[]): string[] {
  return events.filter((e) => kinds.includes(e.event)).map((e) => `${e.event}:${e.model ?? ''}`);
}

/** The `Error: ...` text at the end of stderr: it follows the spinner's last escape (or starts stderr). */
export function errorText(stderr: string): string {
  const m = /(?:^|\x1b\[\?25h)(Error: [^\x1b]*)$/.exec(stderr);
  return m?.[1] === undefined ? '' : m[1].replace(/\n$/, '');
}
