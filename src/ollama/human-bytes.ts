/** Decimal units, as Go's `format.HumanBytes` prints them. */
const UNITS: Readonly<Record<string, number>> = { B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12 };

/** A size as the CLI prints it (`4.7 GB`), read back: the value shown, and the least it can stand for. */
interface ShownSize {
  /** The value as printed, in bytes. */
  readonly bytes: number;
  /** The least number of bytes that prints so (`4.7 GB` is at least 4.65 GB; `13 GB`, cut to whole units, at least 13 GB). */
  readonly atLeast: number;
}

/**
 * A SIZE cell of `ollama list` or `ollama ps` (`274 MB`, `4.7 GB`, `13 GB`, `512 B`), or null (a cloud
 * model's `-`). Values under 10 units are rounded to one decimal, larger ones cut to whole units.
 */
export function parseShownSize(text: string): ShownSize | null {
  const m = /^(\d+(?:\.\d+)?) (B|KB|MB|GB|TB)$/.exec(text.trim());
  if (m === null) return null;
  const value = Number(m[1]);
  const unit = UNITS[m[2]!]!;
  const rounded = value < 10 && unit > 1;
  return { bytes: value * unit, atLeast: Math.max(0, rounded ? (value - 0.05) * unit : value * unit) };
}

/** The SIZE cell of one row of an `ollama list` or `ollama ps` table (`NAME  ID  SIZE  ...`), or null. */
export function sizeCellOf(row: string): ShownSize | null {
  const m = /^\S+\s+\S+\s+(\d+(?:\.\d+)? [KMGT]?B)(?:\s|$)/.exec(row.trim());
  return m === null ? null : parseShownSize(m[1]!);
}

/** Bytes for people: `4.7 GB`, `870 MB` (decimal units, like the CLI). */
export function formatBytes(bytes: number): string {
  for (const unit of ['TB', 'GB', 'MB', 'KB']) {
    if (bytes >= UNITS[unit]!) return `${Number((bytes / UNITS[unit]!).toFixed(1))} ${unit}`;
  }
  return `${Math.round(bytes)} B`;
}
