import { defineConfig, devices } from '@playwright/test';

// End-to-end tests drive Debian's Chromium (never a downloaded browser)
// against a real Engine that e2e/global-setup.ts starts from ../bin/cairn
// with a fresh data directory. See README.md.
const chromium = process.env.CAIRN_E2E_CHROMIUM ?? '/usr/bin/chromium';

/** Specs that take minutes, started before the others. */
const LONG_SPECS = [/watchdogs\.spec\.ts/];

const browser = {
  ...devices['Desktop Chrome'],
  viewport: { width: 1366, height: 860 },
  headless: true,
  launchOptions: {
    executablePath: chromium,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  },
};

export default defineConfig({
  testDir: './e2e',
  outputDir: './test-results',
  globalSetup: './e2e/global-setup.ts',
  // A spec file's tests run in order in one worker: they walk one
  // deployment and the steps depend on each other. Files run side by side:
  // each spec but console and apidocs starts an Engine of its own (engine.ts:
  // its own data directory, PostgreSQL cluster and free ports), its agents
  // use their own config directories, host names and temporary work
  // directories; console walks the global Engine through setup and apidocs
  // only reads that Engine's public /api/docs. Two workers: the specs mostly
  // wait on their Engines and agents, so a second one nearly halves the
  // stage on two cores (docs/benchmarks.md "Test suite time").
  // CAIRN_E2E_WORKERS overrides it (1 to debug one walk at a time).
  fullyParallel: false,
  workers: Number(process.env.CAIRN_E2E_WORKERS ?? 2),
  retries: 0,
  forbidOnly: Boolean(process.env.CI),
  timeout: 300_000,
  expect: { timeout: 20_000 },
  reporter: [['list'], ['html', { open: 'never', outputFolder: 'playwright-report' }]],
  use: {
    // Set by global setup once the Engine answers /ready.
    baseURL: process.env.CAIRN_E2E_BASE_URL,
    viewport: { width: 1366, height: 860 },
    screenshot: 'only-on-failure',
    trace: 'retain-on-failure',
    video: 'off',
    actionTimeout: 20_000,
    navigationTimeout: 30_000,
  },
  // Specs are handed to workers in the order of this list: the longest
  // walk (watchdogs waits on real evaluation, inventory and resolve
  // windows, ~5 min) used to sort last and ran alone at the end while the
  // other worker idled. It now starts first; the rest follow by name.
  projects: [
    { name: 'chromium-long', testMatch: LONG_SPECS, use: browser },
    { name: 'chromium', testIgnore: LONG_SPECS, use: browser },
  ],
});
