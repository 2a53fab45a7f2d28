import type { StartFailure, Subprocess } from './start-process.js';

/** Pipes quiet this long after the CLI's exit are held by a helper it started (a wrapper's `ollama serve`, an ssh master). */
const DRAIN_QUIET_MS = 250;
/** However much a helper keeps writing into the pipes, the command ends this long after the CLI's exit. */
export const DRAIN_MAX_MS = 2_000;

type ExecaResult = Awaited<Subprocess>;

export interface ProcessEnd {
  /** execa's result when every pipe closed; null when the command stopped reading pipes a helper holds. */
  readonly result: ExecaResult | null;
  readonly pid: number | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
}

/**
 * Resolves once the CLI has exited and its output has been read: when its pipes close, or once they
 * have been quiet for {@link DRAIN_QUIET_MS}, at most {@link DRAIN_MAX_MS} after the exit; the command
 * ends with the CLI, and the helper is left alone. `lastData`: when the last byte arrived (performance.now()).
 */
export function untilExitAndDrained(subprocess: Subprocess, lastData: () => number): Promise<ProcessEnd> {
  return new Promise((resolve) => {
    let exit: { code: number | null; signal: string | null } | null = null;
    let exitedAt = 0;
    let drainTimer: NodeJS.Timeout | undefined;
    const finish = (result: ExecaResult | null) => {
      clearTimeout(drainTimer);
      const exitCode = exit?.code ?? result?.exitCode ?? null;
      resolve({ result, pid: subprocess.pid ?? null, exitCode, signal: exit?.signal ?? result?.signal ?? null });
    };
    void subprocess.then(finish, () => finish(null));
    const checkDrained = () => {
      const now = performance.now();
      const quietFor = now - Math.max(lastData(), exitedAt);
      if (quietFor < DRAIN_QUIET_MS && now - exitedAt < DRAIN_MAX_MS) {
        drainTimer = setTimeout(checkDrained, Math.min(DRAIN_QUIET_MS - quietFor, DRAIN_MAX_MS - (now - exitedAt)));
        return;
      }
      subprocess.stdout?.destroy();
      subprocess.stderr?.destroy();
      finish(null);
    };
    subprocess.once('exit', (code: number | null, signal: NodeJS.Signals | null) => {
      exit = { code, signal };
      exitedAt = performance.now();
      drainTimer = setTimeout(checkDrained, DRAIN_QUIET_MS);
    });
  });
}

/** Why a process execa reported as never run could not be started; null when it ran, or when `stopped` by us. */
export function spawnFailureOf({ result }: ProcessEnd, stopped: boolean): StartFailure | null {
  if (result === null || !result.failed || result.exitCode !== undefined || stopped || result.signal) return null;
  return { code: (result as { code?: string }).code ?? null, message: result.message ?? 'unknown error' };
}
