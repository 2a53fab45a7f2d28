// execa and its dependencies are ~130 modules: loaded on the first spawn, not at start-up, so an MCP
// client's `initialize` is answered sooner. Later calls reuse the same promise (one resolved await).
let execaModule: Promise<typeof import('execa')> | undefined;

export function loadExeca(): Promise<typeof import('execa')> {
  return (execaModule ??= import('execa'));
}
