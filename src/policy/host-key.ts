/**
 * The key of one Ollama among the queues: `OLLAMA_HOST` as the CLI reads it (scheme, host and port;
 * unset, `localhost` and `0.0.0.0` all name the local server), made safe for a file name.
 */
export function ollamaKeyOf(ollamaHost: string | undefined): string {
  let text = (ollamaHost ?? '').trim().toLowerCase();
  let scheme = 'http';
  // As the CLI reads it: without a scheme the port is 11434; `http://` alone means 80, `https://` 443.
  let port = '11434';
  const match = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/.exec(text);
  if (match) {
    scheme = match[1] ?? scheme;
    text = match[2] ?? '';
    port = scheme === 'https' ? '443' : '80';
  }
  text = text.replace(/\/.*$/, '');
  let host = text;
  const withPort = /^(.*):(\d+)$/.exec(text);
  if (withPort) {
    host = withPort[1] ?? '';
    port = withPort[2] ?? port;
  }
  if (host === '' || host === 'localhost' || host === '0.0.0.0' || host === '[::]' || host === '[::1]') host = '127.0.0.1';
  return `${scheme}-${host}-${port}`.replace(/[^a-z0-9._-]/g, '_');
}
