import { expect, test } from '@playwright/test';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, signIn } from './fleet';

// The Files tab on a real agent: browse from the root to a private
// directory, make a folder, write a file in the editor, rename and delete
// it, checking the disk after each step; then upload a file from the
// browser, edit it, download it and compare the bytes, and delete it. Each
// action is a device operation through the Engine's command path; uploads
// and downloads are transfers through the Engine's content store.

const USERNAME = 'admin';
const PASSWORD = 'files e2e admin password';
const AGENT_HOST = 'e2e-files-agent';

let engine: Engine;
let agent: Agent | undefined;
const work = mkdtempSync(join(tmpdir(), 'cairn-e2e-files-'));

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-files', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
  rmSync(work, { recursive: true, force: true });
});

test('browse, edit, rename, upload, download and delete files on a real agent', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const api = page.request;
  const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
  agent = await enrollConnected(api, base, auth, { name: 'agent-files', hostname: AGENT_HOST, slug: 'e2e-files' });
  await expect
    .poll(async () => (await api.get(`${base}/api/device/files/${AGENT_HOST}/roots`)).status(), { timeout: 90_000 })
    .toBe(200);

  const panel = page.getByRole('tabpanel');
  const entries = panel.getByRole('table', { name: 'Entries' });
  const notifications = page.getByRole('region', { name: 'Notifications' });

  await test.step('navigate from the root to a private directory', async () => {
    await page.goto(`${base}/devices/${AGENT_HOST}`);
    await page.getByRole('tab', { name: 'Files', exact: true }).click();
    for (const part of work.split('/').filter(Boolean)) {
      await entries.getByRole('button', { name: part, exact: true }).click();
    }
    await expect(panel.getByRole('navigation', { name: 'Path' })).toContainText(basename(work));
    await expect(entries).toContainText('Empty folder');
  });

  await test.step('create a folder', async () => {
    await panel.getByRole('button', { name: 'New folder' }).click();
    const dialog = page.getByRole('dialog', { name: 'New folder' });
    await dialog.getByRole('textbox', { name: 'Name' }).fill('reports');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await expect(entries.getByRole('button', { name: 'reports', exact: true })).toBeVisible({ timeout: 60_000 });
    expect(existsSync(join(work, 'reports'))).toBe(true);
  });

  await test.step('create a text file in the editor, then edit it', async () => {
    await panel.getByRole('button', { name: 'New file' }).click();
    const nameDialog = page.getByRole('dialog', { name: 'New file' });
    await nameDialog.getByRole('textbox', { name: 'Name' }).fill('notes.txt');
    await nameDialog.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('textbox', { name: 'File content' }).fill('first line\n');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect(entries.getByRole('button', { name: 'notes.txt', exact: true })).toBeVisible({ timeout: 60_000 });
    expect(readFileSync(join(work, 'notes.txt'), 'utf8')).toBe('first line\n');

    await entries.getByRole('button', { name: 'notes.txt', exact: true }).click();
    const editor = page.getByRole('textbox', { name: 'File content' });
    await expect(editor).toHaveValue('first line\n', { timeout: 60_000 });
    await editor.fill('first line\nsecond line\n');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect(editor).toBeHidden({ timeout: 60_000 });
    expect(readFileSync(join(work, 'notes.txt'), 'utf8')).toBe('first line\nsecond line\n');
    await page.screenshot({ path: join(artifactsDir, 'files-01-list.png'), fullPage: true });
  });

  await test.step('rename the file', async () => {
    await panel.getByRole('checkbox', { name: 'Select notes.txt' }).check();
    await panel.getByRole('button', { name: 'Rename' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rename notes.txt' });
    await dialog.getByRole('textbox', { name: 'Name' }).fill('renamed.txt');
    await dialog.getByRole('button', { name: 'Rename' }).click();
    await expect(entries.getByRole('button', { name: 'renamed.txt', exact: true })).toBeVisible({ timeout: 60_000 });
    expect(existsSync(join(work, 'notes.txt'))).toBe(false);
    expect(readFileSync(join(work, 'renamed.txt'), 'utf8')).toBe('first line\nsecond line\n');
  });

  await test.step('delete it after confirming', async () => {
    await panel.getByRole('checkbox', { name: 'Select renamed.txt' }).check();
    await panel.getByRole('button', { name: 'Delete', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete renamed.txt?' });
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect(entries.getByRole('button', { name: 'renamed.txt', exact: true })).toBeHidden({ timeout: 60_000 });
    expect(existsSync(join(work, 'renamed.txt'))).toBe(false);
    await expect(notifications).toContainText('Delete renamed.txt');
  });

  await test.step('upload a file, edit it, download it and compare the bytes, then delete it', async () => {
    const uploaded = 'from the browser\n';
    await panel.getByTestId('upload-input').setInputFiles({
      name: 'uploaded.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from(uploaded),
    });
    await expect(entries.getByRole('button', { name: 'uploaded.txt', exact: true })).toBeVisible({ timeout: 60_000 });
    expect(readFileSync(join(work, 'uploaded.txt'), 'utf8')).toBe(uploaded);

    await entries.getByRole('button', { name: 'uploaded.txt', exact: true }).click();
    const editor = page.getByRole('textbox', { name: 'File content' });
    await expect(editor).toHaveValue(uploaded, { timeout: 60_000 });
    await editor.fill(uploaded + 'edited on the device\n');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect(editor).toBeHidden({ timeout: 60_000 });
    const onDisk = readFileSync(join(work, 'uploaded.txt'));
    expect(onDisk.toString('utf8')).toBe(uploaded + 'edited on the device\n');

    await panel.getByRole('checkbox', { name: 'Select uploaded.txt' }).check();
    const download = page.waitForEvent('download', { timeout: 120_000 });
    await panel.getByRole('button', { name: 'Download', exact: true }).click();
    const saved = await (await download).path();
    expect(readFileSync(saved).equals(onDisk)).toBe(true);

    await panel.getByRole('button', { name: 'Delete', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete uploaded.txt?' });
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect(entries.getByRole('button', { name: 'uploaded.txt', exact: true })).toBeHidden({ timeout: 60_000 });
    expect(existsSync(join(work, 'uploaded.txt'))).toBe(false);
  });

  await test.step('the changes are in the device\'s activity', async () => {
    await page.getByRole('tab', { name: 'Activity', exact: true }).click();
    await expect(page.getByRole('tabpanel')).toContainText(`Delete ${join(work, 'renamed.txt')}`);
  });
});
