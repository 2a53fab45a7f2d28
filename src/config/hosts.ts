/**
 * `OLLAMA_MCP_HOSTS`: the Ollama servers this server sends to, each an `OLLAMA_HOST` value with its
 * own settings. Pure: the environment's text in, the hosts or an error naming the entry and the key out.
 *
 *   OLLAMA_MCP_HOSTS=gpu-box:11434;weight=3;max_loaded=2,127.0.0.1:11434
 */

/** One Ollama server. */
export interface HostSpec {
  /** The `OLLAMA_HOST` value its CLI children get, as written. */
  readonly host: string;
  /** Breaks ties between hosts, and divides the calls ahead on it when all are busy (unequal hardware). @default 1 */
  readonly weight: number;
  /** Models it keeps loaded together; null: OLLAMA_MCP_MAX_LOADED_MODELS, else learned from its own `ollama ps`. */
  readonly maxLoaded: number | null;
  /** Requests of one model it runs at once; null: the model's own setting (OLLAMA_MCP_PARALLEL, a tier). */
  readonly parallel: number | null;
}

/** Why the list was refused: the entry (1-based) and its text, and the key when one was at fault. */
export interface HostsError {
  readonly kind: 'hosts_error';
  readonly message: string;
}

const KEYS = { weight: { min: 1, max: 100 }, max_loaded: { min: 1, max: 32 }, parallel: { min: 1, max: 64 } } as const;
type Key = keyof typeof KEYS;

/**
 * The hosts `raw` lists, or the one `fallback` (OLLAMA_HOST; undefined: the CLI's default) when it is
 * unset or blank. `sameHost` tells two spellings of one server apart (unset, `localhost` and
 * `127.0.0.1` are one): a host listed twice is refused.
 */
export function parseHosts(
  raw: string | undefined,
  fallback: string | undefined,
  sameHost: (a: string, b: string) => boolean,
): readonly HostSpec[] | HostsError {
  if (raw === undefined || raw.trim() === '') return [{ host: fallback ?? '', weight: 1, maxLoaded: null, parallel: null }];
  const hosts: HostSpec[] = [];
  const entries = raw.split(',');
  for (const [index, text] of entries.entries()) {
    const where = `entry ${index + 1} (\`${text.trim()}\`)`;
    const parsed = parseEntry(text, where);
    if ('kind' in parsed) return parsed;
    const twin = hosts.find((other) => sameHost(other.host, parsed.host));
    if (twin !== undefined) return fail(`${where} names the same Ollama as \`${twin.host}\`: list each host once`);
    hosts.push(parsed);
  }
  return hosts;
}

function parseEntry(text: string, where: string): HostSpec | HostsError {
  const [hostPart = '', ...settings] = text.split(';').map((part) => part.trim());
  if (hostPart === '') return fail(`${where} has no host: write host, host:port or scheme://host:port`);
  if (/\s/.test(hostPart) || hostPart.includes('=')) {
    return fail(`${where}: the host must be host, host:port or scheme://host:port, got \`${hostPart}\``);
  }
  const values: Partial<Record<Key, number>> = {};
  for (const setting of settings) {
    if (setting === '') continue;
    const match = /^([a-z_]+)\s*=\s*(.*)$/i.exec(setting);
    const key = match?.[1]?.toLowerCase();
    if (match === null || key === undefined || !(key in KEYS)) {
      return fail(`${where}: unknown setting \`${setting}\`; the settings are ${Object.keys(KEYS).join(', ')} (e.g. weight=2)`);
    }
    const { min, max } = KEYS[key as Key];
    const raw = match[2]?.trim() ?? '';
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      return fail(`${where}: ${key} must be a whole number from ${min} to ${max}, got \`${raw}\``);
    }
    if (values[key as Key] !== undefined) return fail(`${where}: ${key} is given twice`);
    values[key as Key] = value;
  }
  return { host: hostPart, weight: values.weight ?? 1, maxLoaded: values.max_loaded ?? null, parallel: values.parallel ?? null };
}

function fail(message: string): HostsError {
  return { kind: 'hosts_error', message: `OLLAMA_MCP_HOSTS: ${message}` };
}

export function isHostsError(value: readonly HostSpec[] | HostsError): value is HostsError {
  return 'kind' in value;
}

/** A host's name in results, health and runs.jsonl: as written, or the CLI's default when OLLAMA_HOST is unset. */
export function hostNameOf(spec: Pick<HostSpec, 'host'>): string {
  return spec.host === '' ? '127.0.0.1:11434' : spec.host;
}

/** The name of the host `text` designates (any spelling of it: `gpu-box`, `http://gpu-box:11434`), or null when none is listed. */
export function resolveHost(
  hosts: readonly HostSpec[],
  text: string,
  sameHost: (a: string, b: string) => boolean,
): string | null {
  const wanted = text.trim();
  const found = hosts.find((spec) => hostNameOf(spec) === wanted || sameHost(spec.host, wanted));
  return found === undefined ? null : hostNameOf(found);
}
