import type { HostSpec } from '../../config/hosts.js';
import type { DispatchView } from '../../policy/dispatch.js';
import { HEALTHY, isDown, markDown, markUp, type HostHealth } from '../../policy/host-health.js';
import { chooseHost, otherHostCanServe, type HostOption } from '../../policy/host-routing.js';
import { RouteGate } from './route-gate.js';
import { DispatchAbortedError, type DispatchQueue, type DispatchRequest, type Grant, type Ticket } from './dispatcher.js';

type Env = Readonly<Record<string, string | undefined>>;

/** A routing decision waits this long at most for `ollama ps` and `ollama list` of the hosts; then it goes on with what is known. */
const FRESHEN_WAIT_MS = 1_500;

/** A host's `ollama list`, as the pool needs it. */
export type HostListing =
  | { readonly ok: true; readonly models: readonly string[] }
  | { readonly ok: false; readonly unreachable: boolean; readonly reason: string };

/** One Ollama host of the pool: its own queue (and through it its own `ollama ps`), its own `ollama list`. */
export interface PoolHost {
  /** Its name, as OLLAMA_MCP_HOSTS writes it. */
  readonly name: string;
  readonly spec: HostSpec;
  /** The environment of its CLI children (OLLAMA_HOST set to it). */
  readonly env: Env;
  readonly queue: DispatchQueue;
  /** Its installed models (`ollama list`, cached by the caller); absent: not known, every model may be there. */
  readonly list?: () => Promise<HostListing>;
}

/** One host as health shows it. */
export interface HostStatus {
  readonly name: string;
  readonly weight: number;
  /** Epoch ms until which it is skipped; null: up. */
  readonly downUntil: number | null;
  readonly lastError: string | null;
  readonly running: number;
  readonly waiting: number;
  readonly loaded: readonly string[];
}

interface HostPoolOptions {
  readonly hosts: readonly PoolHost[];
  /** Epoch ms (down-until times are shown to people). */
  readonly clock: () => number;
  readonly warn: (message: string) => void;
}

/**
 * The Ollama hosts this server sends to (OLLAMA_MCP_HOSTS), each with its own queue: an attempt is
 * routed to one host by the pure policy (policy/host-routing.ts) and waits in that host's queue; its
 * grant carries the host, so the attempt spawns with OLLAMA_HOST set to it. A host that cannot be
 * reached is skipped for a backed-off time (policy/host-health.ts). With one host, every attempt goes
 * to it, at once, as before.
 */
export class HostPool implements DispatchQueue {
  readonly #options: HostPoolOptions;
  readonly #hosts: readonly PoolHost[];
  readonly #health = new Map<string, HostHealth>();
  readonly #installed = new Map<string, HostListing>();
  readonly #gate: RouteGate;

  constructor(options: HostPoolOptions) {
    if (options.hosts.length === 0) throw new Error('a host pool needs a host');
    this.#options = options;
    this.#hosts = options.hosts;
    this.#gate = new RouteGate(options.hosts[0]!.queue.limit);
  }

  get running(): number {
    return this.#hosts.reduce((sum, host) => sum + host.queue.running, 0);
  }

  get waiting(): number {
    return this.#hosts.reduce((sum, host) => sum + host.queue.waiting, 0);
  }

  /** OLLAMA_MCP_CONCURRENCY (each host's queue keeps it). */
  get limit(): number {
    return this.#hosts[0]!.queue.limit;
  }

  /** Several hosts: the pool routes. */
  get several(): boolean {
    return this.#hosts.length > 1;
  }

  /** The first host's queue (the only one, with one host): the shared queue health shows. */
  get first(): DispatchQueue {
    return this.#hosts[0]!.queue;
  }

  residency(): { loaded: string[]; capacity: number; memoryBudget: number | null } {
    if (!this.several) return this.first.residency();
    const all = this.#hosts.map((host) => host.queue.residency());
    return {
      loaded: [...new Set(all.flatMap((r) => r.loaded))],
      capacity: all.reduce((sum, r) => sum + r.capacity, 0),
      memoryBudget: null,
    };
  }

  look(): void {
    for (const host of this.#hosts) host.queue.look();
  }

  view(): DispatchView {
    return this.first.view();
  }

  async freshen(): Promise<void> {
    await Promise.all(this.#hosts.map((host) => host.queue.freshen()));
  }

  /** Every host: whether it is down, its queue, what it has loaded (for health and doctor). */
  status(): HostStatus[] {
    const now = this.#options.clock();
    return this.#hosts.map((host) => {
      const health = this.#healthOf(host.name);
      return {
        name: host.name,
        weight: host.spec.weight,
        downUntil: isDown(health, now) ? health.downUntil : null,
        lastError: health.lastError,
        running: host.queue.running,
        waiting: host.queue.waiting,
        loaded: host.queue.residency().loaded,
      };
    });
  }

