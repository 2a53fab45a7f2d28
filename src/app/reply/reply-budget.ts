/**
 * How much of a model's answer one reply may carry. A reply is one JSON-RPC line, and MCP clients
 * built on the SDK close the connection on a line over 10 MiB: every size here is counted as the
 * answer will be serialized (JSON escapes included: a control character takes 6 bytes), and the
 * budgets leave room for the rest of the reply under 8 MiB.
 */

const KIB = 1024;
const MIB = 1024 * KIB;

/** The answers (output and thinking) of one reply's structured content together, serialized. */
export const REPLY_ANSWER_BYTES = 6 * MIB;
/** The answers the text content repeats, together: it shows a large answer's start only. */
export const REPLY_TEXT_ANSWER_BYTES = 512 * KIB;
/** One answer in the text content: past this the text shows its start and says where the rest is. */
export const TEXT_ANSWER_MAX_BYTES = 64 * KIB;
/** The least one result of a large batch may carry, however many jobs share the reply. */
const MIN_SHARE_BYTES = 1 * KIB;

/** What one result of a reply shared by `share` results may carry, in serialized bytes. */
interface ReplyBudget {
  /** Its output and thinking in the structured content, together. */
  readonly answerBytes: number;
  /** Its output in the text content. */
  readonly textBytes: number;
}

/** A batch of n jobs splits the reply evenly: each job gets 1/n of each budget. */
export function replyBudget(share = 1): ReplyBudget {
  const n = Math.max(1, Math.floor(share));
  return {
    answerBytes: Math.max(MIN_SHARE_BYTES, Math.floor(REPLY_ANSWER_BYTES / n)),
    textBytes: Math.max(MIN_SHARE_BYTES, Math.min(TEXT_ANSWER_MAX_BYTES, Math.floor(REPLY_TEXT_ANSWER_BYTES / n))),
  };
}

/** A prefix of a text that fits a budget, and what it costs serialized. */
interface FittedText {
  readonly text: string;
  /** Serialized bytes of `text` inside a JSON string (without the quotes). */
  readonly bytes: number;
  /** True when `text` is shorter than the text it was cut from. */
  readonly cut: boolean;
}

/**
 * The longest prefix of `text` whose JSON serialization (UTF-8, without the quotes) fits `budget`
 * bytes, never splitting a surrogate pair.
 */
export function fitJsonBytes(text: string, budget: number): FittedText {
  // No character serializes to more than 6 bytes: a short text fits without being measured.
  if (text.length * 6 <= budget) return { text, bytes: jsonBytes(text), cut: false };
  let used = 0;
  let index = 0;
  // Each character costs at least one byte, so only the first `budget` of them can fit.
  const end = Math.min(text.length, budget + 1);
  while (index < end) {
    const units = surrogatePairAt(text, index) ? 2 : 1;
    const cost = units === 2 ? 4 : charCost(text.charCodeAt(index));
    if (used + cost > budget) break;
    used += cost;
    index += units;
  }
  return { text: index === text.length ? text : text.slice(0, index), bytes: used, cut: index < text.length };
}

/** Serialized bytes of `text` inside a JSON string, without the quotes. */
export function jsonBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text), 'utf8') - 2;
}

function surrogatePairAt(text: string, index: number): boolean {
  const high = text.charCodeAt(index);
  if (high < 0xd800 || high > 0xdbff) return false;
  const low = text.charCodeAt(index + 1);
  return low >= 0xdc00 && low <= 0xdfff;
}

/** Serialized bytes of one UTF-16 code unit that is not part of a surrogate pair (JSON.stringify's escapes). */
function charCost(code: number): number {
  if (code < 0x20) return code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d ? 2 : 6;
  if (code === 0x22 || code === 0x5c) return 2;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code >= 0xd800 && code <= 0xdfff) return 6; // a lone surrogate: \udxxx
  return 3;
}
