import { expect, test } from '@playwright/test';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, ok, signIn } from './fleet';

// Metadata fields through the console against a real Engine and a real
// cairn-agent: a value the agent sets on its command line shows on the
// device's Metadata tab, an Admin labels the field on the Metadata page,
// and a value edited in the console reaches the agent.

const USERNAME = 'admin';
const PASSWORD = 'metadata e2e admin password';
const AGENT_HOST = 'e2e-metadata-agent';
const FIELD = 30;

let engine: Engine;
let agent: Agent | undefined;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-metadata', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
});

test('a metadata value travels between the agent and the console', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const api = page.request;
  let auth: Record<string, string> = {};

  await test.step('bootstrap, sign in and enroll a real agent', async () => {
    auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
    agent = await enrollConnected(api, base, auth, { name: 'agent-metadata', hostname: AGENT_HOST, slug: 'e2e-metadata' });
  });

  await test.step('the agent sets a value on its command line', async () => {
    const set = await agent!.cli(['--metadata', 'set', String(FIELD), 'rack 4']);
    expect(set.code, set.output).toBe(0);
  });

  await test.step('an Admin labels the field on the Metadata page', async () => {
    await page.goto(`${base}/metadata`);
    await expect(page.getByTestId('definitions-count')).toContainText('500 fields');
    // Reserved fields are read-only and name their bundled assembly.
    const roles = page.getByRole('row', { name: /Server Roles/ });
    await expect(roles).toContainText('Read-only');
    await page.getByRole('searchbox', { name: 'Search fields' }).fill(String(FIELD));
    await page.getByRole('button', { name: `Rename field ${FIELD}`, exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `Rename field ${FIELD}`, exact: true });
    await dialog.getByRole('textbox', { name: 'Label' }).fill('Rack position');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect(dialog).toBeHidden();
    const row = page.getByRole('row', { name: /Rack position/ });
    await expect(row).toContainText(USERNAME);
    await page.screenshot({ path: join(artifactsDir, 'metadata-01-definitions.png'), fullPage: true });
  });

  await test.step('the device page shows the agent\'s value', async () => {
    await page.goto(`${base}/devices/${AGENT_HOST}/metadata`);
    await page.getByRole('searchbox', { name: 'Search fields' }).fill('Rack position');
    const row = page.getByRole('row', { name: /Rack position/ });
    // The heartbeat carries the queued write within one interval; the
    // device event refreshes the tab without a reload.
    await expect(row).toContainText('rack 4', { timeout: 90_000 });
    await expect(row).toContainText('Agent');
  });

  await test.step('an operator edits the value in the console', async () => {
    await page.getByRole('button', { name: `Edit field ${FIELD}`, exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `Edit field ${FIELD} (Rack position)` });
    const input = dialog.getByRole('textbox', { name: 'Value' });
    await input.fill('rack 7, row B');
    await expect(dialog.getByTestId('metadata-counter')).toHaveText('13 / 1024');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect(dialog).toBeHidden();
    const row = page.getByRole('row', { name: /Rack position/ });
    await expect(row).toContainText('rack 7, row B');
    await expect(row).toContainText(USERNAME);
    await page.screenshot({ path: join(artifactsDir, 'metadata-02-device.png'), fullPage: true });
    const fields = await ok(await api.get(`${base}/api/devices/${await guidOf(base)}/metadata_fields`));
    expect(fields.fields[FIELD - 1]).toMatchObject({ value: 'rack 7, row B', source: `operator:${USERNAME}` });
  });

  await test.step('the agent reads the console\'s value', async () => {
    await expect
      .poll(async () => (await agent!.cli(['--metadata', 'get', String(FIELD)])).output, { timeout: 90_000 })
      .toContain('rack 7, row B');
  });

  async function guidOf(base: string): Promise<string> {
    const list = await ok(await api.get(`${base}/api/devices`));
    return list.devices.find((d: { hostname: string }) => d.hostname === AGENT_HOST).guid;
  }
});
