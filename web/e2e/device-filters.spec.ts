import { expect, test, type Locator, type Page } from '@playwright/test';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, ok, signIn } from './fleet';

// The devices grid against a real Engine with two real agents: label a
// metadata field and set it on one device, build a filter on it in the
// console (live match count), apply and save it, add the metadata column,
// save all of it as a view, and get the view back after a reload.

const USERNAME = 'admin';
const PASSWORD = 'device filters e2e admin password';
const RACKED = 'e2e-filter-racked';
const OTHER = 'e2e-filter-other';
const FIELD = 42;
const LABEL = 'E2E Rack';
const RACK = 'rack-7';
const FILTER_NAME = 'E2E racked devices';
const VIEW_NAME = 'E2E rack view';

let engine: Engine;
const agents: Agent[] = [];

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-device-filters', publicHost: 'localhost' });
});

test.afterAll(async () => {
  for (const a of agents) await a.stop();
  await engine?.stop();
});

/**
 * Picks `option` in the MUI select labelled `label` inside `scope`. A
 * select's name is its label then its value ("Field Metadata field"), so the
 * label is matched at the start.
 */
async function choose(page: Page, scope: Locator, label: string, option: string | RegExp) {
  const name = new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`);
  await scope.getByRole('combobox', { name }).click();
  await page.getByRole('option', { name: option }).click();
  await expect(page.getByRole('listbox')).toHaveCount(0);
}

test('a filter built in the console, saved with a metadata column as a view, comes back after a reload', async ({ page }) => {
  test.setTimeout(420_000);
  const base = engine.baseURL;
  const api = page.request;

  let auth: Record<string, string> = {};
  let guid = '';
  await test.step('bootstrap, sign in and enroll two real agents', async () => {
    auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
    agents.push(await enrollConnected(api, base, auth, { name: 'agent-filters-racked', hostname: RACKED, slug: 'e2e-racked' }));
    agents.push(await enrollConnected(api, base, auth, { name: 'agent-filters-other', hostname: OTHER, slug: 'e2e-other' }));
    const list = await ok(await api.get(`${base}/api/devices?limit=100`));
    expect(list.total).toBe(2);
    guid = list.devices.find((d: { hostname: string }) => d.hostname === RACKED).guid;
  });

  await test.step('label a metadata field and set it on one device', async () => {
    await ok(await api.put(`${base}/api/metadata_fields/${FIELD}`, { headers: auth, data: { description: LABEL } }));
    await ok(await api.put(`${base}/api/devices/${guid}/metadata_fields/${FIELD}`, { headers: auth, data: { value: RACK } }));
    await expect
      .poll(async () => (await ok(await api.get(`${base}/api/devices?limit=100`))).devices.find((d: { guid: string }) => d.guid === guid)?.metadata_fields?.[String(FIELD)])
      .toBe(RACK);
  });

  await test.step('build a filter with a live match count and apply it', async () => {
    await page.goto(`${base}/devices`);
    await expect(page.getByRole('row', { name: new RegExp(RACKED) })).toBeVisible();
    await expect(page.getByRole('row', { name: new RegExp(OTHER) })).toBeVisible();
    await expect(page.getByTestId('device-count')).toHaveText('2 devices');

    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    const root = page.getByRole('group', { name: 'Filter', exact: true });
    await expect(root).toBeVisible();
    const count = page.getByTestId('filter-match-count');

    // hostname starts with "e2e-filter": both devices
    await root.getByRole('button', { name: 'Add condition' }).first().click();
    const first = page.getByRole('group', { name: 'Condition filter.conditions[0]', exact: true });
    await choose(page, first, 'Field', /^Hostname$/);
    await choose(page, first, 'Operator', 'starts with');
    await first.getByRole('textbox', { name: 'Value' }).fill('e2e-filter');
    await expect(count).toHaveText('2 devices match');

    // and the labelled metadata field equals the rack: one device
    await root.getByRole('button', { name: 'Add condition' }).first().click();
    const second = page.getByRole('group', { name: 'Condition filter.conditions[1]', exact: true });
    await choose(page, second, 'Field', /^Metadata field$/);
    await choose(page, second, 'Metadata field', `${FIELD}. ${LABEL}`);
    await choose(page, second, 'Operator', 'equals');
    await second.getByRole('textbox', { name: 'Value' }).fill('not-a-rack');
    await expect(count).toHaveText('0 devices match');
    await second.getByRole('textbox', { name: 'Value' }).fill(RACK);
    await expect(count).toHaveText('1 device matches');

    await page.getByRole('button', { name: 'Apply filter' }).click();
    await expect(page.getByTestId('device-count')).toHaveText('1 device');
    await expect(page.getByRole('row', { name: new RegExp(OTHER) })).toHaveCount(0);
    await expect(page.getByRole('row', { name: new RegExp(RACKED) })).toBeVisible();
  });

  await test.step('an invalid value is flagged at its condition', async () => {
    const root = page.getByRole('group', { name: 'Filter', exact: true });
    await root.getByRole('button', { name: 'Add condition' }).first().click();
    const third = page.getByRole('group', { name: 'Condition filter.conditions[2]', exact: true });
    await choose(page, third, 'Field', /^IP address$/i);
    await third.getByRole('textbox', { name: 'Value' }).fill('not-a-network');
    await expect(third.locator('.Mui-error').first()).toBeVisible();
    await expect(page.getByTestId('filter-match-count')).toHaveText('The filter has errors');
    await third.getByRole('button', { name: 'Remove condition' }).click();
    await expect(page.getByTestId('filter-match-count')).toHaveText('1 device matches');
  });

  await test.step('save it as a named filter', async () => {
    await page.getByRole('button', { name: 'Save as filter…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Save as a named filter' });
    await dialog.getByRole('textbox', { name: 'Name' }).fill(FILTER_NAME);
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    await expect(dialog).toHaveCount(0);
    const saved = await ok(await api.get(`${base}/api/device_filters`));
    expect(saved.filters.map((f: { name: string }) => f.name)).toContain(FILTER_NAME);
    // Applied again, the grid now filters by the saved filter's ID.
    await page.getByRole('button', { name: 'Apply filter' }).click();
    await expect(page.getByTestId('applied-filter')).toHaveText(`Filter: ${FILTER_NAME}`);
  });

  await test.step('add the metadata column and save a shared view', async () => {
    await page.getByRole('button', { name: 'Columns' }).click();
    const chooser = page.getByRole('dialog', { name: 'Columns' });
    await expect(chooser.getByText('Server Roles')).toHaveCount(0);
    await chooser.getByLabel(LABEL).check();
    await page.keyboard.press('Escape');
    await expect(page.getByRole('columnheader', { name: LABEL })).toBeVisible();
    await expect(page.getByRole('row', { name: new RegExp(RACKED) })).toContainText(RACK);

    await page.getByRole('button', { name: 'Save view' }).click();
    const dialog = page.getByRole('dialog', { name: 'Save view' });
    await dialog.getByRole('textbox', { name: 'Name' }).fill(VIEW_NAME);
    await dialog.getByLabel('Share with other operators').check();
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    await expect(dialog).toHaveCount(0);
    await expect(page).toHaveURL(/[?&]view=\d+/);

    const views = await ok(await api.get(`${base}/api/device_list_views`));
    const view = views.views.find((v: { name: string }) => v.name === VIEW_NAME);
    expect(view.columns).toContain(`metadata:${FIELD}`);
    expect(view.shared).toBe(true);
    expect(view.filter_id).not.toBeNull();
    await page.screenshot({ path: join(artifactsDir, 'device-filters-01-view.png'), fullPage: true });
  });

  await test.step('a reload restores the view from the address', async () => {
    await page.reload();
    await expect(page.getByRole('columnheader', { name: LABEL })).toBeVisible();
    await expect(page.getByTestId('applied-filter')).toHaveText(`Filter: ${FILTER_NAME}`);
    await expect(page.getByTestId('device-count')).toHaveText('1 device');
    await expect(page.getByRole('row', { name: new RegExp(RACKED) })).toContainText(RACK);
  });

  await test.step('a fresh page picks the view from the list', async () => {
    await page.goto(`${base}/devices`);
    await expect(page.getByTestId('device-count')).toHaveText('2 devices');
    await expect(page.getByRole('columnheader', { name: LABEL })).toHaveCount(0);
    await choose(page, page.getByRole('search', { name: 'Device filters' }), 'View', new RegExp(VIEW_NAME));
    await expect(page.getByRole('columnheader', { name: LABEL })).toBeVisible();
    await expect(page.getByTestId('device-count')).toHaveText('1 device');
    await expect(page.getByRole('row', { name: new RegExp(OTHER) })).toHaveCount(0);
    await page.screenshot({ path: join(artifactsDir, 'device-filters-02-restored.png'), fullPage: true });
  });
});
