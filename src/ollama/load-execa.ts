// execa is loaded on the first spawn, not at start-up, so an MCP client's `initialize` is answered
// sooner. The server preloads it once its services start: Node keeps a module whose files could not
// be opened (EMFILE) failed for good, so no spawn under pressure may be the first to need them.
let execaModule: Promise<typeof import('execa')> | undefined;

export function loadExeca(): Promise<typeof import('execa')> {
  return (execaModule ??= import('execa'));
}

/** Load execa now (a failure is reported by the first spawn that needs it). */
export async function preloadExeca(): Promise<void> {
  await loadExeca().catch(() => {});
}
