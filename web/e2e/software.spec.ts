import { expect, test } from '@playwright/test';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, ok, signIn } from './fleet';

// The Software page against a real Engine and a real cairn-agent: this
// machine's packages show in the audit, a device count opens the Devices
// page with a draft software filter, and an Admin blocks and allows
// uninstalling a package.

const USERNAME = 'admin';
const PASSWORD = 'software e2e admin password';
const AGENT_HOST = 'e2e-software-agent';
const PACKAGE = 'bash';

let engine: Engine;
let agent: Agent | undefined;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-software', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
});

test('the software audit lists this machine\'s packages and keeps their rules', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const api = page.request;
  let version = '';

  await test.step('bootstrap, sign in and enroll a real agent', async () => {
    const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
    agent = await enrollConnected(api, base, auth, { name: 'agent-software', hostname: AGENT_HOST, slug: 'e2e-software' });
    await expect
      .poll(
        async () => {
          const audit = await ok(await api.get(`${base}/api/software/audit?q=${PACKAGE}&limit=500`));
          version = audit.software?.find((r: { name: string }) => r.name === PACKAGE)?.version ?? '';
          return version;
        },
        { timeout: 90_000 },
      )
      .not.toBe('');
  });

  const label = `${PACKAGE} ${version}`;

  await test.step('the audit shows the package with its device count', async () => {
    await page.goto(`${base}/software`);
    await page.getByRole('searchbox', { name: 'Search software' }).fill(PACKAGE);
    await expect(page.getByTestId('software-total')).toContainText(`matching “${PACKAGE}”`);
    await expect(page.getByRole('button', { name: `Devices with ${label}`, exact: true })).toHaveText('1');
  });

  await test.step('an Admin blocks uninstalling it', async () => {
    await page.getByRole('button', { name: `Actions for ${label}`, exact: true }).click();
    await page.getByRole('menuitem', { name: 'Block uninstall…' }).click();
    const dialog = page.getByRole('dialog', { name: `Block uninstalling ${label}` });
    await dialog.getByRole('textbox', { name: 'Reason' }).fill('the shell every script runs in');
    await dialog.getByRole('button', { name: 'Block' }).click();
    await expect(dialog).toBeHidden();
    const row = page.getByTestId('software-row').filter({ has: page.getByRole('button', { name: `Actions for ${label}`, exact: true }) });
    await expect(row).toContainText('Blocked');
    await page.screenshot({ path: join(artifactsDir, 'software-01-blocked.png'), fullPage: true });
    const rules = await ok(await api.get(`${base}/api/software/rules`));
    expect(rules.uninstall_blocks).toEqual([
      expect.objectContaining({ name: PACKAGE, version, reason: 'the shell every script runs in', created_by: USERNAME }),
    ]);
  });

  await test.step('and allows it again', async () => {
    await page.getByRole('button', { name: `Actions for ${label}`, exact: true }).click();
    await page.getByRole('menuitem', { name: 'Allow uninstall…' }).click();
    const dialog = page.getByRole('dialog', { name: `Allow uninstalling ${label}` });
    await dialog.getByRole('button', { name: 'Allow' }).click();
    await expect(dialog).toBeHidden();
    const row = page.getByTestId('software-row').filter({ has: page.getByRole('button', { name: `Actions for ${label}`, exact: true }) });
    await expect(row).not.toContainText('Blocked');
    expect((await ok(await api.get(`${base}/api/software/rules`))).uninstall_blocks ?? []).toEqual([]);
  });

  await test.step('the device count opens the Devices page with a draft software filter', async () => {
    await page.getByRole('button', { name: `Devices with ${label}`, exact: true }).click();
    await expect(page).toHaveURL(/\/devices\?filter=/);
    const filter = JSON.parse(new URL(page.url()).searchParams.get('filter')!);
    expect(filter).toEqual({ match: 'all', conditions: [{ field: 'software', key: PACKAGE, op: 'version_eq', value: version }] });
  });
});
