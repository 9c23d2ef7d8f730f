import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Starts a throwaway PostgreSQL for the PostgreSQL tests unless CAIRN_TEST_POSTGRES_URL names one.
    globalSetup: ['test/global-postgres.ts'],
    // The JSON report lets .ci/run print a plain 'N passed, N failed' closing line.
    reporters: ['default', 'json'],
    outputFile: { json: 'coverage/vitest-results.json' },
  },
});
