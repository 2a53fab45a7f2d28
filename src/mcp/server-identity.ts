import { createRequire } from 'node:module';

// Its own module so that the CLI's `report`, `--help` and `--version` can name the server without
// loading the server (the SDK, the tools and their schemas: most of a start's time).
const packageJson = createRequire(import.meta.url)('../../package.json') as { name: string; version: string };

export const SERVER_NAME = packageJson.name;
export const SERVER_VERSION = packageJson.version;
