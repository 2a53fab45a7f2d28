/**
 * Ollama model names: `[host[:port]/][namespace/]name[:tag]`, e.g. `qwen2.5-coder:7b`,
 * `library/llama3.2:latest`, `hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M`,
 * `localhost:5000/team/model:v1`, `_private:latest` (Ollama's types/model/name.go: each part starts
 * with a letter, digit or `_`). Letters, digits and `._-` in each part, `/` between parts, a port
 * only on the first part, one optional `:tag`. Never a leading `-` (it would be read as a flag),
 * no whitespace, no shell characters.
 */
export const MODEL_NAME_PATTERN =
  /^(?:[A-Za-z0-9_][A-Za-z0-9._-]*(?::[0-9]{1,5})?\/)?(?:[A-Za-z0-9_][A-Za-z0-9._-]*\/){0,2}[A-Za-z0-9_][A-Za-z0-9._-]*(?::[A-Za-z0-9_][A-Za-z0-9._-]*)?$/;

export const MODEL_NAME_MAX_LENGTH = 200;

/** The name a model's circuit is kept under: `llama3.2`, `llama3.2:latest` and `library/llama3.2:latest` share one. */
export function canonicalModelName(model: string): string {
  let name = model.trim().toLowerCase();
  for (const prefix of ['registry.ollama.ai/library/', 'registry.ollama.ai/', 'library/']) {
    if (name.startsWith(prefix)) {
      name = name.slice(prefix.length);
      break;
    }
  }
  const lastPart = name.slice(name.lastIndexOf('/') + 1);
  return lastPart.includes(':') ? name : `${name}:latest`;
}

/** The `model_key` of a runs.jsonl record: a valid name's canonical form, anything else (refused input) as given. */
export function modelKeyOf(model: string): string {
  return model.length <= MODEL_NAME_MAX_LENGTH && MODEL_NAME_PATTERN.test(model) ? canonicalModelName(model) : model;
}

/** Cloud models (`gpt-oss:120b-cloud`, `name:cloud`) run on ollama.com: the installed-model check does not apply. */
export function isCloudModel(model: string): boolean {
  const tag = model.slice(model.lastIndexOf(':') + 1).toLowerCase();
  return model.includes(':') && (tag === 'cloud' || tag.endsWith('-cloud'));
}
