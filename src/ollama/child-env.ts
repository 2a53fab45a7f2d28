type Env = Readonly<Record<string, string | undefined>>;

/** The whole environment of every ollama CLI child: ours, with OLLAMA_HOST when configured. */
export function cliEnvironment(config: { readonly ollamaHost?: string | undefined }, base: Env = process.env): Env {
  return { ...base, ...(config.ollamaHost ? { OLLAMA_HOST: config.ollamaHost } : {}) };
}
