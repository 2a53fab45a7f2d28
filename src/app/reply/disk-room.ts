import { readdir, stat, statfs } from 'node:fs/promises';
import path from 'node:path';

/** The least room answer files leave on the disk for the retry ledger and runs.jsonl. */
export const MIN_RESERVE_BYTES = 64 * 1024 * 1024;
/** Or this many times the ledger's files, when that is more: a ledger write needs room for a copy beside each file. */
const LEDGER_RESERVE_FACTOR = 4;

/** Bytes this user may still write on the filesystem holding `dir`, or null when it cannot be told. */
export function freeBytes(dir: string): Promise<number | null> {
  return statfs(dir)
    .then((info) => info.bavail * info.bsize)
    .catch(() => null);
}

/**
 * The room answer files must leave for the state in `telemetryDir` and its run log: 64 MiB, or 4
 * times the ledger's files (`state.json` and the shards in `state.tasks/`, as the store names
 * them), whichever is larger.
 */
export async function ledgerReserve(telemetryDir: string): Promise<number> {
  const shardDir = path.join(telemetryDir, 'state.tasks');
  const shards = (await readdir(shardDir).catch(() => [] as string[])).map((name) => path.join(shardDir, name));
  const files = [path.join(telemetryDir, 'state.json'), ...shards];
  const sizes = await Promise.all(
    files.map((file) =>
      stat(file)
        .then((info) => info.size)
        .catch(() => 0),
    ),
  );
  const ledgerBytes = sizes.reduce((sum, size) => sum + size, 0);
  return Math.max(MIN_RESERVE_BYTES, LEDGER_RESERVE_FACTOR * ledgerBytes);
}
