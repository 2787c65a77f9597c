import { expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { hostname as machineHostname } from 'node:os';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, signIn } from './fleet';

// A real cairn-agent on this machine enrolls with an Engine of its own, is
// approved through the API, and the console shows it: the devices grid,
// then the device page, whose tabs must hold this machine's real data.

const USERNAME = 'admin';
const PASSWORD = 'devices e2e admin password';
const AGENT_HOST = 'e2e-console-agent';

let engine: Engine;
let agent: Agent | undefined;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-devices', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
});

function prettyName(): string {
  const line = readFileSync('/etc/os-release', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('PRETTY_NAME='));
  return (line ?? '').replace('PRETTY_NAME=', '').replace(/^"|"$/g, '');
}

test('an enrolled agent shows in the devices grid and its page holds this machine\'s data', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const api = page.request;

  // Changes through page.request carry the session as a bearer token (a
  // cookie-authenticated change would need the CSRF header too).
  let auth: Record<string, string> = {};
  await test.step('bootstrap and sign in', async () => {
    auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
  });

  await test.step('enroll a real agent and approve it', async () => {
    agent = await enrollConnected(api, base, auth, { name: 'agent-devices', hostname: AGENT_HOST, slug: 'e2e-devices' });
    await expect
      .poll(async () => (await (await api.get(`${base}/api/device/details/${AGENT_HOST}`)).text()).includes('"bash"'), { timeout: 60_000 })
      .toBe(true);
  });

  await test.step('the devices grid shows it Connected', async () => {
    await page.goto(`${base}/devices`);
    const row = page.getByRole('row', { name: new RegExp(AGENT_HOST) });
    await expect(row).toBeVisible();
    await expect(row).toContainText('Connected');
    await expect(row).toContainText(prettyName());
    await page.screenshot({ path: join(artifactsDir, 'devices-01-grid.png'), fullPage: true });
    await row.getByRole('link', { name: AGENT_HOST }).click();
    await expect(page).toHaveURL(new RegExp(`/devices/${AGENT_HOST}`));
  });

  await test.step('the device page tabs hold this machine\'s data', async () => {
    await expect(page.getByRole('heading', { name: AGENT_HOST })).toBeVisible();
    const tab = (name: string) => page.getByRole('tab', { name, exact: true });
    const panel = page.getByRole('tabpanel');

    await tab('Summary').click();
    await expect(panel).toContainText(prettyName());

    await tab('Hardware').click();
    await expect(panel.getByRole('table', { name: 'Disks' })).toBeVisible();

    await tab('Network').click();
    const nics = panel.getByRole('table', { name: 'Network interfaces' });
    await expect(nics).toContainText('lo');
    await expect(nics).toContainText('127.0.0.1/8');

    await tab('Software').click();
    await expect(panel).toContainText('bash');

    await tab('Processes').click();
    await expect(panel).toContainText('cairn-agent');

    await tab('Sessions').click();
    await expect(panel).toBeVisible();

    await tab('Agent Health').click();
    await expect(panel.getByRole('table', { name: 'Roles', exact: true })).toContainText('device_audit');

    await tab('Activity').click();
    await expect(panel).toContainText(/enrolled/i);
    await page.screenshot({ path: join(artifactsDir, 'devices-02-device-page.png'), fullPage: true });
  });
  expect(machineHostname()).not.toBe('');
});
