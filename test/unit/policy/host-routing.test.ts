import { describe, expect, it } from 'vitest';
import type { DispatchView } from '../../../src/policy/dispatch.js';
import { chooseHost, otherHostCanServe, type HostOption } from '../../../src/policy/host-routing.js';

function view(over: Partial<DispatchView> = {}): DispatchView {
  return {
    now: 0,
    waiting: [],
    running: new Map(),
    batchRunning: new Map(),
    loaded: [],
    lastStarted: new Map(),
    room: { kind: 'count', capacity: 1 },
    concurrency: 8,
    switchAfterMs: 30_000,
    ...over,
  };
}

function host(name: string, over: Partial<HostOption> = {}): HostOption {
  return { name, weight: 1, down: false, installed: 'yes', view: view(), parallel: 1, ...over };
}

const busy = (model: string, n = 1) => ({ loaded: [model], running: new Map([[model, n]]) });

describe('chooseHost', () => {
  it('goes where the model is loaded with a free slot, even past an empty host listed first', () => {
    const choice = chooseHost([host('empty'), host('warm', { view: view({ loaded: ['a'] }) })], 'a', null);
    expect(choice).toEqual({ name: 'warm', why: 'loaded' });
  });

  it('else loads it where no busy model must give way, preferring a host with free room over evicting an idle model', () => {
    const options = [
      host('holds-b', { view: view({ loaded: ['b'] }) }),
      host('free', { view: view({ room: { kind: 'count', capacity: 2 }, loaded: ['c'] }) }),
    ];
    expect(chooseHost(options, 'a', null)).toEqual({ name: 'free', why: 'loadable' });
  });

  it('else waits where it will be served soonest: its model loaded there, then the fewest ahead per weight', () => {
    const loadedBusy = host('a-busy', { view: view(busy('a', 1)) });
    const otherBusy = host('b-busy', { view: view(busy('b', 1)) });
    expect(chooseHost([otherBusy, loadedBusy], 'a', null)).toEqual({ name: 'a-busy', why: 'soonest' });
    const deep = host('deep', {
      view: view({
        ...busy('a', 1),
        waiting: [1, 2, 3].map((id) => ({ id, modelKey: 'a', parallel: 1, since: 0, batch: null })),
      }),
    });
    expect(chooseHost([deep, host('shallow', { view: view(busy('a', 1)) })], 'a', null)?.name).toBe('shallow');
    expect(chooseHost([host('shallow', { view: view(busy('a', 1)) }), { ...deep, weight: 5 }], 'a', null)?.name).toBe('deep');
  });

  it('weights break ties, then the order of the list', () => {
    expect(chooseHost([host('one'), host('three', { weight: 3 })], 'a', null)?.name).toBe('three');
    expect(chooseHost([host('first'), host('second')], 'a', null)?.name).toBe('first');
  });

  it('skips a host that is down or lacks the model; takes one only when no other may serve', () => {
    const options = [
      host('down', { down: true, view: view({ loaded: ['a'] }) }),
      host('lacks', { installed: 'no' }),
      host('maybe', { installed: 'unknown' }),
    ];
    expect(chooseHost(options, 'a', null)).toEqual({ name: 'maybe', why: 'loadable' });
    expect(chooseHost(options.slice(0, 2), 'a', null)).toEqual({ name: 'down', why: 'down' });
    expect(chooseHost([host('lacks', { installed: 'no' })], 'a', null)).toEqual({ name: 'lacks', why: 'not_installed' });
  });

  it('a pinned host is taken whatever it holds; an unlisted one is no choice', () => {
    const options = [host('warm', { view: view({ loaded: ['a'] }) }), host('cold')];
    expect(chooseHost(options, 'a', 'cold')).toEqual({ name: 'cold', why: 'pinned' });
    expect(chooseHost(options, 'a', 'elsewhere')).toBeNull();
  });
});

describe('otherHostCanServe', () => {
  it('is true only for another host that is up and may have the model', () => {
    expect(otherHostCanServe([host('a'), host('b')], 'a')).toBe(true);
    expect(otherHostCanServe([host('a'), host('b', { down: true })], 'a')).toBe(false);
    expect(otherHostCanServe([host('a'), host('b', { installed: 'no' })], 'a')).toBe(false);
    expect(otherHostCanServe([host('a'), host('b', { installed: 'unknown' })], 'a')).toBe(true);
  });
});
