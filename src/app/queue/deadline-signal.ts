/**
 * A signal that aborts when `caller` does or when `deadlineAt` (epoch ms) passes, and `dispose` to
 * stop its timer once the wait is over. The deadline is a timer held here: an `AbortSignal.timeout`
 * inside `AbortSignal.any` can be collected before it fires (nodejs/node#57736), which left calls
 * waiting past their deadline.
 */
export function deadlineSignal(
  caller: AbortSignal | undefined,
  deadlineAt: number | undefined,
  now: number,
): { signal: AbortSignal | undefined; dispose: () => void } {
  if (deadlineAt === undefined) return { signal: caller, dispose: () => {} };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DeadlinePassed()), Math.max(0, deadlineAt - now));
  timer.unref();
  const onAbort = () => controller.abort(caller?.reason);
  if (caller?.aborted) onAbort();
  else caller?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onAbort);
    },
  };
}

/** Why a deadline's signal aborted: told by the reason, as a timer may fire a millisecond before the clock reads the deadline. */
class DeadlinePassed extends Error {
  constructor() {
    super('deadline passed');
  }
}

/** Whether a signal from {@link deadlineSignal} aborted because its deadline passed (not its caller). */
export function abortedByDeadline(signal: AbortSignal | undefined): boolean {
  return signal?.reason instanceof DeadlinePassed;
}
