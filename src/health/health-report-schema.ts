import * as z from 'zod';

// The report's shape apart from the check itself: `ollama_health` lists it as its outputSchema at
// start-up, and the check (CLI probes, the state backend) loads only on the first call.

const configValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const int = () => z.number().int();

export const healthReportSchema = z.object({
  ok: z.boolean().describe('true when everything needed to run a model works; `problems` says what does not'),
  problems: z.array(z.string()).describe('what is broken, each with how to fix it'),
  warnings: z.array(z.string()).describe('worth knowing, but runs can go ahead (open circuits, CLI warnings)'),
  cli: z.object({
    bin: z.string().describe('OLLAMA_BIN'),
    found: z.boolean(),
    version: z
      .string()
      .nullable()
      .describe("the CLI's own version (`ollama --version`: the `client version is` line, else the same as the server's)"),
  }),
  server: z.object({
    reachable: z.boolean().nullable().describe('null when it could not be told (the CLI is missing or hung)'),
    version: z.string().nullable().describe("the server's version (`ollama version is X`); null when it did not answer"),
    host: z.string().describe('OLLAMA_HOST, or the CLI default'),
  }),
  models: z.object({
    installed: z.array(z.string()).describe('canonical names from `ollama list` (empty when the list failed)'),
  }),
  circuits: z
    .array(
      z.object({
        model: z.string(),
        state: z.enum(['closed', 'open', 'half_open']),
        consecutive_failures: int(),
        retry_after_seconds: int().nullable(),
      }),
    )
    .describe('every model with a circuit on record'),
  runs: z.object({
    in_flight: int(),
    running: int(),
    queued: int(),
    concurrency: int(),
    parallel: int().describe('requests of one model sent to Ollama at once (OLLAMA_MCP_PARALLEL / OLLAMA_NUM_PARALLEL)'),
    loaded_models: z.array(z.string()).describe('models this server believes Ollama has loaded, least recently used first'),
    max_loaded_models: int().describe(
      'models Ollama keeps loaded together: as set (OLLAMA_MAX_LOADED_MODELS), else the most `ollama ps` has shown at once',
    ),
    memory_budget_bytes: z
      .number()
      .nullable()
      .describe(
        'unless the count is set: the most memory `ollama ps` has shown models taking together, lowered when a load did not fit; a model is sent beside busy ones only when their sizes fit in it (null: nothing seen yet)',
      ),
    shared_queue: z
      .object({
        location: z.string().describe('the queue file in the data dir, or the Redis key in team mode'),
        other_servers: int().describe('other servers in front of the same Ollama with calls in the queue'),
        waiting_elsewhere: int().describe("their calls waiting: this server's calls may wait behind them"),
        running_elsewhere: int().describe('their calls running in Ollama'),
        error: z.string().nullable().describe('why the queue cannot be read (this server then dispatches on its own)'),
      })
      .nullable()
      .optional()
      .describe('the one queue every server in front of this Ollama dispatches from (null: OLLAMA_MCP_SHARED_QUEUE=0)'),
  }),
  hosts: z
    .array(
      z.object({
        name: z.string().describe('as OLLAMA_MCP_HOSTS writes it (OLLAMA_HOST, or the CLI default, with one host)'),
        weight: int(),
        reachable: z.boolean().nullable().describe('its `ollama list` worked (null: could not tell)'),
        version: z.string().nullable().describe("the host's Ollama version; null when it did not answer"),
        installed_models: int().nullable().describe('models its `ollama list` shows (null: the list failed)'),
        loaded_models: z.array(z.string()).describe('models this server believes the host has loaded'),
        queued: int().describe("this server's calls waiting for the host"),
        running: int().describe("this server's calls running there"),
        down_until: z
          .string()
          .nullable()
          .describe('calls skip the host until then (it could not be reached; ISO time); null: it takes calls'),
        last_error: z.string().nullable().describe('what its last failure to reach it said'),
      }),
    )
    .optional()
    .describe('every Ollama host calls are routed to (OLLAMA_MCP_HOSTS; one without it)'),
  processes: z
    .object({
      orphan_sweep: z.object({
        enabled: z.boolean().describe('whether this server ends model processes left running by a killed server (needs /proc)'),
        reason: z.string().nullable().describe('why it is off, when it is'),
        interval_seconds: int(),
        last: z
          .object({ at: z.string(), ended: int(), forgotten: int(), kept: int() })
          .nullable()
          .describe("this server's last sweep: orphans ended, stale records removed, records of live servers kept"),
      }),
      shared_slots: z
        .object({
          limit: int().describe('OLLAMA_MCP_SHARED_CONCURRENCY'),
          in_use: int().describe('slots held now, by every server process sharing the telemetry dir (team mode: the Redis)'),
          across: z
            .enum(['processes', 'machines'])
            .optional()
            .describe('who shares the cap: the server processes of this telemetry dir, or (team mode) every server on the Redis'),
          waiting_here: int().describe("this server's calls waiting for a shared slot"),
          slots: z.array(
            z.object({
              slot: int(),
              pid: int().nullable().describe('the server process holding it'),
              host: z.string().nullable().optional().describe('the host name of that server (team mode: any machine)'),
              since: z.string().nullable(),
              holder: z.enum(['this_server', 'alive', 'dead', 'unknown', 'unreadable']),
            }),
          ),
          error: z.string().nullable().describe('why the slots cannot be used (runs then go ahead uncapped across processes)'),
        })
        .nullable()
        .describe('null when OLLAMA_MCP_SHARED_CONCURRENCY is unset'),
    })
    .nullable()
    .describe('model processes across server processes: the orphan sweep and the shared cap'),
  telemetry: z.object({
    dir: z.string(),
    writable: z.boolean().describe('real bytes could be written there, and every run log file can be appended to'),
    runs_log: z.string(),
  }),
  ledger: z
    .object({
      ok: z.boolean().describe('the retry ledger and circuit files can be read and written'),
      problems: z.array(z.string()).describe('each file that cannot be used, with the error'),
      last_write_failure: z
        .object({ at: z.string(), message: z.string() })
        .nullable()
        .describe('the last ledger update this server could not save, while none was saved since'),
    })
    .describe('the state behind retry counting and the circuit breakers'),
  state_backend: z
    .object({
      kind: z.enum(['files', 'redis']).describe('files in the telemetry dir, or a Redis shared by several servers (team mode)'),
      location: z.string().describe('the state file, or the Redis URL with its password as ***'),
      reachable: z.boolean().nullable().describe('did Redis answer a PING just now; null for files'),
      error: z.string().nullable(),
    })
    .optional()
    .describe('where the ledger and circuits live (OLLAMA_MCP_STATE_URL); always given by this server'),
  config: z.record(z.string(), configValue).describe('the effective configuration; secrets only as "set"/"unset"'),
  checked_at: z.string(),
});

export type HealthReport = z.output<typeof healthReportSchema>;
