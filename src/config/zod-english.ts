import type * as z from 'zod';

/** What the schema's messages need to know that zod does not say. */
export interface KeyHints {
  /** The keys allowed at this path (for "did you mean" and "allowed: ..."). */
  allowedKeys(path: readonly PropertyKey[]): readonly string[];
  /** The documented range of the number at this path. */
  rangeOf(path: readonly PropertyKey[]): { readonly min: number; readonly max: number } | undefined;
  /** A key's new name, when an unknown key is one that was renamed. */
  renamedTo?(key: string): string | undefined;
}

/** `models[1].timeout_ms`, `tiers.reasoning`, `tiers["odd name"]`; empty for the top level. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (typeof part === 'string' && /^[A-Za-z0-9_-]+$/.test(part)) out += out === '' ? part : `.${part}`;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out;
}

/**
 * One zod issue as an English sentence about the user's file (`models[0].timeout_ms must be at most
 * 3600000, got 99999999`), and for an unknown key the allowed key it most likely meant.
 */
export function describeIssue(issue: z.core.$ZodIssue, where: string, root: unknown, known: KeyHints): string {
  const subject = where === '' ? 'the file' : where;
  const got = describeValue(valueAt(root, issue.path));
  switch (issue.code) {
    case 'unrecognized_keys': {
      const allowed = known.allowedKeys(issue.path);
      const keys = issue.keys.map((key) => JSON.stringify(key)).join(', ');
      const hints = issue.keys.flatMap((key) => {
        const near = known.renamedTo?.(key) ?? closest(key, allowed);
        return near === null ? [] : [{ key, near }];
      });
      const hint =
        issue.keys.length === 1 && hints.length === 1
          ? ` (did you mean "${hints[0]!.near}"?)`
          : hints.length > 0
            ? ` (${hints.map(({ key, near }) => `"${key}": did you mean "${near}"?`).join(' ')})`
            : allowed.length > 0
              ? ` (allowed: ${allowed.join(', ')})`
              : '';
      return `${where === '' ? '' : `${where}: `}unknown key${issue.keys.length > 1 ? 's' : ''} ${keys}${hint}`;
    }
    case 'too_big':
      return `${subject} must be at most ${String(known.rangeOf(issue.path)?.max ?? issue.maximum)}, got ${got}`;
    case 'too_small':
      return `${subject} must be at least ${String(known.rangeOf(issue.path)?.min ?? issue.minimum)}, got ${got}`;
    case 'invalid_type': {
      if (valueAt(root, issue.path) === undefined) return `${subject} is required`;
      const expected = EXPECTED[issue.expected] ?? `a ${issue.expected}`;
      return `${subject} must be ${expected === 'an object' && where === '' ? 'a JSON object' : expected}, got ${got}`;
    }
    default: {
      // Our own checks: "models[0].match must not be empty", "models[0].tier: no tier named ...".
      const separator = where === '' ? '' : /^(must|is) /.test(issue.message) ? ' ' : ': ';
      return `${where}${separator}${issue.message}`;
    }
  }
}

const EXPECTED: Partial<Record<string, string>> = {
  int: 'a whole number',
  number: 'a whole number',
  object: 'an object',
  record: 'an object',
  array: 'an array',
  string: 'a string',
};

/** The allowed key a typo most likely meant (`timeout` → `timeout_ms`), or null. */
function closest(key: string, allowed: readonly string[]): string | null {
  const lower = key.toLowerCase().replace(/-/g, '_');
  const prefixed = allowed.filter(
    (candidate) => lower.length >= 4 && (candidate.startsWith(lower) || lower.startsWith(candidate)),
  );
  if (prefixed.length === 1) return prefixed[0]!;
  let best: string | null = null;
  let bestDistance = 3;
  for (const candidate of allowed) {
    const distance = editDistance(lower, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The value at `path` in `root` (own properties only), or undefined when there is none. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const part of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[part];
  }
  return value;
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (value !== null && typeof value === 'object') return 'an object';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
