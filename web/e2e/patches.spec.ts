import { expect, test } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, ok, signIn } from './fleet';

// Patch management against a real Engine and a real Linux cairn-agent
// pointed at a private apt root (CAIRN_AGENT_APT_ROOT, docs/agent.md "A
// private apt root"): scripts/e2e/apt-root.sh installs cairn-hello 1.0 in
// it and offers 1.1 from a local repository, so nothing of this machine's
// own packages is touched. A site policy made in the Patches page's
// editor approves the update, the device's Patches tab installs it
// (Install → draft → run now), and the re-scan shows it installed; the
// software inventory then lists the new version.

const USERNAME = 'admin';
const PASSWORD = 'patches e2e admin password';
const AGENT_HOST = 'e2e-patches-agent';
const SLUG = 'e2e-patches';
const PACKAGE = 'cairn-hello';
const KEY = `pkg:${PACKAGE}=1.1`;

const webDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

let engine: Engine;
let agent: Agent | undefined;
let aptDir = '';

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-patches', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
  if (aptDir) rmSync(aptDir, { recursive: true, force: true });
});

test('a site policy approves an update the device tab installs from a local apt repository', async ({ page }) => {
  test.setTimeout(420_000);
  const base = engine.baseURL;
  const api = page.request;
  let root = '';

  await test.step('a private apt root with cairn-hello 1.0 installed and 1.1 in its repository', async () => {
    aptDir = mkdtempSync(join(tmpdir(), 'cairn-e2e-apt-'));
    root = execFileSync('sh', [join(webDir, '../scripts/e2e/apt-root.sh'), aptDir], { encoding: 'utf8' }).trim();
    expect(readFileSync(join(root, 'usr/share/cairn-hello/version'), 'utf8')).toBe('1.0\n');
  });

  await test.step('bootstrap, sign in and enroll a real agent on the private root', async () => {
    const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
    agent = await enrollConnected(api, base, auth, {
      name: 'agent-patches',
      hostname: AGENT_HOST,
      slug: SLUG,
      env: { CAIRN_AGENT_APT_ROOT: root },
    });
    await expect
      .poll(
        async () => {
          const view = await ok(await api.get(`${base}/api/device/patches/${AGENT_HOST}`));
          return (view.patches ?? []).map((p: { patch_key: string; state: string }) => `${p.patch_key} ${p.state}`);
        },
        { timeout: 120_000 },
      )
      .toEqual([`${KEY} pending`]);
  });

  await test.step('a site policy made in the Patches page approves the update', async () => {
    await page.goto(`${base}/patches`);
    await page.getByRole('button', { name: 'New policy' }).click();
    const dialog = page.getByRole('dialog', { name: 'New patch policy' });
    await dialog.getByLabel('Name', { exact: true }).fill('approve cairn-hello');
    await dialog.getByRole('combobox', { name: 'Site', exact: true }).click();
    await page.getByRole('option', { name: SLUG, exact: true }).click();
    await dialog.getByRole('button', { name: 'Add rule' }).click();
    await dialog.getByRole('combobox', { name: /^Rule type/ }).click();
    await page.getByRole('option', { name: 'package', exact: true }).click();
    await dialog.getByLabel('Rule 1 value').fill(PACKAGE);
    await dialog.getByRole('combobox', { name: /^Reboot policy/ }).click();
    await page.getByRole('option', { name: 'never', exact: true }).click();
    await dialog.getByRole('button', { name: 'Preview' }).click();
    await expect(dialog.getByTestId('policy-preview')).toContainText('1 of 1 devices eligible; 1 approved pending updates on 1 devices.');
    await dialog.getByRole('button', { name: 'Save' }).click();
    // Policy changes are Admin routes; the sign-in moments ago is proof of
    // identity fresh enough (no re-authentication dialog).
    await expect(dialog).toBeHidden();
    const row = page.getByRole('table', { name: 'Patch policies' }).getByRole('row').filter({ hasText: 'approve cairn-hello' });
    await expect(row).toContainText('1 on 1 devices (site: 1)');
    const policies = await ok(await api.get(`${base}/api/patches/policies`));
    expect(policies.policies.filter((p: { type: string }) => p.type === 'site')).toEqual([
      expect.objectContaining({
        name: 'approve cairn-hello',
        type: 'site',
        rules: [expect.objectContaining({ action: 'approve', rule_type: 'package', match_type: 'equals', value: PACKAGE })],
        pending_update_count: 1,
        pending_update_device_count: 1,
      }),
    ]);
    await page.screenshot({ path: join(artifactsDir, 'patches-01-policy.png'), fullPage: true });
  });

  await test.step('the device tab installs it: Install → draft → run now', async () => {
    await page.goto(`${base}/devices/${AGENT_HOST}/patches`);
    const grid = page.locator(`.ag-center-cols-container .ag-row[row-id="${KEY}"]`);
    await expect(grid.locator('[col-id="state"]')).toHaveText('pending');
    await page.getByRole('button', { name: 'Install…' }).click();
    const dialog = page.getByRole('dialog', { name: `Install patches on ${AGENT_HOST}` });
    await expect(dialog.getByRole('checkbox', { name: `${PACKAGE} 1.1` })).toBeChecked();
    await dialog.getByRole('button', { name: 'Open draft' }).click();
    const review = page.getByRole('dialog', { name: 'Review the install job' });
    await expect(review.getByTestId('draft-patches')).toHaveText(`${PACKAGE} 1.1`);
    await review.getByRole('button', { name: 'Now' }).click();
    await review.getByRole('button', { name: 'Run now' }).click();
    await expect(review).toBeHidden();
    await expect(page.getByText(/is running\./)).toBeVisible();
  });

  await test.step('the re-scan shows it installed', async () => {
    const lane = page.getByTestId('patch-lane');
    await expect(lane.getByRole('table', { name: 'Installs' }).getByRole('row').filter({ hasText: `${PACKAGE} 1.1` })).toContainText(
      'installed',
      { timeout: 180_000 },
    );
    const grid = page.locator(`.ag-center-cols-container .ag-row[row-id="${KEY}"]`);
    await expect(grid.locator('[col-id="state"]')).toHaveText('installed', { timeout: 60_000 });
    await expect(page.getByTestId('patch-summary')).toHaveText('0 pending, 1 installed.');
    await page.screenshot({ path: join(artifactsDir, 'patches-02-installed.png'), fullPage: true });
    const view = await ok(await api.get(`${base}/api/device/patches/${AGENT_HOST}`));
    expect(view.patches).toEqual([expect.objectContaining({ patch_key: KEY, state: 'installed', installed_version: '1.1' })]);
    expect(view.installs).toEqual([expect.objectContaining({ state: 'installed' })]);
    // dpkg upgraded the package inside the private root, and only there.
    expect(readFileSync(join(root, 'usr/share/cairn-hello/version'), 'utf8')).toBe('1.1\n');
  });

  await test.step('the software inventory lists the new version', async () => {
    await page.goto(`${base}/devices/${AGENT_HOST}/software`);
    await page.getByRole('button', { name: 'Refresh software' }).click();
    await expect
      .poll(
        async () => {
          const audit = await ok(await api.get(`${base}/api/software/audit?q=${PACKAGE}&limit=50`));
          return (audit.software ?? []).map((r: { name: string; version: string }) => `${r.name} ${r.version}`);
        },
        { timeout: 90_000 },
      )
      .toEqual([`${PACKAGE} 1.1`]);
  });
});
