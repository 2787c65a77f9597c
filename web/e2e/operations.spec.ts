import { expect, test, type Page } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, signIn } from './fleet';

// Remote operations from the console on a real agent: stop and start a
// real init-script service (the agent controls SysV scripts in a private
// directory here, since this machine has no systemd), and terminate a real
// process this test started. Each goes through the Engine's command path
// (a Temporal workflow on the site's queue) and ends in a toast.

const USERNAME = 'admin';
const PASSWORD = 'operations e2e admin password';
const AGENT_HOST = 'e2e-ops-agent';
const SERVICE = 'cairn-e2e-demo';
// A copy of sleep under its own name, so the process list has exactly one.
const SLEEPER = 'e2esleeper';

let engine: Engine;
let agent: Agent | undefined;
let sleeper: ChildProcess | undefined;
const work = mkdtempSync(join(tmpdir(), 'cairn-e2e-ops-'));
const initDir = join(work, 'init.d');

function writeService() {
  const base = join(work, SERVICE);
  mkdirSync(initDir, { recursive: true });
  const script = `#!/bin/sh
BASE='${base}'
running() { [ -f "$BASE.pid" ] && kill -0 "$(cat "$BASE.pid")" 2>/dev/null; }
case "$1" in
start) running && exit 0; sleep 100000 >/dev/null 2>&1 & echo $! > "$BASE.pid" ;;
stop) if running; then kill "$(cat "$BASE.pid")"; fi; rm -f "$BASE.pid" ;;
restart) "$0" stop; "$0" start ;;
status) running && exit 0; exit 3 ;;
*) exit 2 ;;
esac
`;
  writeFileSync(join(initDir, SERVICE), script);
  chmodSync(join(initDir, SERVICE), 0o755);
  return base;
}


function serviceRunning(base: string): boolean {
  if (!existsSync(`${base}.pid`)) return false;
  try {
    process.kill(Number(readFileSync(`${base}.pid`, 'utf8').trim()), 0);
    return true;
  } catch {
    return false;
  }
}

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-operations', publicHost: 'localhost' });
});

test.afterAll(async () => {
  sleeper?.kill('SIGKILL');
  await agent?.stop();
  await engine?.stop();
  const base = join(work, SERVICE);
  if (existsSync(join(initDir, SERVICE))) spawn(join(initDir, SERVICE), ['stop']);
  if (existsSync(`${base}.pid`)) rmSync(`${base}.pid`);
  rmSync(work, { recursive: true, force: true });
});

async function confirmIn(page: Page, button: string) {
  const dialog = page.getByRole('dialog');
  await expect(dialog).toBeVisible();
  await dialog.getByRole('button', { name: button, exact: true }).click();
}

test('services stop and start, and a process is terminated, on a real agent', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const api = page.request;
  const serviceBase = writeService();

  const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
  agent = await enrollConnected(api, base, auth, { name: 'agent-operations', hostname: AGENT_HOST, slug: 'e2e-ops', env: { CAIRN_AGENT_INIT_DIR: initDir } });
  await expect
    .poll(async () => (await (await api.get(`${base}/api/device/services/${AGENT_HOST}`)).text()).includes(SERVICE), { timeout: 90_000 })
    .toBe(true);

  await test.step('start, then stop, the service from the Services tab', async () => {
    await page.goto(`${base}/devices/${AGENT_HOST}`);
    await page.getByRole('tab', { name: 'Services', exact: true }).click();
    const panel = page.getByRole('tabpanel');
    await expect(panel).toContainText(SERVICE);

    await panel.getByRole('button', { name: `Start ${SERVICE}`, exact: true }).click();
    await confirmIn(page, 'Start');
    await expect(page.getByRole('region', { name: 'Notifications' })).toContainText(`${SERVICE}: running`, { timeout: 90_000 });
    expect(serviceRunning(serviceBase)).toBe(true);

    await panel.getByRole('button', { name: `Stop ${SERVICE}`, exact: true }).click();
    await confirmIn(page, 'Stop');
    await expect(page.getByRole('region', { name: 'Notifications' })).toContainText(`${SERVICE}: stopped`, { timeout: 90_000 });
    expect(serviceRunning(serviceBase)).toBe(false);
    await page.screenshot({ path: join(artifactsDir, 'operations-01-services.png'), fullPage: true });
  });

  await test.step('terminate a process this test started', async () => {
    const bin = join(work, SLEEPER);
    copyFileSync('/bin/sleep', bin);
    chmodSync(bin, 0o755);
    sleeper = spawn(bin, ['100000'], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((r) => sleeper!.once('exit', (_code, signal) => r(signal)));

    await page.getByRole('tab', { name: 'Processes', exact: true }).click();
    const panel = page.getByRole('tabpanel');
    await panel.getByRole('button', { name: 'Refresh processes' }).click();
    await panel.getByLabel('Filter processes').fill(SLEEPER);
    const terminate = panel.getByRole('button', { name: `Terminate ${SLEEPER} (PID ${sleeper.pid})` });
    await expect(terminate).toBeVisible({ timeout: 60_000 });
    await terminate.click();
    await confirmIn(page, 'Terminate');
    expect(await exited).toBe('SIGTERM');
    await expect(page.getByRole('region', { name: 'Notifications' })).toContainText(SLEEPER, { timeout: 60_000 });
    await page.screenshot({ path: join(artifactsDir, 'operations-02-processes.png'), fullPage: true });
  });

  await test.step('every operation is in the device\'s activity', async () => {
    await page.getByRole('tab', { name: 'Activity', exact: true }).click();
    const panel = page.getByRole('tabpanel');
    await expect(panel).toContainText(`Start ${SERVICE}`);
    await expect(panel).toContainText(`Stop ${SERVICE}`);
    await expect(panel).toContainText(`Terminate ${SLEEPER}`);
  });
});
