import { expect, test } from '@playwright/test';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, signInWithSecret } from './fleet';
import { freshTotp } from './totp';

// Issue 26, disaster recovery through the console: an Engine with a real
// enrolled cairn-agent is exported from the Server page; a FRESH Engine
// (its own data directory, PostgreSQL and Temporal) takes over its address,
// the backup is restored through the setup wizard's restore path, the
// Engine is restarted as the answer asks, unlocked with the source
// passphrase, and the source's administrator signs in with password and
// TOTP. The devices grid shows the agent, which reconnected without
// enrolling again, and it answers an operation (its live process list).

const USERNAME = 'admin';
const PASSWORD = 'backup e2e admin password';
const PASSPHRASE = `${PASSWORD} passphrase`;
const AGENT_HOST = 'e2e-backup-agent';
const RESTORE_PHRASE = 'RESTORE ENGINE CONFIG BACKUP';

let source: Engine | undefined;
let restored: Engine | undefined;
let agent: Agent | undefined;
let dir = '';

test.beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-e2e-backup-'));
  source = await startEngine({ name: 'engine-backup-source', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await source?.stop();
  await restored?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('a backup exported from the Server page restores onto a fresh Engine through the setup wizard', async ({ page }) => {
  test.setTimeout(900_000);
  const base = source!.baseURL;
  const api = page.request;
  let secret = '';
  let usedStep = 0;
  let guid = '';
  const file = join(dir, 'backup.json');

  await test.step('bootstrap, sign in and enroll a real agent', async () => {
    const s = await signInWithSecret(api, base, USERNAME, PASSWORD, await source!.setupCode());
    secret = s.secret;
    usedStep = s.usedStep;
    agent = await enrollConnected(api, base, s.auth, { name: 'agent-backup', hostname: AGENT_HOST, slug: 'e2e-backup' });
    const list = await (await api.get(`${base}/api/devices`)).json();
    guid = list.devices.find((d: { hostname: string }) => d.hostname === AGENT_HOST)?.guid ?? '';
    expect(guid).not.toBe('');
  });

  await test.step('export from the Server page', async () => {
    await page.goto(`${base}/server`);
    const section = page.getByTestId('backups');
    const downloaded = page.waitForEvent('download', { timeout: 120_000 });
    await section.getByRole('link', { name: 'Export backup' }).click();
    const download = await downloaded;
    expect(download.suggestedFilename()).toMatch(/^cairn-backup-\d{8}-\d{6}\.json$/);
    await download.saveAs(file);
    const text = await readFile(file, 'utf8');
    const { ciphertext_b64: sealed, ...header } = JSON.parse(text);
    expect(header).toEqual(expect.objectContaining({ kind: expect.any(String), schema_version: expect.any(Number), nonce_b64: expect.any(String) }));
    // Encrypted: nothing of the deployment in clear, the payload sealed.
    expect(JSON.stringify(header)).not.toContain(AGENT_HOST);
    expect(Buffer.from(sealed, 'base64').toString('latin1')).not.toContain(AGENT_HOST);
  });

  await test.step('a fresh Engine takes over the address', async () => {
    const ports = source!.ports;
    await source!.stop();
    source = undefined;
    restored = await startEngine({ name: 'engine-backup-restored', publicHost: 'localhost', ports });
    expect(restored.baseURL).toBe(base);
    await page.context().clearCookies();
  });

  await test.step('the setup wizard analyzes and restores the backup', async () => {
    await page.goto(base);
    await expect(page.getByRole('heading', { name: 'Enter the setup code' })).toBeVisible({ timeout: 60_000 });
    await page.getByLabel('Setup code', { exact: true }).fill(await restored!.setupCode());
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect(page.getByRole('heading', { name: 'Set the master cipher' })).toBeVisible();
    await page.getByRole('button', { name: 'Restore from a backup…' }).click();
    await expect(page.getByRole('heading', { name: 'Restore from a backup' })).toBeVisible();

    await page.getByLabel('Backup file').setInputFiles(file);
    await page.getByLabel("Passphrase of the backup's Engine", { exact: true }).fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Analyze' }).click();
    const report = page.getByTestId('backup-report');
    await expect(report).toBeVisible({ timeout: 120_000 });
    // What a restore imports: the one device, its one refresh token.
    const rows = (table: string) => report.getByRole('row').filter({ has: page.getByRole('cell', { name: table, exact: true }) });
    await expect(rows('devices').getByRole('cell').nth(1)).toHaveText('1');
    await expect(rows('refresh_tokens').getByRole('cell').nth(1)).toHaveText('1');
    await expect(rows('users').getByRole('cell').nth(1)).toHaveText('1');
    await page.screenshot({ path: join(artifactsDir, 'backup-01-analyzed.png'), fullPage: true });

    const restore = page.getByRole('button', { name: 'Restore (replaces everything)' });
    await expect(restore).toBeDisabled();
    await page.getByLabel(`Type ${RESTORE_PHRASE} to restore`).fill(RESTORE_PHRASE);
    await restore.click();
    await expect(page.getByTestId('restore-done')).toBeVisible({ timeout: 180_000 });
    await page.screenshot({ path: join(artifactsDir, 'backup-02-restored.png'), fullPage: true });
  });

  await test.step('restart as asked, unlock with the source passphrase and sign in as the source administrator', async () => {
    await restored!.restart();
    // The console moves on by itself once the phase is stable (SPEC backup rule 5).
    await expect(page.getByRole('heading', { name: 'Unlock the master cipher' })).toBeVisible({ timeout: 120_000 });
    await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Unlock' }).click();
    await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible({ timeout: 60_000 });
    await page.getByLabel('Username', { exact: true }).fill(USERNAME);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect(page.getByRole('heading', { name: 'Two-step verification' })).toBeVisible({ timeout: 60_000 });
    // The restored account remembers the last step the source accepted.
    const fresh = await freshTotp(secret, usedStep);
    await page.getByLabel('Authentication code', { exact: true }).fill(fresh.code);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect(page.getByTestId('current-username')).toHaveText(USERNAME, { timeout: 60_000 });
  });

  await test.step('the devices grid shows the agent, reconnected without enrolling again', async () => {
    // The agent retries its refresh against the blank Engine (agent
    // behaviour 8) with a backoff of up to a minute, then reconnects.
    await expect
      .poll(
        async () => {
          const list = await (await api.get(`${base}/api/devices`)).json();
          const d = list.devices?.find((x: { hostname: string }) => x.hostname === AGENT_HOST);
          return d ? `${d.guid} ${d.connectivity_status} ${d.agent_socket}` : 'missing';
        },
        { timeout: 300_000, intervals: [2000] },
      )
      .toBe(`${guid} Connected true`);
    await page.goto(`${base}/devices`);
    const row = page.getByRole('row', { name: new RegExp(AGENT_HOST) });
    await expect(row).toContainText('Connected');
    const approvals = await (await api.get(`${base}/api/admin/device-approvals?status=pending`)).json();
    expect(approvals.approvals ?? []).toEqual([]);
    await page.screenshot({ path: join(artifactsDir, 'backup-03-devices.png'), fullPage: true });

    // It answers an operation through the restored Engine: the live process list.
    await row.getByRole('link', { name: AGENT_HOST }).click();
    await expect(page.getByRole('heading', { name: AGENT_HOST })).toBeVisible();
    await page.getByRole('tab', { name: 'Processes', exact: true }).click();
    const panel = page.getByRole('tabpanel');
    await expect(panel).toContainText(/As of /, { timeout: 120_000 });
    await panel.getByLabel('Filter processes').fill('cairn-agent');
    await expect(panel).toContainText(`--hostname ${AGENT_HOST}`);
  });
});
