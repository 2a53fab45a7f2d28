import { EMPTY_QUEUE, type ServerJudge, type SharedQueue } from '../../policy/shared-queue.js';

/** A change of the shared queue: the next queue (the same object: nothing to write) and what the caller wants back. */
export type QueueChange<T> = (queue: SharedQueue, now: number) => { readonly queue: SharedQueue; readonly result: T };

/**
 * Where the queue every server in front of one Ollama shares is kept (policy/shared-queue.ts): a file
 * of the data dir (one machine), or a key of team mode's Redis (several machines).
 */
export interface QueueStore {
  /** Where the queue is, for messages: the file, or the Redis URL and key. */
  readonly location: string;
  /** Apply `change` atomically against every other server; `now` is the queue's clock. Throws when the store cannot be used. */
  update<T>(change: QueueChange<T>): Promise<T>;
  /** The queue as last written, and the time (no lock: for looking, not for changing). */
  read(): Promise<{ readonly queue: SharedQueue; readonly now: number }>;
  /** Call `onChange` soon after any server writes the queue; null when the store cannot tell (then poll). */
  watch(onChange: () => void): { close(): void } | null;
  /** How a server of the queue is judged beside its lease: `gone` when it is known dead (same machine, pid and start time). */
  readonly judge: ServerJudge;
}

/** The queue a document holds, or the empty queue when the text is not one this version wrote. */
export function queueOf(text: string | null, check: (doc: Record<string, unknown>) => boolean = () => true): SharedQueue {
  if (text === null) return EMPTY_QUEUE;
  try {
    const doc = JSON.parse(text) as Record<string, unknown>;
    const queue = doc.queue as SharedQueue | undefined;
    if (doc.v !== 1 || !check(doc) || queue === undefined) return EMPTY_QUEUE;
    return Array.isArray(queue.waiting) && Array.isArray(queue.running) && Array.isArray(queue.loaded) ? queue : EMPTY_QUEUE;
  } catch {
    return EMPTY_QUEUE;
  }
}

export { ollamaKeyOf } from '../../policy/host-key.js';
