// Paths shortened in the middle for the text report: a temp dir's path is long (macOS's TMPDIR,
// a home under /Users/...), and what tells two telemetry dirs apart is usually their end.

/** What stands for the characters left out of a path's middle. */
export const ELLIPSIS = '…';

/**
 * The paths of one list, each at most `max` characters (at least 5): a longer one keeps its start
 * and its end, `…` between. Every long path of the list is cut at the same place: its first folder
 * is kept (`/tmp/`, `/Users/`) and the rest of the room goes to the end, unless that would print two
 * different paths alike, in which case the cut moves to where they differ. Different paths never
 * print alike: when no single cut tells them apart, every path is left whole (the caller breaks it
 * over lines). Pure.
 */
export function shortenPaths(paths: readonly string[], max: number): string[] {
  const room = Math.max(5, Math.floor(max));
  const long = paths.filter((p) => p.length > room);
  if (long.length === 0) return [...paths];
  for (const head of headsToTry(long[0]!, room)) {
    const shown = paths.map((p) => (p.length > room ? cutMiddle(p, head, room - 1 - head) : p));
    if (apart(paths, shown)) return shown;
  }
  return [...paths];
}

/**
 * Lengths of the kept start, best first: the path's root and first folder (at most a third of the
 * room), then the others nearest to it. At least one character is kept at each end.
 */
function headsToTry(path: string, room: number): number[] {
  const secondSlash = path.indexOf('/', path.indexOf('/') + 1);
  const first = Math.min(Math.floor(room / 3), secondSlash > 0 ? secondSlash + 1 : 1);
  const heads = [];
  for (let head = 1; head <= room - 2; head += 1) heads.push(head);
  return heads.sort((a, b) => Math.abs(a - first) - Math.abs(b - first) || a - b);
}

/** `path`'s first `head` and last `tail` characters around `…`, never splitting a surrogate pair. */
function cutMiddle(path: string, head: number, tail: number): string {
  let end = head;
  if (/[\ud800-\udbff]/.test(path[end - 1] ?? '')) end -= 1;
  let start = path.length - tail;
  if (/[\udc00-\udfff]/.test(path[start] ?? '')) start += 1;
  return `${path.slice(0, end)}${ELLIPSIS}${path.slice(start)}`;
}

/** No two different paths are shown alike. */
function apart(paths: readonly string[], shown: readonly string[]): boolean {
  const owner = new Map<string, string>();
  for (const [i, text] of shown.entries()) {
    const other = owner.get(text);
    if (other !== undefined && other !== paths[i]) return false;
    owner.set(text, paths[i]!);
  }
  return true;
}
