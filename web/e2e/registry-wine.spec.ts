import { expect, test } from '@playwright/test';
import { startEngine, type Engine } from './engine';
import { ok, signIn } from './fleet';
import { enrollConnectedUnderWine, type WineAgent } from './wine';

// The registry editor end to end: the Windows build of cairn-agent runs
// under Wine (its registry is Wine's), enrolls with a real Engine, and the
// console's Registry tab creates a key, writes typed values, reads them
// back, renames and deletes the key; the API cross-checks each step.
//
// The Wine prefix and binaries: see wine.ts.

const USERNAME = 'admin';
const PASSWORD = 'registry e2e admin password';
const HOST = 'e2e-registry-wine';
const KEY = `CairnE2E-${Date.now()}`;

let engine: Engine;
let agent: WineAgent | undefined;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-registry-wine', publicHost: 'localhost' });
});

test.afterAll(async () => {
  agent?.stop();
  await engine?.stop();
});

test('the registry of a Windows agent under Wine is edited from the console', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const api = page.request;
  const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());

  await test.step('enroll, approve, connect', async () => {
    agent = await enrollConnectedUnderWine(api, base, auth, { name: 'registry-wine-agent', hostname: HOST, slug: 'e2e-reg' });
  });

  const children = async (path: string) =>
    ok(await api.get(`${base}/api/device/registry/${HOST}/children?path=${encodeURIComponent(path)}`, { headers: auth }));

  await test.step('create a key and typed values in the Registry tab', async () => {
    await page.goto(`${base}/devices/${HOST}/registry`);
    const tree = page.getByRole('tree', { name: 'Registry keys' });
    await tree.getByRole('button', { name: 'Expand HKCU' }).click();
    await tree.getByRole('button', { name: 'Software', exact: true }).click();
    await expect(page.getByTestId('registry-path')).toHaveText('HKCU\\Software');

    await page.getByRole('button', { name: 'New key' }).click();
    let dialog = page.getByRole('dialog', { name: 'New key in HKCU\\Software' });
    await dialog.getByLabel('Key name').fill(KEY);
    await dialog.getByRole('button', { name: 'Create' }).click();
    await expect(dialog).toBeHidden();
    expect((await children('HKCU\\Software')).subkeys.map((k: any) => k.name)).toContain(KEY);

    await tree.getByRole('button', { name: 'Expand HKCU\\Software' }).click();
    await tree.getByRole('button', { name: KEY, exact: true }).click();
    await expect(page.getByTestId('registry-path')).toHaveText(`HKCU\\Software\\${KEY}`);

    for (const [name, type, data] of [
      ['Greeting', 'REG_SZ', 'hello from the console'],
      ['Big', 'REG_QWORD', '18446744073709551615'],
      ['Lines', 'REG_MULTI_SZ', 'one\ntwo'],
    ]) {
      await page.getByRole('button', { name: 'New value' }).click();
      dialog = page.getByRole('dialog', { name: `New value in HKCU\\Software\\${KEY}` });
      await dialog.getByRole('textbox', { name: 'Name' }).fill(name);
      await dialog.getByRole('combobox', { name: 'Type' }).click();
      await page.getByRole('option', { name: type, exact: true }).click();
      await dialog.getByRole('textbox', { name: 'Data' }).fill(data);
      await dialog.getByRole('button', { name: 'Create' }).click();
      await expect(dialog).toBeHidden();
    }
    const values = page.getByRole('table', { name: 'Values' });
    await expect(values.getByRole('row', { name: /Greeting/ })).toContainText('hello from the console');
    await expect(values.getByRole('row', { name: /Big/ })).toContainText('18446744073709551615');

    const kids = await children(`HKCU\\Software\\${KEY}`);
    expect(kids.values).toEqual([
      { name: 'Big', type: 'REG_QWORD', data: '18446744073709551615' },
      { name: 'Greeting', type: 'REG_SZ', data: 'hello from the console' },
      { name: 'Lines', type: 'REG_MULTI_SZ', data: ['one', 'two'] },
    ]);
  });

  await test.step('edit a value, rename and delete the key', async () => {
    const values = page.getByRole('table', { name: 'Values' });
    await values.getByRole('button', { name: 'Edit Greeting' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit value Greeting' });
    await dialog.getByRole('textbox', { name: 'Data' }).fill('changed');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect(values.getByRole('row', { name: /Greeting/ })).toContainText('changed');

    await page.getByRole('button', { name: 'Rename key' }).click();
    const rename = page.getByRole('dialog', { name: `Rename HKCU\\Software\\${KEY}` });
    await rename.getByLabel('Key name').fill(`${KEY}-renamed`);
    await rename.getByRole('button', { name: 'Rename' }).click();
    await expect(page.getByTestId('registry-path')).toHaveText(`HKCU\\Software\\${KEY}-renamed`);
    expect((await children(`HKCU\\Software\\${KEY}-renamed`)).values).toContainEqual({ name: 'Greeting', type: 'REG_SZ', data: 'changed' });

    await page.getByRole('button', { name: 'Delete key' }).click();
    await page.getByRole('dialog', { name: `Delete HKCU\\Software\\${KEY}-renamed?` }).getByRole('button', { name: 'Delete' }).click();
    await expect(page.getByTestId('registry-path')).toHaveText('HKCU\\Software');
    const gone = await api.get(`${base}/api/device/registry/${HOST}/children?path=${encodeURIComponent(`HKCU\\Software\\${KEY}-renamed`)}`, { headers: auth });
    expect(gone.status()).toBe(404);
    expect((await gone.json()).error).toBe('registry_key_not_found');
  });
});
