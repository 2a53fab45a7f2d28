/**
 * The HTTP transport's bearer token when none is configured: generated once, kept `0600` in the
 * data dir, and reused at every start while it can be trusted, so clients set up with it keep
 * working across restarts (delete the file for a new one). Several servers starting at once agree
 * on one token: the file is created with a hard link, which fails when another server made it first.
 */
import { randomBytes } from 'node:crypto';
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { HTTP_TOKEN_MIN_CHARS } from '../../config/ranges.js';
import { HttpServerError, isHttpServerError } from './errors.js';

export const TOKEN_FILE_NAME = 'http-token';
const TOKEN_FILE_MODE = 0o600;
/** A token file holds one short line: anything longer is not one. */
const MAX_TOKEN_FILE_BYTES = 4096;
/** A token as a header carries it: printable ASCII, no spaces. */
const TOKEN_PATTERN = new RegExp(`^[\\x21-\\x7e]{${HTTP_TOKEN_MIN_CHARS},1024}$`);
/** Never follow a link someone put in place of the file, and never block on a FIFO. */
const OPEN_FOR_CHECK = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

export interface TokenFile {
  readonly file: string;
  readonly token: string;
  /** `created`: there was no file; `kept`: a valid one from an earlier start; `replaced`: the old one could not be trusted. */
  readonly origin: 'created' | 'kept' | 'replaced';
  /** What was wrong with the old file, when `origin` is `replaced`. */
  readonly replacedBecause?: string;
}

/** What an existing token file's metadata must show before its token is used. */
interface TokenFileFacts {
  readonly isFile: boolean;
  readonly size: number;
  readonly uid: number;
  readonly mode: number;
}

/**
 * Why a token file cannot be trusted, or null. `ownUid` is undefined where there are no POSIX
 * owners (Windows: the per-user data dir's ACL protects it).
 */
export function tokenFileProblem(facts: TokenFileFacts, ownUid: number | undefined): string | null {
  if (!facts.isFile) return 'was not a regular file';
  if (ownUid !== undefined && facts.uid !== ownUid) return `belonged to another user (uid ${facts.uid})`;
  if (ownUid !== undefined && (facts.mode & 0o077) !== 0) {
    return `could be read or changed by other users (mode 0${(facts.mode & 0o777).toString(8)})`;
  }
  if (facts.size > MAX_TOKEN_FILE_BYTES) return 'was too large to hold a token';
  return null;
}

/** The token a file's text holds (one line, surrounding whitespace ignored), or null. */
export function tokenInText(text: string): string | null {
  const token = text.trim();
  return TOKEN_PATTERN.test(token) ? token : null;
}

/** The token in `dir`'s token file, made (or remade, when it cannot be trusted) as needed. Throws HttpServerError. */
export async function loadOrCreateTokenFile(dir: string): Promise<TokenFile> {
  const file = path.join(dir, TOKEN_FILE_NAME);
  try {
    return await settleTokenFile(file);
  } catch (error) {
    if (isHttpServerError(error)) throw error;
    const cause = error as NodeJS.ErrnoException;
    throw new HttpServerError(
      'token_file_error',
      `cannot keep the HTTP token in ${file} (${cause.code ?? 'error'}: ${cause.message}): ` +
        'make that directory writable by this user, or set OLLAMA_MCP_HTTP_TOKEN',
      'OLLAMA_MCP_HTTP_TOKEN',
    );
  }
}

async function settleTokenFile(file: string): Promise<TokenFile> {
  let replacedBecause: string | undefined;
  const outcome = (token: string, fresh: boolean): TokenFile =>
    replacedBecause === undefined
      ? { file, token, origin: fresh ? 'created' : 'kept' }
      : { file, token, origin: 'replaced', replacedBecause };
  // Another server may create or replace the file between two steps: look again, a few times.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const existing = await readTokenFile(file);
    if (existing.kind === 'valid') return outcome(existing.token, false);
    if (existing.kind === 'untrusted') {
      replacedBecause = existing.problem;
      await fs.unlink(file).catch(ignoreCode('ENOENT'));
    }
    const token = randomBytes(32).toString('base64url');
    if (await createExclusive(file, token)) return outcome(token, true);
  }
  throw new HttpServerError('token_file_error', `${file} kept changing while this server started: start it again`);
}

type ExistingToken = { kind: 'absent' } | { kind: 'valid'; token: string } | { kind: 'untrusted'; problem: string };

async function readTokenFile(file: string): Promise<ExistingToken> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, OPEN_FOR_CHECK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'absent' };
    if (code === 'ELOOP') return { kind: 'untrusted', problem: 'was a symbolic link' };
    throw error;
  }
  try {
    const stats = await handle.stat();
    const facts = { isFile: stats.isFile(), size: stats.size, uid: stats.uid, mode: stats.mode };
    const problem = tokenFileProblem(facts, process.getuid?.());
    if (problem !== null) return { kind: 'untrusted', problem };
    const token = tokenInText(await handle.readFile('utf8'));
    if (token === null) {
      return { kind: 'untrusted', problem: `did not hold a token (${HTTP_TOKEN_MIN_CHARS}+ printable characters, no spaces)` };
    }
    return { kind: 'valid', token };
  } finally {
    await handle.close();
  }
}

/**
 * Write the token to a temp file (0600), then link it in place: the link fails when the file
 * exists, so the first server to create it wins and the others read its token. False when it lost.
 */
async function createExclusive(file: string, token: string): Promise<boolean> {
  const temp = path.join(path.dirname(file), `.${TOKEN_FILE_NAME}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  const handle = await fs.open(temp, 'wx', TOKEN_FILE_MODE);
  try {
    try {
      await handle.writeFile(`${token}\n`, 'utf8');
      await handle.sync(); // a power loss must not leave an empty file that replaces the token at the next start
    } finally {
      await handle.close();
    }
    return await linkInPlace(temp, file);
  } finally {
    await fs.unlink(temp).catch(ignoreCode('ENOENT'));
  }
}

async function linkInPlace(temp: string, file: string): Promise<boolean> {
  try {
    await fs.link(temp, file);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    // A filesystem without hard links (FAT): a rename is still atomic, the last server to start wins.
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
    await fs.rename(temp, file);
    return true;
  }
}

function ignoreCode(code: string): (error: NodeJS.ErrnoException) => void {
  return (error) => {
    if (error.code !== code) throw error;
  };
}
