import type { ChildProcess } from 'node:child_process';
import { subscribe } from 'node:diagnostics_channel';
import type { Options, ResultPromise } from 'execa';
import { loadExeca } from './load-execa.js';

type Execa = Awaited<ReturnType<typeof loadExeca>>['execa'];
/** Options of the commands this server runs: output read from the pipes as it comes, never buffered by execa. */
export type StartOptions = Options & { readonly buffer: false; readonly reject: false };
export type Subprocess = ResultPromise<StartOptions>;

/** Why no process could be started: the error's code (`EMFILE`, `EAGAIN`, `ENOENT`...) when it has one. */
export interface StartFailure {
  readonly code: string | null;
  readonly message: string;
}

type Started = { readonly subprocess: Subprocess } | { readonly failure: StartFailure };

/** The processes Node creates during the synchronous part of one `execa()` call (see startProcess). */
let spawning: ChildProcess[] | null = null;
let watching = false;

function watchSpawns(): void {
  if (watching) return;
  watching = true;
  // Published by Node for every ChildProcess it creates, before the spawn can fail.
  subscribe('child_process', (message) => spawning?.push((message as { process: ChildProcess }).process));
}

/**
 * Start `bin args` through execa, or say why it could not be started. Never throws, and no spawn
 * error can become an uncaught exception: when the process table or the descriptors are exhausted,
 * Node reports EMFILE/ENFILE as an `'error'` event, on the next tick, of a child execa has already
 * given up (it throws `subprocess.stdio is not iterable`); that event is listened to here.
 */
export async function startProcess(bin: string, args: readonly string[], options: StartOptions): Promise<Started> {
  let execa: Execa;
  try {
    ({ execa } = await loadExeca());
  } catch (error) {
    return { failure: failureOf(error) };
  }
  watchSpawns();
  const created: ChildProcess[] = [];
  spawning = created;
  let thrown: unknown;
  try {
    return { subprocess: execa(bin, args, options) };
  } catch (error) {
    thrown = error;
  } finally {
    spawning = null;
  }
  return { failure: failureOf((await lostSpawnError(created)) ?? thrown) };
}

/** The `'error'` the children emit within a tick (listened to before it is emitted), or null. */
function lostSpawnError(children: readonly ChildProcess[]): Promise<Error | null> {
  return new Promise((resolve) => {
    for (const child of children) child.once('error', resolve);
    setImmediate(() => resolve(null));
  });
}

function failureOf(error: unknown): StartFailure {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return {
    code: typeof code === 'string' ? code : null,
    message: error instanceof Error ? error.message : String(error),
  };
}
