import { expect, test, type APIRequestContext } from '@playwright/test';
import { join } from 'node:path';
import { artifactsDir, startEngine, type Engine } from './engine';
import { freshTotp, totp } from './totp';

// Passkeys against a real Engine of their own: browsers refuse an IP address
// as WebAuthn relying party, so this Engine's public URL is
// http://localhost:<port> (the main walk's Engine stays untouched). Chromium's
// virtual authenticator, driven through the DevTools protocol, stands in for
// a platform authenticator with user verification.

const USERNAME = 'admin';
const PASSWORD = 'passkey e2e admin password';
const PASSPHRASE = 'passkey e2e passphrase';

let engine: Engine;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-passkeys', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await engine?.stop();
});

// The answer's JSON; its shapes are the Engine tests' business.
async function ok(res: Awaited<ReturnType<APIRequestContext['post']>>): Promise<any> {
  expect(res.status(), await res.text()).toBe(200);
  return res.json();
}

test('register a passkey on the profile page, sign out, sign in with the passkey alone', async ({ page }) => {
  test.setTimeout(240_000);
  const base = engine.baseURL;
  const consoleErrors: string[] = [];
  page.on('pageerror', (err) => consoleErrors.push(`pageerror: ${err.message}`));

  // A deployment of its own, bootstrapped through the API; page.request
  // shares the browser's cookies, so the password sign-in carries over.
  const setup_code = await engine.setupCode();
  await ok(await page.request.post(`${base}/api/bootstrap/aegis/setup`, { data: { passphrase: PASSPHRASE, setup_code } }));
  const admin = await ok(
    await page.request.post(`${base}/api/bootstrap/admin/setup`, { data: { username: USERNAME, password: PASSWORD, setup_code } }),
  );
  const first = totp(admin.mfa.secret);
  await ok(
    await page.request.post(`${base}/api/bootstrap/admin/mfa/verify`, {
      data: { pending_token: admin.pending_token, code: first.code },
    }),
  );
  const login = await ok(await page.request.post(`${base}/api/auth/login`, { data: { username: USERNAME, password: PASSWORD } }));
  const second = await freshTotp(admin.mfa.secret, first.step);
  await ok(
    await page.request.post(`${base}/api/auth/mfa/verify`, { data: { pending_token: login.pending_token, code: second.code } }),
  );

  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  });

  await test.step('register on the profile page', async () => {
    await page.goto(`${base}/`);
    await page.getByTestId('user-menu-button').click();
    await page.getByRole('menuitem', { name: 'Profile' }).click();
    await expect(page.getByTestId('profile-username')).toHaveText(USERNAME);
    await expect(page.getByText('No passkeys yet.')).toBeVisible();
    await page.getByLabel('New passkey name').fill('E2E virtual key');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    // Adding a way in asks who you are again: password and a fresh code.
    const dialog = page.getByRole('dialog', { name: 'Add a passkey' });
    await dialog.getByLabel('Your password').fill(PASSWORD);
    await dialog.getByLabel('Authenticator code').fill((await freshTotp(admin.mfa.secret, second.step)).code);
    await dialog.getByRole('button', { name: 'Confirm and add' }).click();
    await expect(page.getByTestId('passkey-row')).toContainText('E2E virtual key');
    await expect(dialog).toHaveCount(0);
    await expect(page.getByTestId('passkey-row')).toContainText('never used');
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(credentials[0].isResidentCredential).toBe(true);
    await page.screenshot({ path: join(artifactsDir, 'passkeys-01-registered.png'), fullPage: true });
  });

  await test.step('sign out', async () => {
    await page.getByTestId('user-menu-button').click();
    await page.getByRole('menuitem', { name: 'Sign out' }).click();
    await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
    expect((await page.request.get(`${base}/api/auth/me`)).status()).toBe(401);
  });

  await test.step('sign in with the passkey alone', async () => {
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await expect(page.getByTestId('user-menu-button')).toBeVisible();
    const me = await page.request.get(`${base}/api/auth/me`);
    expect(me.status()).toBe(200);
    expect((await me.json()).passkey_count).toBe(1);
    await page.getByTestId('user-menu-button').click();
    await page.getByRole('menuitem', { name: 'Profile' }).click();
    await expect(page.getByTestId('passkey-row')).toContainText('last used');
    await page.screenshot({ path: join(artifactsDir, 'passkeys-02-signed-in.png'), fullPage: true });
  });

  await test.step('a passkey assertion satisfies the re-authentication of a sensitive action', async () => {
    // Rotating the master cipher asks who you are again; with a passkey on
    // the account the dialog offers it, and the virtual authenticator
    // answers the assertion (user verification included).
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Server' }).click();
    const section = page.getByTestId('master-cipher');
    await expect(section.getByTestId('cipher-rotated-at')).toHaveText('Never');
    await section.getByRole('button', { name: 'Rotate passphrase' }).click();
    let dialog = page.getByRole('dialog', { name: 'Rotate the passphrase' });
    await dialog.getByLabel('Current passphrase').fill(PASSPHRASE);
    await dialog.getByLabel('New passphrase', { exact: true }).fill(`${PASSPHRASE} rotated`);
    await dialog.getByLabel('Repeat the new passphrase').fill(`${PASSPHRASE} rotated`);
    await dialog.getByRole('button', { name: 'Continue' }).click();
    dialog = page.getByRole('dialog', { name: 'Rotate the passphrase' });
    const reauthOptions = page.waitForResponse((r) => r.url().endsWith('/api/auth/reauth/passkey/options'));
    const rotate = page.waitForResponse((r) => r.url().endsWith('/api/aegis/rotate'));
    await dialog.getByRole('button', { name: 'Use a passkey' }).click();
    expect((await reauthOptions).status()).toBe(200);
    const rotated = await rotate;
    expect(rotated.status(), await rotated.text()).toBe(200);
    // The proof was the passkey, not a password.
    const sent = rotated.request().postDataJSON();
    expect(sent.password).toBeUndefined();
    expect(sent.passkey.ceremony_id).toBeTruthy();
    await expect(page.getByTestId('cipher-rotated')).toBeVisible();
    await expect(section.getByTestId('cipher-rotated-at')).not.toHaveText('Never');
    await page.screenshot({ path: join(artifactsDir, 'passkeys-03-reauth-rotate.png'), fullPage: true });
  });

  expect(consoleErrors).toEqual([]);
});
