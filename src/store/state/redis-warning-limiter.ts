/**
 * A storm of identical trouble (every run of every client failing to reach Redis) must not become
 * a storm of stderr lines. `limitWarnings` passes the first warning of a window through, counts
 * the rest, and says how many were held back with the first warning of the next window.
 * Time is injected (by default a monotonic clock: a wall-clock step must not silence the warnings
 * for its size); nothing is scheduled.
 */
export function limitWarnings(
  write: (message: string) => void,
  options: { readonly windowMs: number; readonly clock?: () => number },
): (message: string) => void {
  const clock = options.clock ?? (() => performance.now());
  let windowStart = Number.NEGATIVE_INFINITY;
  let held = 0;
  return (message) => {
    const now = clock();
    if (now - windowStart < options.windowMs) {
      held += 1;
      return;
    }
    const note =
      held === 0
        ? ''
        : ` (${held} more such warning${held === 1 ? '' : 's'} in the last ${Math.round((now - windowStart) / 1000)} s not shown)`;
    windowStart = now;
    held = 0;
    write(`${message}${note}`);
  };
}
