import { MODEL_NAME_MAX_LENGTH, MODEL_NAME_PATTERN, canonicalModelName } from '../ollama/model-name.js';

// The tiers file's `models` rules: how a rule's `match` finds a model, and the checks the schema
// cannot make field by field (tier names, each rule's `match`, `tier` and `fallback`, reachability).

const TIER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const TIER_NAME_MAX_LENGTH = 64;
const MATCH_PATTERN = /^[A-Za-z0-9._\-/:*?]+$/;

/**
 * Glob match (`*` any run of characters, `?` exactly one, case-sensitive) by two pointers: linear time
 * whatever the pattern, where a RegExp of many `*` backtracks for ages.
 */
export function globMatches(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    if (p < pattern.length && (pattern[p] === '?' || pattern[p] === text[t])) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      resume = t;
    } else if (star !== -1) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

const isGlob = (match: string): boolean => /[*?]/.test(match);

/** A compiled `match`: exact names compare canonical forms; globs try the name as given and its canonical form. */
interface Matcher {
  readonly glob: boolean;
  /** Canonical name for an exact rule, lower-cased pattern (consecutive `*` collapsed) for a glob. */
  readonly key: string;
}

export function compileMatch(match: string): Matcher {
  return isGlob(match)
    ? { glob: true, key: match.trim().toLowerCase().replace(/\*+/g, '*') }
    : { glob: false, key: canonicalModelName(match) };
}

/** Whether a rule matches a model name, given lower-cased as written and in its canonical form. */
export function matches(matcher: Matcher, lower: string, canonical: string): boolean {
  if (!matcher.glob) return canonical === matcher.key;
  return globMatches(matcher.key, lower) || (canonical !== lower && globMatches(matcher.key, canonical));
}

/** Why rule `later` can never apply because `earlier` comes first, or null. */
function shadowedBy(earlier: Matcher, later: Matcher): string | null {
  if (earlier.glob && earlier.key === '*') return 'matches every model';
  if (earlier.glob === later.glob && earlier.key === later.key) return 'has the same match';
  // An exact rule matches only names whose canonical form is its own: an earlier rule matching that form takes them all.
  if (!later.glob && matches(earlier, later.key, later.key)) return `already matches "${later.key}"`;
  return null;
}

interface Problem {
  readonly path: (string | number)[];
  readonly message: string;
}

/** Checks zod cannot express per field. Defensive about shapes: it also runs when some fields were invalid. */
export function crossCheck(file: { readonly tiers?: unknown; readonly models?: unknown }): Problem[] {
  const problems: Problem[] = [];
  const tiers = isRecord(file.tiers) ? Object.keys(file.tiers) : [];
  for (const name of tiers) {
    if (!TIER_NAME_PATTERN.test(name) || name.length > TIER_NAME_MAX_LENGTH) {
      problems.push({
        path: ['tiers'],
        message: `tier name ${JSON.stringify(name)} must be 1-${TIER_NAME_MAX_LENGTH} letters, digits, ".", "_" or "-", starting with a letter or digit`,
      });
    }
  }
  const compiled: { index: number; match: string; matcher: Matcher }[] = [];
  (Array.isArray(file.models) ? (file.models as unknown[]) : []).forEach((rule, index) => {
    if (!isRecord(rule)) return;
    if (typeof rule.tier === 'string' && !tiers.includes(rule.tier)) {
      const defined = tiers.length > 0 ? `defined: ${tiers.join(', ')}` : 'no tiers are defined';
      problems.push({ path: ['models', index, 'tier'], message: `no tier named ${JSON.stringify(rule.tier)} (${defined})` });
    }
    for (const problem of fallbackProblems(rule)) problems.push({ path: ['models', index, 'fallback'], message: problem });
    if (typeof rule.match !== 'string') return;
    const problem = matchProblem(rule.match);
    if (problem !== null) {
      problems.push({ path: ['models', index, 'match'], message: problem });
      return;
    }
    const matcher = compileMatch(rule.match);
    for (const earlier of compiled) {
      const why = shadowedBy(earlier.matcher, matcher);
      if (why === null) continue;
      problems.push({
        path: ['models', index],
        message: `unreachable: models[${earlier.index}] (${JSON.stringify(earlier.match)}) comes first and ${why}; put more specific rules first`,
      });
      break;
    }
    compiled.push({ index, match: rule.match, matcher });
  });
  return problems;
}

/** A rule's `fallback`: valid model names, each once, never the rule's own (exact) model. */
function fallbackProblems(rule: Record<string, unknown>): string[] {
  if (!Array.isArray(rule.fallback)) return [];
  const problems: string[] = [];
  const own = typeof rule.match === 'string' && !isGlob(rule.match) ? canonicalModelName(rule.match) : null;
  const seen = new Set<string>();
  for (const name of rule.fallback as unknown[]) {
    if (typeof name !== 'string') continue; // zod reports it
    if (!MODEL_NAME_PATTERN.test(name) || name.length > MODEL_NAME_MAX_LENGTH) {
      problems.push(`${JSON.stringify(name)} is not a valid model name`);
      continue;
    }
    const key = canonicalModelName(name);
    if (key === own) problems.push(`${JSON.stringify(name)} is the rule's own model; a model cannot be its own fallback`);
    else if (seen.has(key)) problems.push(`${JSON.stringify(name)} is listed twice`);
    seen.add(key);
  }
  return problems;
}

function matchProblem(match: string): string | null {
  if (match.trim() === '') return 'must not be empty';
  if (match.length > MODEL_NAME_MAX_LENGTH) return `must be at most ${MODEL_NAME_MAX_LENGTH} characters`;
  if (!MATCH_PATTERN.test(match)) {
    return `${JSON.stringify(match)} may contain only letters, digits, ".", "_", "-", "/", ":" and the wildcards "*" and "?"`;
  }
  if (!isGlob(match) && !MODEL_NAME_PATTERN.test(match)) {
    return `${JSON.stringify(match)} is not a valid model name (and has no wildcard), so it would never match`;
  }
  return null;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
