import { describe, expect, it } from 'vitest';
import { ShardText } from '../../../src/store/shard-text.js';

const entry = (n: number) => ({ attempts: n, failures: 0, lastStatus: 'ok', escalationReason: null, note: `é"\\\n${n}` });

/** A small deterministic generator, so a failure names a reproducible sequence. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return state / 2 ** 32;
  };
}

describe('ShardText', () => {
  const ids = [
    't',
    '__proto__',
    'constructor',
    '42',
    '7',
    '0',
    '007',
    'quote"and\\slash',
    'é-😀',
    'line\nbreak',
    'toString',
    'x',
    'y',
  ];

  /** 60 random changes to one object, each checked against JSON.stringify; `apply` makes the text after each. */
  function randomRun(seed: number, apply: (text: ShardText, tasks: Record<string, unknown>, changed: string[]) => string): void {
    const next = random(seed);
    const text = new ShardText();
    const tasks = Object.create(null) as Record<string, unknown>;
    text.serialize(tasks);
    for (let step = 0; step < 60; step += 1) {
      const changed: string[] = [];
      for (let n = 1 + Math.floor(next() * 2); n > 0; n -= 1) {
        const id = ids[Math.floor(next() * ids.length)]!;
        if (changed.includes(id)) continue; // patch's contract: each id set or deleted once (a delete and re-add moves it)
        const other = ids[Math.floor(next() * ids.length)]!;
        const roll = next();
        if (roll < 0.45) tasks[id] = entry(step);
        else if (roll < 0.6) delete tasks[id];
        else if (roll < 0.8)
          tasks[id] = tasks[other] ?? entry(step); // one entry object under two ids
        else if (roll < 0.83)
          tasks[id] = undefined; // JSON.stringify leaves it out
        else continue; // nothing changed
        changed.push(id);
      }
      expect(apply(text, tasks, changed), `seed ${seed}, step ${step}`).toBe(JSON.stringify({ tasks }));
    }
  }

  it('serialize makes exactly what JSON.stringify makes, through adds, changes, deletes, moves and odd ids', () => {
    for (let seed = 1; seed <= 20; seed += 1) randomRun(seed, (text, tasks) => text.serialize(tasks));
  });

  it('patch makes exactly what JSON.stringify makes, given the ids that changed', () => {
    for (let seed = 1; seed <= 40; seed += 1) randomRun(seed, (text, tasks, changed) => text.patch(tasks, changed));
  });

  it('a copy of the object (a shard read again from disk) is serialised whole, then patched exactly', () => {
    for (let seed = 1; seed <= 40; seed += 1) {
      let current: Record<string, unknown> | null = null;
      randomRun(seed, (text, tasks, changed) => {
        // Every other step the object is a fresh copy, as after a re-read: the next patch starts from it.
        if (current === null || seed % 2 === changed.length % 2) {
          current = Object.assign(Object.create(null) as Record<string, unknown>, tasks);
          return text.serialize(current);
        }
        for (const id of changed) {
          if (Object.hasOwn(tasks, id)) current[id] = tasks[id];
          else delete current[id];
        }
        return text.patch(current, changed);
      });
    }
  });

  it('patch of another object than the last one serialises it whole', () => {
    const text = new ShardText();
    const a = Object.create(null) as Record<string, unknown>;
    a.t = entry(1);
    text.serialize(a);
    const b = Object.create(null) as Record<string, unknown>;
    b.u = entry(2);
    b.t = entry(3);
    expect(text.patch(b, ['t'])).toBe(JSON.stringify({ tasks: b }));
    b.t = entry(4);
    expect(text.patch(b, ['t'])).toBe(JSON.stringify({ tasks: b }));
  });

  it('freezes the entries whose text it keeps, so an in-place change cannot go unwritten', () => {
    const tasks = Object.create(null) as Record<string, { attempts: number }>;
    tasks.t = { attempts: 1 };
    tasks.u = { attempts: 1 };
    const text = new ShardText();
    text.serialize(tasks);
    tasks.u = { attempts: 2 };
    expect(text.patch(tasks, ['u'])).toBe(JSON.stringify({ tasks }));
    for (const id of ['t', 'u']) {
      expect(() => {
        tasks[id]!.attempts = 3;
      }).toThrow(TypeError);
    }
  });
});
