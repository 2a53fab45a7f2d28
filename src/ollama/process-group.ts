/**
 * Each model process leads its own process group (POSIX: spawned `detached`), so a signal to the group
 * reaches everything the CLI started, and a terminal's Ctrl+C (which makes the CLI exit 0 with partial
 * output) reaches only the server, which ends its children with SIGTERM. Windows has no groups.
 */
export const OWN_PROCESS_GROUP = process.platform !== 'win32';

/** Send `signal` to the group led by `pid` (Windows: to the process). False when nothing was there to signal. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(OWN_PROCESS_GROUP ? -pid : pid, signal);
    return true;
  } catch {
    return false; // ESRCH: already gone
  }
}

/**
 * Ends a child's group: SIGTERM at the first request, SIGKILL after the grace, or at once when the
 * signalled leader has exited: nothing it started may outlive it.
 */
export class GroupTerminator {
  readonly #pid: number;
  readonly #graceMs: number;
  #timer: NodeJS.Timeout | undefined;
  #signalled = false;

  constructor(pid: number, graceMs: number) {
    this.#pid = pid;
    this.#graceMs = graceMs;
  }

  terminate(): void {
    if (this.#signalled) return;
    this.#signalled = true;
    signalGroup(this.#pid, 'SIGTERM');
    this.#timer = setTimeout(() => signalGroup(this.#pid, 'SIGKILL'), this.#graceMs);
  }

  /** Call once the leader has exited (and was reaped). */
  exited(): void {
    clearTimeout(this.#timer);
    if (this.#signalled) signalGroup(this.#pid, 'SIGKILL');
  }
}
