import type { Config } from '../config/config.js';

type Env = Readonly<Record<string, string | undefined>>;

/** The whole environment of every ollama CLI child: ours, with OLLAMA_HOST when configured. */
export function cliEnvironment(config: Pick<Config, 'ollamaHost'>, base: Env = process.env): Env {
  return { ...base, ...(config.ollamaHost ? { OLLAMA_HOST: config.ollamaHost } : {}) };
}