  /** A host answered (`ollama ps`, `ollama list`, a call's first byte): up. */
  reached(name: string): void {
    this.#health.set(name, markUp(this.#healthOf(name)));
  }

  /** A host could not be reached: skipped for a backed-off time. */
  unreachable(name: string, error: string): void {
    const health = this.#healthOf(name);
    const now = this.#options.clock();
    if (isDown(health, now)) return; // attempts under way when it went down say nothing new
    const next = markDown(health, now, error);
    this.#health.set(name, next);
    if (this.several) {
      const seconds = Math.round(((next.downUntil ?? now) - now) / 1000);
      this.#options.warn(`Ollama host ${name} cannot be reached (${error}); calls go to the other hosts for ${seconds} s`);
    }
  }

  request(request: DispatchRequest, signal: AbortSignal | undefined): Ticket {
    if (!this.several) return this.#send(this.#hosts[0]!, request, signal);
    let inner: Ticket | null = null;
    // The server's and the batch's limits hold over all hosts together: wait for room before routing.
    const gate = this.#gate.enter(request.batch, signal);
    const granted = (async () => {
      const leave = await gate.entered;
      try {
        await this.#freshenFor();
        if (signal?.aborted) throw new DispatchAbortedError();
        const choice = chooseHost(this.#routeOptions(request), request.modelKey, request.host ?? null);
        const host = this.#hosts.find((h) => h.name === choice?.name) ?? this.#hosts[0]!;
        inner = this.#send(host, request, signal);
        const grant = await inner.granted;
        return {
          ...grant,
          release: () => {
            grant.release();
            leave();
          },
        };
      } catch (error) {
        leave();
        throw error;
      }
    })();
    return { granted, reason: () => inner?.reason() ?? gate.reason() };
  }

  async close(): Promise<void> {
    await Promise.all(this.#hosts.map((host) => host.queue.close?.()));
  }

  #healthOf(name: string): HostHealth {
    return this.#health.get(name) ?? HEALTHY;
  }

  /** What routing knows of each host for an attempt of `request.modelKey`. */
  #routeOptions(request: DispatchRequest): HostOption[] {
    const now = this.#options.clock();
    return this.#hosts.map((host) => ({
      name: host.name,
      weight: host.spec.weight,
      down: isDown(this.#healthOf(host.name), now),
      installed: this.#installedOn(host.name, request.modelKey),
      view: host.queue.view(),
      parallel: host.spec.parallel ?? request.parallel,
    }));
  }

  #installedOn(name: string, modelKey: string): 'yes' | 'no' | 'unknown' {
    const listing = this.#installed.get(name);
    if (listing === undefined || !listing.ok) return 'unknown';
    return listing.models.includes(modelKey) ? 'yes' : 'no';
  }

  /** Have each host that is not down say what it has loaded and installed, when stale; wait a bounded time. */
  async #freshenFor(): Promise<void> {
    const now = this.#options.clock();
    const asks = this.#hosts
      .filter((host) => !isDown(this.#healthOf(host.name), now))
      .map(async (host) => {
        const [listing] = await Promise.all([host.list?.(), host.queue.freshen()]);
        if (listing === undefined) return;
        this.#installed.set(host.name, listing);
        if (listing.ok) this.reached(host.name);
        else if (listing.unreachable) this.unreachable(host.name, listing.reason);
      });
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, FRESHEN_WAIT_MS);
      timer.unref();
    });
    await Promise.race([Promise.all(asks).catch(() => {}), bound]);
    clearTimeout(timer);
  }

  /** Queue the attempt on `host`; its grant carries the host. */
  #send(host: PoolHost, request: DispatchRequest, signal: AbortSignal | undefined): Ticket {
    const parallel = host.spec.parallel ?? request.parallel;
    const ticket = host.queue.request({ ...request, parallel }, signal);
    return { granted: ticket.granted.then((grant) => this.#hostGrant(host, request, grant)), reason: ticket.reason };
  }

  #hostGrant(host: PoolHost, request: DispatchRequest, grant: Grant): Grant {
    return {
      ...grant,
      host: { name: host.name, env: host.env, named: this.several },
      answerBegan: () => {
        this.reached(host.name);
        grant.answerBegan();
      },
      unreachable: (error) => {
        this.unreachable(host.name, error);
        if (request.host !== undefined || !otherHostCanServe(this.#routeOptions(request), host.name)) return null;
        return (
          `Ollama host ${host.name} could not be reached (${error}); the host failed, not the model or the task. ` +
          `Not counted: the call goes on at once on another host that has ${request.modelKey}`
        );
      },
    };
  }
}
