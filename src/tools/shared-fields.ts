import * as z from 'zod';
import { SETTING_RANGES } from '../config/ranges.js';
import { MODEL_NAME_MAX_LENGTH, MODEL_NAME_PATTERN, canonicalModelName } from '../ollama/model-name.js';
import { MAX_FALLBACK_MODELS } from '../policy/fallback.js';
import { RESPONSE_FORMATS, type ResponseFormat } from '../app/reply/run-reply.js';

/** Every tool's `response_format`: the concise reply by default, the full record on request. */
export const RESPONSE_FORMAT_FIELD = z.enum(RESPONSE_FORMATS, { error: 'must be "concise" or "detailed"' }).optional();

/** The response_format of arguments that failed validation: "detailed" only when clearly asked for. */
export function requestedFormat(rawArguments: unknown): ResponseFormat {
  const asked = typeof rawArguments === 'object' && rawArguments !== null && Object.hasOwn(rawArguments, 'response_format');
  return asked && (rawArguments as { response_format: unknown }).response_format === 'detailed' ? 'detailed' : 'concise';
}

// Argument schemas shared by several tools, so every tool says the same thing about the same value.
const MODEL_NAME = z
  .string()
  .min(1, 'must not be empty')
  .max(MODEL_NAME_MAX_LENGTH, `must be at most ${MODEL_NAME_MAX_LENGTH} characters`)
  .regex(
    MODEL_NAME_PATTERN,
    'must be an Ollama model name such as "qwen2.5-coder:7b" or "library/llama3.2:latest" (letters, digits, "._-", "/" between parts, one optional ":tag"; no spaces, no shell characters, not starting with "-")',
  );

export const MODEL_FIELD = MODEL_NAME.describe('Installed model, e.g. "qwen2.5-coder:7b".');

/** `fallback_models`: up to 5 model names; duplicates and the call's own model are refused by {@link fallbackModelsProblems}. */
export const FALLBACK_MODELS_FIELD = z
  .array(MODEL_NAME)
  .max(MAX_FALLBACK_MODELS, `must list at most ${MAX_FALLBACK_MODELS} models`)
  .describe('Models to try in order when one cannot serve.');

/** Names in `fallback_models` that repeat the call's model or an earlier entry (same model, any spelling). */
export function fallbackModelsProblems(
  model: string,
  fallback: readonly string[] | undefined,
): { index: number; message: string }[] {
  if (fallback === undefined) return [];
  const problems: { index: number; message: string }[] = [];
  const own = canonicalModelName(model);
  const seen = new Map<string, number>();
  fallback.forEach((name, index) => {
    const key = canonicalModelName(name);
    const earlier = seen.get(key);
    if (key === own) problems.push({ index, message: `"${name}" is the call's own model; list only other models` });
    else if (earlier !== undefined) problems.push({ index, message: `"${name}" is listed twice (also at ${earlier})` });
    else seen.set(key, index);
  });
  return problems;
}

const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9._:/@#+-]*$/;

/** A task id, without a description (the tools that only look one up need none). */
export const TASK_ID_VALUE = z
  .string()
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters')
  .regex(TASK_ID, 'must start with a letter or digit and use only letters, digits and "._:/@#+-"');

export const TASK_ID_FIELD = TASK_ID_VALUE.describe('Stable id of this work: the same on every retry.');

/** A whole number within `range`. */
export function wholeNumber({ min, max }: { readonly min: number; readonly max: number }): z.ZodNumber {
  return z.number().int('must be a whole number').min(min, `must be ${min} or more`).max(max, `must be at most ${max}`);
}

/** A duration in ms within a setting's range: the timeout's (a run's timeout, a batch's deadline) unless told. */
export function timeoutField(
  range: { readonly min: number; readonly max: number } = SETTING_RANGES.timeout_ms,
): z.ZodOptional<z.ZodNumber> {
  const { min, max } = range;
  return z
    .number()
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max} (one hour)`)
    .optional();
}

/**
 * The prompts of one `ollama_run_many` call together: at 6 bytes a character (the worst JSON
 * encoding), 100 jobs with the largest `format` still fit in one message (MAX_MESSAGE_BYTES).
 */
export const MAX_BATCH_PROMPT_CHARS = 3_000_000;

/** Arguments nested deeper than this are refused before any schema walks them (no stack overflow). */
export const MAX_ARGUMENT_DEPTH = 100;

/**
 * Where `value` nests deeper than `maxDepth` objects/arrays (the path to the first such place),
 * or null. Iterative, so a 100,000-deep value cannot overflow the stack while being measured.
 */
export function findExcessiveNesting(value: unknown, maxDepth: number): (string | number)[] | null {
  interface Frame {
    readonly value: object;
    readonly depth: number;
    readonly key: string | number | null;
    readonly parent: Frame | null;
  }
  if (typeof value !== 'object' || value === null) return null;
  // Only objects are pushed, each with a link to its parent: memory stays linear in the input.
  const stack: Frame[] = [{ value, depth: 1, key: null, parent: null }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if (frame.depth > maxDepth) {
      const path: (string | number)[] = [];
      for (let f: Frame | null = frame; f && f.key !== null; f = f.parent) path.unshift(f.key);
      return path;
    }
    const push = (key: string | number, child: unknown) => {
      if (typeof child === 'object' && child !== null) stack.push({ value: child, depth: frame.depth + 1, key, parent: frame });
    };
    if (Array.isArray(frame.value)) {
      for (let index = 0; index < frame.value.length; index += 1) push(index, frame.value[index]);
    } else {
      for (const key of Object.keys(frame.value)) push(key, (frame.value as Record<string, unknown>)[key]);
    }
  }
  return null;
}

/** `JSON.stringify(value).length <= max`, false (not a RangeError) for a value too deep to serialise. */
export function jsonFitsWithin(value: unknown, max: number): boolean {
  if (findExcessiveNesting(value, MAX_ARGUMENT_DEPTH) !== null) return false;
  try {
    return (JSON.stringify(value) ?? '').length <= max;
  } catch {
    return false;
  }
}
