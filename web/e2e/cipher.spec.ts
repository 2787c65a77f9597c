import { expect, test } from '@playwright/test';
import { join } from 'node:path';
import { artifactsDir, startEngine, type Engine } from './engine';
import { ok } from './fleet';
import { freshTotp, totp } from './totp';

// The master cipher on the Server page, against a real Engine of its own
// (a forced reset ends the deployment's sessions, so the main walk's Engine
// stays untouched): rotate the passphrase through the re-authentication
// dialog, then force a reset and set up the new cipher with the setup code
// the console shows once.

const USERNAME = 'admin';
const PASSWORD = 'cipher e2e admin password';
const PASSPHRASE = 'cipher e2e first passphrase';
const ROTATED = 'cipher e2e rotated passphrase';

let engine: Engine;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-cipher', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await engine?.stop();
});

test('rotate the passphrase with password and code, then force a reset and set up a new cipher', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const consoleErrors: string[] = [];
  page.on('pageerror', (err) => consoleErrors.push(`pageerror: ${err.message}`));

  // Bootstrap and sign in through page.request: it shares the browser's
  // cookies, so the console opens signed in; the bearer token is for the
  // API checks below.
  const setup_code = await engine.setupCode();
  await ok(await page.request.post(`${base}/api/bootstrap/aegis/setup`, { data: { passphrase: PASSPHRASE, setup_code } }));
  const admin = await ok(
    await page.request.post(`${base}/api/bootstrap/admin/setup`, { data: { username: USERNAME, password: PASSWORD, setup_code } }),
  );
  const secret: string = admin.mfa.secret;
  let used = totp(secret);
  await ok(await page.request.post(`${base}/api/bootstrap/admin/mfa/verify`, { data: { pending_token: admin.pending_token, code: used.code } }));
  const login = await ok(await page.request.post(`${base}/api/auth/login`, { data: { username: USERNAME, password: PASSWORD } }));
  used = await freshTotp(secret, used.step);
  const sess = await ok(await page.request.post(`${base}/api/auth/mfa/verify`, { data: { pending_token: login.pending_token, code: used.code } }));
  const bearer = { Authorization: `Bearer ${sess.token}` };

  await test.step('rotate the passphrase on the Server page', async () => {
    await page.goto(`${base}/server`);
    const section = page.getByTestId('master-cipher');
    await expect(section.getByTestId('cipher-state')).toHaveText('Unlocked');
    await expect(section.getByTestId('cipher-rotated-at')).toHaveText('Never');
    await section.getByRole('button', { name: 'Rotate passphrase' }).click();

    let dialog = page.getByRole('dialog', { name: 'Rotate the passphrase' });
    await dialog.getByLabel('Current passphrase').fill(PASSPHRASE);
    await dialog.getByLabel('New passphrase', { exact: true }).fill(ROTATED);
    await dialog.getByLabel('Repeat the new passphrase').fill(ROTATED);
    await dialog.getByRole('button', { name: 'Continue' }).click();

    // The same title, now asking who you are: password and a fresh code.
    dialog = page.getByRole('dialog', { name: 'Rotate the passphrase' });
    await expect(dialog.getByLabel('Your password')).toBeVisible();
    await dialog.getByLabel('Your password').fill(PASSWORD);
    used = await freshTotp(secret, used.step);
    await dialog.getByLabel('Authenticator code').fill(used.code);
    await dialog.getByRole('button', { name: 'Rotate passphrase' }).click();

    await expect(page.getByTestId('cipher-rotated')).toBeVisible();
    await expect(page.getByRole('dialog')).toHaveCount(0);
    await expect(section.getByTestId('cipher-rotated-at')).not.toHaveText('Never');
    await page.screenshot({ path: join(artifactsDir, 'cipher-01-rotated.png'), fullPage: true });

    // The Engine now takes the new passphrase and refuses the old one.
    await ok(await page.request.post(`${base}/api/aegis/unlock`, { headers: bearer, data: { passphrase: ROTATED } }));
    const old = await page.request.post(`${base}/api/aegis/unlock`, { headers: bearer, data: { passphrase: PASSPHRASE } });
    expect(old.status(), await old.text()).toBe(401);
    expect((await old.json()).error).toBe('invalid_passphrase');
  });

  await test.step('force a reset: the codes are shown once, and the setup code sets up a new cipher', async () => {
    const section = page.getByTestId('master-cipher');
    await section.getByRole('button', { name: 'Force reset' }).click();
    let dialog = page.getByRole('dialog', { name: 'Force reset the master cipher?' });
    await expect(dialog.getByTestId('force-reset-consequences')).toContainText('Every session ends');
    await dialog.getByLabel('Type FORCE RESET to confirm').fill('FORCE RESET');
    await dialog.getByRole('button', { name: 'Continue' }).click();

    dialog = page.getByRole('dialog', { name: 'Force reset the master cipher' });
    await dialog.getByLabel('Your password').fill(PASSWORD);
    used = await freshTotp(secret, used.step);
    await dialog.getByLabel('Authenticator code').fill(used.code);
    await dialog.getByRole('button', { name: 'Reset the master cipher' }).click();

    await expect(page.getByTestId('reset-setup-code')).not.toBeEmpty();
    await expect(page.getByTestId('reset-recovery-code')).not.toBeEmpty();
    await page.screenshot({ path: join(artifactsDir, 'cipher-02-reset-codes.png'), fullPage: true });
    expect((await page.request.get(`${base}/api/auth/me`, { headers: bearer })).status()).toBe(401);

    await page.getByLabel('I have saved both codes').check();
    await page.getByRole('button', { name: 'Continue to set up the new cipher' }).click();
    await expect(page.getByRole('heading', { name: 'Set the master cipher' })).toBeVisible();
    await page.getByLabel('Passphrase', { exact: true }).fill('cipher e2e passphrase after reset');
    await page.getByLabel('Confirm passphrase').fill('cipher e2e passphrase after reset');
    await page.getByRole('button', { name: 'Set master cipher' }).click();
    await expect(page.getByRole('heading', { name: 'Recover an administrator' })).toBeVisible();
  });

  expect(consoleErrors).toEqual([]);
});
