import { describe, expect, it } from 'vitest';
import { ForeignTaskError, ShardText } from '../../../src/store/shard-text.js';

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
  it('makes exactly what JSON.stringify makes, through adds, changes, deletes, moves and odd ids', () => {
    const ids = [
      't',
      '__proto__',
      'constructor',
      '42',
      '7',
      '0',
      'quote"and\\slash',
      'é-😀',
      'line\nbreak',
      'toString',
      'x',
      'y',
    ];
    for (let seed = 1; seed <= 20; seed += 1) {
      const next = random(seed);
      const text = new ShardText();
      const tasks = Object.create(null) as Record<string, unknown>;
      for (let step = 0; step < 60; step += 1) {
        const id = ids[Math.floor(next() * ids.length)]!;
        const other = ids[Math.floor(next() * ids.length)]!;
        const roll = next();
        if (roll < 0.4) tasks[id] = entry(step);
        else if (roll < 0.6) delete tasks[id];
        else if (roll < 0.8)
          tasks[id] = tasks[other] ?? entry(step); // one entry object under two ids
        else if (roll < 0.85) tasks[id] = undefined; // JSON.stringify leaves it out
        // else: nothing changed
        expect(text.serialize(tasks), `seed ${seed}, step ${step}`).toBe(JSON.stringify({ tasks }));
      }
    }
  });

  it('freezes the entries it has serialised, so an in-place change cannot go unwritten', () => {
    const tasks = Object.create(null) as Record<string, { attempts: number }>;
    tasks.t = { attempts: 1 };
    new ShardText().serialize(tasks);
    expect(() => {
      tasks.t!.attempts = 2;
    }).toThrow(TypeError);
  });

  it('checks ownership of the task ids whose entries are new or changed, and remembers nothing from a refused call', () => {
    const text = new ShardText();
    const tasks = Object.create(null) as Record<string, unknown>;
    tasks.mine = entry(1);
    const owns = (taskId: string) => taskId.startsWith('mine');
    expect(text.serialize(tasks, owns)).toBe(JSON.stringify({ tasks }));
    tasks.theirs = entry(2);
    expect(() => text.serialize(tasks, owns)).toThrow(ForeignTaskError);
    expect(() => text.serialize(tasks, owns)).toThrow('"theirs"');
    delete tasks.theirs;
    tasks.mine = entry(3);
    expect(text.serialize(tasks, owns)).toBe(JSON.stringify({ tasks }));
  });
});
