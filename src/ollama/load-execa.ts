// execa is loaded on the first spawn, not at start-up, so an MCP client's `initialize` is answered sooner.
let execaModule: Promise<typeof import('execa')> | undefined;

export function loadExeca(): Promise<typeof import('execa')> {
  return (execaModule ??= import('execa'));
}
