import { startEngine } from './engine';

// Starts the Engine every spec that uses CAIRN_E2E_BASE_URL tests: a brand-new
// deployment. Returns the teardown, which Playwright runs as the global
// teardown.
//
// Environment (see engine.ts for the rest):
//   CAIRN_E2E_BASE_URL        skip starting an Engine and test this one (must be a fresh deployment)
//   CAIRN_E2E_SETUP_CODE_FILE with CAIRN_E2E_BASE_URL: that Engine's <data dir>/setup-code (or
//                             CAIRN_E2E_SETUP_CODE, the code itself)

export default async function globalSetup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.CAIRN_E2E_BASE_URL) {
    console.log(`[e2e] using the Engine at ${process.env.CAIRN_E2E_BASE_URL}`);
    return undefined;
  }
  const engine = await startEngine({ name: 'engine' });
  process.env.CAIRN_E2E_BASE_URL = engine.baseURL;
  process.env.CAIRN_E2E_SETUP_CODE_FILE = engine.setupCodeFile;
  return engine.stop;
}
