import { expect, test } from '@playwright/test';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, signIn } from './fleet';

// User-context jobs (issue 27 item 3, SPEC agent behaviour 12) on a real
// Linux cairn-agent: an assembly saved in the editor to run as the
// signed-in user is refused for the Linux agent, which does not advertise
// the currentuser helper context, with user_context_unsupported shown on
// its result; the same script as the agent's account runs.

const USERNAME = 'admin';
const PASSWORD = 'user context e2e admin password';
const AGENT_HOST = 'e2e-userctx-agent';
const ASSEMBLY = 'e2e as the user';

let engine: Engine;
let agent: Agent | undefined;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-userctx', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
});

test('a user-context script is refused for a Linux agent, which advertises no currentuser context', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const api = page.request;
  const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
  agent = await enrollConnected(api, base, auth, { name: 'agent-userctx', hostname: AGENT_HOST, slug: 'e2e-userctx' });

  // The real agent registered without the currentuser helper context.
  const devices = await (await api.get(`${base}/api/devices`, { headers: auth })).json();
  const guid = devices.devices.find((d: { hostname: string }) => d.hostname === AGENT_HOST).guid;
  await expect
    .poll(async () => (await (await api.get(`${base}/api/devices/${guid}`, { headers: auth })).json()).helper_contexts)
    .toEqual([]);

  await page.goto(`${base}/automation`);
  await page.getByRole('button', { name: 'New assembly' }).click();
  const editor = page.getByRole('dialog');
  await editor.getByRole('textbox', { name: 'Name', exact: true }).fill(ASSEMBLY);
  await editor.getByRole('combobox', { name: 'Run as' }).click();
  await page.getByRole('option', { name: 'Signed-in user (Windows)' }).click();
  const body = editor.locator('.cm-content[aria-label="Body"]');
  await body.click();
  await page.keyboard.insertText('id -un');
  await editor.getByRole('button', { name: 'Create' }).click();
  await expect(page.getByTestId('assembly-saved')).toContainText(`Saved ${ASSEMBLY} as version 1.`);
  await editor.locator('.MuiDialogActions-root').getByRole('button', { name: 'Close' }).click();

  await page.getByRole('button', { name: `Run ${ASSEMBLY}` }).click();
  const dialog = page.getByRole('dialog', { name: 'Run a script' });
  const devicesBox = dialog.getByRole('combobox', { name: 'Devices' });
  await devicesBox.click();
  await devicesBox.fill(AGENT_HOST);
  await page.getByRole('option', { name: new RegExp(AGENT_HOST) }).first().click();
  await dialog.getByRole('button', { name: 'Run' }).click();

  const results = page.getByRole('dialog', { name: `Quick run on ${AGENT_HOST}` });
  await expect(results.getByTestId('run-view')).toHaveAttribute('data-run-status', 'failed', { timeout: 60_000 });
  const refusal = results.getByTestId('result-error');
  await expect(refusal).toContainText('does not advertise the currentuser helper context');
  await expect(refusal).toContainText('(user_context_unsupported)');
  await page.screenshot({ path: join(artifactsDir, 'user-context-01-refused.png'), fullPage: true });

  // The same content as the agent's account runs on it.
  const run = await api.post(`${base}/api/scripts/quick_run`, {
    headers: auth,
    data: { device_guids: [guid], language: 'sh', body: 'echo as-system', run_as: 'system' },
  });
  expect(run.status()).toBe(202);
  const { run_id } = await run.json();
  await expect
    .poll(async () => (await (await api.get(`${base}/api/scripts/quick_run/${run_id}`, { headers: auth })).json()).status, {
      timeout: 60_000,
    })
    .toBe('succeeded');
});
