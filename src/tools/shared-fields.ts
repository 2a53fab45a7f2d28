import * as z from 'zod';
import { MODEL_NAME_MAX_LENGTH, MODEL_NAME_PATTERN } from '../model-name.js';

/** Argument schemas shared by several tools, so every tool says the same thing about the same value. */
export const MODEL_FIELD = z
  .string()
  .min(1, 'must not be empty')
  .max(MODEL_NAME_MAX_LENGTH, `must be at most ${MODEL_NAME_MAX_LENGTH} characters`)
  .regex(
    MODEL_NAME_PATTERN,
    'must be an Ollama model name such as "qwen2.5-coder:7b" or "library/llama3.2:latest" (letters, digits, "._-", "/" between parts, one optional ":tag"; no spaces, no shell characters, not starting with "-")',
  )
  .describe('Installed Ollama model, e.g. "qwen2.5-coder:7b" or "llama3.2" (same as "llama3.2:latest").');

const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9._:/@#+-]*$/;

export const TASK_ID_FIELD = z
  .string()
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters')
  .regex(TASK_ID, 'must start with a letter or digit and use only letters, digits and "._:/@#+-"')
  .describe(
    'Your stable id for this piece of work. Give the same id on every retry: the server counts failures per id and tells you when to escalate.',
  );
