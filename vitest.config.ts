import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ when a source file is newer: the e2e tests spawn the built server.
    globalSetup: ['test/global-setup.ts'],
    // End-to-end tests spawn the built server and fake model processes: give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
