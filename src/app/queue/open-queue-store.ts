import type { Config } from '../../config/config.js';
import type { ProcView } from '../../policy/process-identity.js';
import type { SelfIdentity } from '../../store/processes/proc-reader.js';
import { FileQueueStore } from '../../store/queue/file-queue-store.js';
import { ollamaKeyOf, type QueueStore } from '../../store/queue/queue-store.js';
import { RedisQueueStore } from '../../store/queue/redis-queue-store.js';
import type { SlotRedisConnection } from '../../store/slots/redis-slot-table.js';

/**
 * Where the queue shared by every server in front of one Ollama (`ollamaHost`) lives: team mode's Redis
 * when there is one, else the data dir; null when OLLAMA_MCP_SHARED_QUEUE is off.
 */
export function openQueueStore(
  config: Config,
  place: { readonly identity: SelfIdentity; readonly proc: ProcView; readonly team: SlotRedisConnection | null },
  ollamaHost: string | undefined = config.ollamaHost,
): QueueStore | null {
  if (!config.sharedQueue) return null;
  const ollamaKey = ollamaKeyOf(ollamaHost);
  const { identity, proc, team } = place;
  if (team !== null) return new RedisQueueStore({ connection: team, ollamaKey, identity, proc });
  return new FileQueueStore({ telemetryDir: config.telemetryDir, ollamaKey, identity, proc });
}
