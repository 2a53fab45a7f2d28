import { RUN_STATUSES } from '../policy/run-status.js';

/** Which records a summary counts. Every filter given must match; none given selects every record. */
export interface RunFilters {
  /** Only records whose `ts` is at or after this time. Records without a readable `ts` are left out. */
  readonly since?: Date;
  /** Only this model: the name as logged, or any spelling with the same canonical form (`llama3.2` = `llama3.2:latest`). */
  readonly model?: string;
  /** Only this `task_id` (exact). */
  readonly task?: string;
  /** Only these statuses (exact). */
  readonly status?: string | readonly string[];
}

/** A bad command-line option or filter value; the message says what was expected and what was given. */
export class ReportUsageError extends Error {
  readonly kind = 'report_usage_error';
  constructor(message: string) {
    super(message);
    this.name = 'ReportUsageError';
  }
}

/** Type guard that also works across two copies of the package (unlike `instanceof`). */
export function isReportUsageError(error: unknown): error is ReportUsageError {
  return typeof error === 'object' && error !== null && (error as { kind?: unknown }).kind === 'report_usage_error';
}

const UNIT_MS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const DURATION = /^(\d+)([smhdw])$/;
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;
const EXPECTED =
  'expected a duration back from now such as 30m, 24h, 7d (units s, m, h, d, w), or an ISO date or time such as 2025-11-22, 2025-11-22T10:00 or 2025-11-22T10:00:00+01:00 (UTC when no offset is given)';

/**
 * The start time of a `--since` value: a duration back from `now` (`30m`, `24h`, `7d`; units `s`, `m`,
 * `h`, `d`, `w`) or an ISO 8601 date (`2025-11-22`, midnight UTC) or date and time (`2025-11-22T10:00`,
 * `2025-11-22 10:00:00.5Z`, `2025-11-22T10:00+01:00`). A time without an offset is **UTC**, like the
 * log's `ts`, whatever the machine's time zone.
 *
 * @throws ReportUsageError naming what was expected and what was given
 * @example parseSince('24h', new Date('2025-11-22T12:00:00Z')) // 2025-11-21T12:00:00.000Z
 */
export function parseSince(text: string, now: Date): Date {
  const value = text.trim();
  const duration = DURATION.exec(value);
  if (duration) {
    const amount = Number(duration[1]);
    if (amount === 0) throw new ReportUsageError(`since: the duration must be more than 0, got "${text}"`);
    const at = new Date(now.getTime() - amount * UNIT_MS[duration[2]!]!);
    if (!Number.isFinite(at.getTime())) throw new ReportUsageError(`since: "${text}" reaches back too far`);
    return at;
  }
  const iso = ISO.exec(value);
  if (iso === null) throw new ReportUsageError(`since: ${EXPECTED}; got "${text}"`);
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction = '', zone = 'Z'] = iso;
  const utc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  // Date.UTC rolls an impossible date over (February 30 is March 2): the date must read back the same.
  if (!Number.isFinite(utc) || new Date(utc).toISOString().slice(0, 19) !== `${y}-${mo}-${d}T${h}:${mi}:${s}`) {
    throw new ReportUsageError(`since: "${text}" is not a real date or time`);
  }
  const millis = fraction === '' ? 0 : Math.floor(Number(`0${fraction}`) * 1000);
  return new Date(utc + millis - offsetMinutes(zone, text) * 60_000);
}

/** `Z`, `+01:00`, `-0530` in minutes east of UTC. */
function offsetMinutes(zone: string, text: string): number {
  if (zone.toUpperCase() === 'Z') return 0;
  const digits = zone.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2));
  if (hours > 23 || minutes > 59) throw new ReportUsageError(`since: "${text}" has an impossible UTC offset`);
  return (zone.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
}

/**
 * A status filter from text: one status or several separated by commas (`timeout,crashed`), each one
 * of the statuses runs.jsonl knows.
 * @throws ReportUsageError listing the statuses allowed
 */
export function parseStatusFilter(text: string): string[] {
  const statuses = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  if (statuses.length === 0)
    throw new ReportUsageError(`status: expected one of ${RUN_STATUSES.join(', ')} (or several, comma-separated); got "${text}"`);
  const unknown = statuses.filter((status) => !(RUN_STATUSES as readonly string[]).includes(status));
  if (unknown.length > 0) {
    throw new ReportUsageError(
      `status: unknown status ${unknown.map((s) => `"${s}"`).join(', ')}; expected one of ${RUN_STATUSES.join(', ')}`,
    );
  }
  return [...new Set(statuses)];
}
