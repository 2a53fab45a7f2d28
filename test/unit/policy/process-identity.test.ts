import { describe, expect, it } from 'vitest';
import {
  commandMatches,
  judgeChildRecord,
  livenessOf,
  parseStartTime,
  type ChildRecord,
  type ProcView,
} from '../../../src/policy/process-identity.js';

const HERE = { host: 'box', boot: 'boot-1', pidns: 'pid:[4026531836]' };

/** A fake /proc: pid -> start time and argv. */
function fakeProc(processes: Record<number, { start: number; cmdline: string[] }>): ProcView {
  return {
    startOf: (pid) => processes[pid]?.start ?? null,
    exists: (pid) => pid in processes,
    cmdlineOf: (pid) => processes[pid]?.cmdline ?? null,
  };
}

const ARGS = ['run', 'llama3.2', '--nowordwrap'];
const record: ChildRecord = {
  ...HERE,
  pid: 200,
  start: 5000,
  bin: 'ollama',
  args: ARGS,
  owner: { pid: 100, start: 4000 },
  at: 0,
};
const child = { start: 5000, cmdline: ['ollama', ...ARGS] };
const server = { start: 4000, cmdline: ['node', '/usr/lib/ollama-runner-mcp/dist/cli.js'] };

describe('parseStartTime', () => {
  it('reads field 22, counting from the last `)` (a command name may hold spaces and parentheses)', () => {
    const rest = 'S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 123456 999 0';
    expect(parseStartTime(`42 (ollama) ${rest}`)).toBe(123456);
    expect(parseStartTime(`42 (a) (b c) ${rest}`)).toBe(123456);
  });
  it('null for text that is not a stat line', () => {
    expect(parseStartTime('')).toBeNull();
    expect(parseStartTime('42 (x) S 1 2')).toBeNull();
  });
});

describe('commandMatches', () => {
  it('the CLI as spawned, or a script run through its #! interpreter with its resolved path', () => {
    expect(commandMatches(['ollama', ...ARGS], 'ollama', ARGS)).toBe(true);
    expect(commandMatches(['node', '/t/fake-ollama.mjs', ...ARGS], '/t/fake-ollama.mjs', ARGS)).toBe(true);
    expect(commandMatches(['/usr/bin/env', 'node', '/t/fake-ollama.mjs', ...ARGS], 'fake-ollama.mjs', ARGS)).toBe(true);
  });
  it('another program, or other arguments, is another process', () => {
    expect(commandMatches(['bash'], 'ollama', ARGS)).toBe(false);
    expect(commandMatches(['vim', ...ARGS], 'ollama', ARGS)).toBe(false);
    expect(commandMatches(['ollama', 'run', 'qwen3', '--nowordwrap'], 'ollama', ARGS)).toBe(false);
    expect(commandMatches(['ollama', ...ARGS, '--verbose'], 'ollama', ARGS)).toBe(false);
  });
});

describe('judgeChildRecord', () => {
  it("never touches a live server's child", () => {
    expect(judgeChildRecord(record, HERE, fakeProc({ 100: server, 200: child }))).toEqual({ action: 'keep', why: 'owner_alive' });
  });

  it('ends a child still running whose server is gone', () => {
    expect(judgeChildRecord(record, HERE, fakeProc({ 200: child }))).toEqual({ action: 'end' });
  });

  it('a server pid now naming another process (another start time) is a gone server', () => {
    const reused = { start: 9999, cmdline: ['bash'] };
    expect(judgeChildRecord(record, HERE, fakeProc({ 100: reused, 200: child }))).toEqual({ action: 'end' });
  });

  it('forgets a child that has gone', () => {
    expect(judgeChildRecord(record, HERE, fakeProc({}))).toEqual({ action: 'forget', why: 'child_gone' });
  });

  it("never signals a process that took the child's pid: another start time, or another command line", () => {
    const proc1 = fakeProc({ 200: { start: 7777, cmdline: ['ollama', ...ARGS] } });
    expect(judgeChildRecord(record, HERE, proc1)).toEqual({ action: 'forget', why: 'pid_reused' });
    const proc2 = fakeProc({ 200: { start: 5000, cmdline: ['postgres'] } });
    expect(judgeChildRecord(record, HERE, proc2)).toEqual({ action: 'forget', why: 'pid_reused' });
  });

  it('leaves alone records from another host or pid namespace (their pids mean nothing here)', () => {
    const proc = fakeProc({ 200: child });
    expect(judgeChildRecord({ ...record, host: 'other' }, HERE, proc)).toEqual({ action: 'keep', why: 'elsewhere' });
    expect(judgeChildRecord({ ...record, pidns: 'pid:[1]' }, HERE, proc)).toEqual({ action: 'keep', why: 'elsewhere' });
  });

  it('forgets, without signalling, records from before a reboot', () => {
    expect(judgeChildRecord({ ...record, boot: 'boot-0' }, HERE, fakeProc({ 200: child }))).toEqual({
      action: 'forget',
      why: 'previous_boot',
    });
  });
});

describe('livenessOf', () => {
  it('by start time where there is /proc; by the pid alone where there is none', () => {
    const proc = fakeProc({ 100: server });
    expect(livenessOf({ pid: 100, start: 4000, ...HERE }, HERE, proc)).toBe('alive');
    expect(livenessOf({ pid: 100, start: 1, ...HERE }, HERE, proc)).toBe('dead');
    expect(livenessOf({ pid: 101, start: 4000, ...HERE }, HERE, proc)).toBe('dead');
    const noProc = { host: 'mac', boot: null, pidns: null };
    expect(livenessOf({ pid: 100, start: null, ...noProc }, noProc, proc)).toBe('alive');
    expect(livenessOf({ pid: 101, start: null, ...noProc }, noProc, proc)).toBe('dead');
    expect(livenessOf({ pid: 100, start: 4000, ...HERE, host: 'other' }, HERE, proc)).toBe('unknown');
  });
});
