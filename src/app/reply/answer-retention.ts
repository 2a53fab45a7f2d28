/** An answer file as retention sees it. */
export interface AnswerFileFacts {
  readonly name: string;
  /** Its last write, or the last reply that named it (epoch ms). */
  readonly mtimeMs: number;
  readonly size: number;
}

/** How long, how many and how much of `answers/` is kept. */
export interface AnswerRetentionLimits {
  /** A file is never deleted within this time of the last reply that named it. */
  readonly graceMs: number;
  /** Past their grace, at most this many files are kept, the newest. */
  readonly maxFiles: number;
  /** Past their grace, at most this many bytes, all such files together. */
  readonly maxBytes: number;
  /** Past their grace, no file older than this. */
  readonly maxAgeMs: number;
}

/** The times a prune judges by (epoch ms). */
interface AnswerRetentionTime {
  /** The wall clock. */
  readonly now: number;
  /** The retention clock: the wall clock, but at most a bounded step past the previous prune's. */
  readonly asOf: number;
}

/** What a prune does: files to delete, and files dated ahead of the wall clock to date now. */
interface AnswerRetentionPlan {
  readonly remove: readonly string[];
  readonly redate: readonly string[];
}

/** A file dated this far ahead of the wall clock was dated before the clock stepped back. */
const FUTURE_SLACK_MS = 60_000;

/**
 * Which answer files a prune deletes. A file within its grace (judged by the retention clock, so a
 * forward step of the wall clock does not end every grace at once) or `pinned` (a reply that will
 * name it is still being built) is kept and counts for nothing. The others are kept newest first
 * while they fit `maxFiles` and `maxBytes` and are younger than `maxAgeMs`. A file dated ahead of
 * the wall clock (which stepped back since) is dated now, so its grace and age count from now
 * instead of waiting for the clock to catch up. Pure.
 */
export function planAnswerRetention(
  files: readonly AnswerFileFacts[],
  time: AnswerRetentionTime,
  limits: AnswerRetentionLimits,
  pinned: ReadonlySet<string> = new Set(),
): AnswerRetentionPlan {
  const remove: string[] = [];
  const redate: string[] = [];
  let kept = 0;
  let bytes = 0;
  for (const file of [...files].sort((a, b) => b.mtimeMs - a.mtimeMs)) {
    if (file.mtimeMs > time.now + FUTURE_SLACK_MS) {
      redate.push(file.name);
      continue;
    }
    const age = time.asOf - file.mtimeMs;
    if (pinned.has(file.name) || age < limits.graceMs) continue;
    if (kept < limits.maxFiles && bytes + file.size <= limits.maxBytes && age <= limits.maxAgeMs) {
      kept += 1;
      bytes += file.size;
    } else {
      remove.push(file.name);
    }
  }
  return { remove, redate };
}
