import { unlink } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { isSameProcess, judgeChildRecord, type ProcView } from '../../policy/process-identity.js';
import { readChildRecords } from '../../store/processes/child-registry.js';
import type { SelfIdentity } from '../../store/processes/proc-reader.js';

/** How often each server sweeps, besides once at start-up. */
export const SWEEP_INTERVAL_MS = 60_000;
/** A record that cannot be parsed for this long is junk (a write cut short by a crash): removed. */
const UNREADABLE_RECORD_MAX_AGE_MS = 60_000;

/** What one sweep did. */
interface SweepSummary {
  /** Epoch ms when it ran. */
  readonly at: number;
  /** Orphaned model processes ended (their server was gone, they were still running). */
  readonly ended: number;
  /** Records removed without signalling anything (the process had already gone, or its pid was reused). */
  readonly forgotten: number;
  /** Records left alone: their server is alive, or they come from another host or pid namespace. */
  readonly kept: number;
}

interface OrphanSweepDeps {
  /** The children dir (store/processes/child-registry.ts). */
  readonly dir: string;
  readonly identity: SelfIdentity;
  readonly proc: ProcView;
  /** After SIGTERM, SIGKILL follows this much later if the orphan is still the same process. */
  readonly killGraceMs: number;
  /** Send a signal to a process group. */
  readonly signalGroup: (pid: number, signal: NodeJS.Signals) => boolean;
  readonly warn: (message: string) => void;
}

/**
 * End the model processes whose server is gone: each record is judged by
 * {@link judgeChildRecord} (the server's pid is free or names another process, and the child's
 * pid still names the same process); those still running get SIGTERM to their process group,
 * then SIGKILL after the grace if they are still the same process. Their records are removed, and
 * stderr is told. A live server's children are never touched.
 */
export async function sweepOrphans(deps: OrphanSweepDeps): Promise<SweepSummary> {
  const now = Date.now();
  const files = await readChildRecords(deps.dir, now);
  const toEnd: { pid: number; start: number; file: string }[] = [];
  const toForget: string[] = [];
  let kept = 0;
  for (const entry of files) {
    if (entry.record === null) {
      if (entry.ageMs > UNREADABLE_RECORD_MAX_AGE_MS) toForget.push(entry.file);
      else kept += 1;
      continue;
    }
    const { record } = entry;
    const verdict = judgeChildRecord(record, deps.identity.place, deps.proc);
    if (verdict.action === 'keep') kept += 1;
    else if (verdict.action === 'forget') toForget.push(entry.file);
    else {
      const command = [record.bin, ...record.args].join(' ');
      const since = new Date(record.at).toISOString();
      deps.warn(
        `ending orphaned model process ${record.pid} (${command}, started ${since}): its server (pid ${record.owner.pid}) is gone`,
      );
      deps.signalGroup(record.pid, 'SIGTERM');
      toEnd.push({ pid: record.pid, start: record.start, file: entry.file });
    }
  }
  if (toEnd.length > 0) {
    await delay(deps.killGraceMs);
    for (const child of toEnd) {
      if (isSameProcess(child, deps.proc) && deps.signalGroup(child.pid, 'SIGKILL')) {
        deps.warn(`model process ${child.pid} ignored SIGTERM for ${deps.killGraceMs} ms: killed`);
      }
    }
  }
  await Promise.all([...toForget, ...toEnd.map((child) => child.file)].map((file) => unlink(file).catch(() => {})));
  return { at: now, ended: toEnd.length, forgotten: toForget.length, kept };
}

/**
 * Sweeps at start-up and every {@link SWEEP_INTERVAL_MS} (an unref'd timer: it never keeps the
 * process alive). Where there is no /proc (macOS, Windows) start times cannot be read, so a pid
 * cannot be told from a reused one: the sweep is off, and `enabled` says why.
 */
export class OrphanSweeper {
  readonly #deps: OrphanSweepDeps;
  readonly intervalMs = SWEEP_INTERVAL_MS;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | null = null;
  #last: SweepSummary | null = null;

  constructor(deps: OrphanSweepDeps) {
    this.#deps = deps;
  }

  get enabled(): boolean {
    return this.#deps.identity.hasProc;
  }

  /** The last sweep's summary, null before the first one finished. */
  get last(): SweepSummary | null {
    return this.#last;
  }

  start(): void {
    if (!this.enabled || this.#timer) return;
    this.sweepNow();
    this.#timer = setInterval(() => this.sweepNow(), this.intervalMs);
    this.#timer.unref();
  }

  /** One sweep now, unless one is under way (then that one). Never rejects. */
  sweepNow(): Promise<void> {
    this.#running ??= sweepOrphans(this.#deps)
      .then(
        (summary) => void (this.#last = summary),
        (error: unknown) => this.#deps.warn(`the orphan sweep failed: ${(error as Error).message}`),
      )
      .finally(() => (this.#running = null));
    return this.#running;
  }

  /** Stop the timer and wait for a sweep under way. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
