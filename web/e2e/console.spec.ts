import { expect, request, test, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSetupCode } from './engine';
import { freshTotp, totp } from './totp';

// One walk through a brand-new deployment, against the real Engine that
// global-setup.ts started: master cipher, first administrator with TOTP,
// sign-in, sites, a toast through the event stream, operators and the audit
// trail on the Access page, sign-out, and the new operator's first sign-in
// with only its assigned site in view.

const artifacts = join(dirname(fileURLToPath(import.meta.url)), 'artifacts');
mkdirSync(artifacts, { recursive: true });

const PASSPHRASE = 'e2e master cipher passphrase';
const USERNAME = 'admin';
const PASSWORD = 'e2e admin password 123';
const OPERATOR_PASSWORD = 'e2e operator password 456';

async function shot(page: Page, name: string) {
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}

/** POST with the browser's session cookie and the CSRF header, like the console does. */
async function postAsBrowser(page: Page, path: string, body: unknown) {
  return page.evaluate(
    async ({ path, body }) => {
      const csrf = document.cookie
        .split(';')
        .map((c) => c.trim())
        .find((c) => c.startsWith('cairn_csrf='))
        ?.slice('cairn_csrf='.length);
      const res = await fetch(path, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': decodeURIComponent(csrf ?? '') },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.text() };
    },
    { path, body },
  );
}

test.use({ baseURL: process.env.CAIRN_E2E_BASE_URL });

/** The setup code the global Engine wrote (or CAIRN_E2E_SETUP_CODE for an Engine started elsewhere). */
async function setupCode(): Promise<string> {
  if (process.env.CAIRN_E2E_SETUP_CODE) return process.env.CAIRN_E2E_SETUP_CODE;
  const file = process.env.CAIRN_E2E_SETUP_CODE_FILE;
  if (!file) throw new Error('CAIRN_E2E_SETUP_CODE_FILE (or CAIRN_E2E_SETUP_CODE) names the Engine setup code');
  return readSetupCode(file);
}

test('a new deployment: setup wizard, sign-in, sites, toasts, access, sign-out', async ({ page }) => {
  const consoleErrors: string[] = [];
  // The Engine's Content-Security-Policy must not block anything the console does.
  const cspViolations: string[] = [];
  page.on('pageerror', (err) => consoleErrors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') console.log(`[browser ${msg.type()}] ${msg.text()}`);
    if (/Content Security Policy/i.test(msg.text())) cspViolations.push(msg.text());
  });

  let usedStep = 0;
  let secret = '';

  await test.step('setup code', async () => {
    await page.goto('/');
    await expect(page).toHaveTitle('Cairn');
    await expect(page.getByRole('heading', { name: 'Enter the setup code' })).toBeVisible();
    await shot(page, '00-setup-code');
    // A wrong code is refused when the cipher step sends it: asked again.
    await page.getByLabel('Setup code', { exact: true }).fill('WRONG-SETUP-CODE');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByLabel('Confirm passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Set master cipher' }).click();
    await expect(page.getByText('That setup code was not accepted')).toBeVisible();
    // The operator reads the code `cairn serve` printed (here, its file).
    await page.getByLabel('Setup code', { exact: true }).fill(await setupCode());
    await page.getByRole('button', { name: 'Continue' }).click();
  });

  await test.step('master cipher', async () => {
    await expect(page.getByRole('heading', { name: 'Set the master cipher' })).toBeVisible();
    await shot(page, '01-aegis-setup');
    await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByLabel('Confirm passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Set master cipher' }).click();
    await expect(page.getByRole('heading', { name: 'Create the administrator' })).toBeVisible({ timeout: 60_000 });
  });

  await test.step('first administrator and authenticator', async () => {
    await page.getByLabel('Username', { exact: true }).fill(USERNAME);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByLabel('Confirm password', { exact: true }).fill(PASSWORD);
    await shot(page, '02-admin-setup');
    await page.getByRole('button', { name: 'Create administrator' }).click();

    await expect(page.getByRole('heading', { name: 'Set up the authenticator' })).toBeVisible({ timeout: 60_000 });
    await expect(page.getByTestId('totp-qr')).toBeVisible();
    secret = ((await page.getByTestId('totp-secret').textContent()) ?? '').trim();
    expect(secret).toMatch(/^[A-Z2-7]+=*$/);
    await shot(page, '03-authenticator');

    const first = totp(secret);
    usedStep = first.step;
    await page.getByLabel('Authentication code', { exact: true }).fill(first.code);
    await page.getByRole('button', { name: 'Verify and finish' }).click();
    await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
    await expect(page.getByText('Setup is complete')).toBeVisible();
    await shot(page, '04-setup-complete');
  });

  await test.step('sign in with password and a fresh code', async () => {
    await page.getByLabel('Username', { exact: true }).fill(USERNAME);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect(page.getByRole('heading', { name: 'Two-step verification' })).toBeVisible();
    await expect(page.getByTestId('totp-secret')).toHaveCount(0);
    // The code of the step used to finish setup is refused; wait for the next one.
    const fresh = await freshTotp(secret, usedStep);
    usedStep = fresh.step;
    await page.getByLabel('Authentication code', { exact: true }).fill(fresh.code);
    await shot(page, '05-mfa');
    const verified = page.waitForResponse((r) => r.url().endsWith('/api/auth/mfa/verify'));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    // A browser's session is the HttpOnly cookie alone: no token in the body for scripts to read.
    const body = await (await verified).json();
    expect(body.user?.username).toBe(USERNAME);
    expect(body).not.toHaveProperty('token');

    await expect(page.getByTestId('current-username')).toHaveText(USERNAME);
    await expect(page).toHaveURL(/\/sites$/);
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === 'cairn_session');
    expect(session?.httpOnly).toBe(true);
    expect(cookies.find((c) => c.name === 'cairn_csrf')?.httpOnly).toBe(false);
    expect(cspViolations).toEqual([]);
  });

  await test.step('create a site and see it in the grid', async () => {
    await expect(page.getByRole('heading', { name: 'Sites', exact: true })).toBeVisible();
    await expect(page.getByText('No sites yet')).toBeVisible();
    await page.getByRole('button', { name: 'Create site' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name', { exact: true }).fill('Head Office');
    await expect(dialog.getByLabel('Slug', { exact: true })).toHaveValue('head-office');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await expect(dialog).toBeHidden();
    const row = page.locator('.ag-row', { hasText: 'Head Office' });
    await expect(row).toBeVisible();
    await expect(row).toContainText('head-office');
    await expect(row).toContainText('site:head-office');
    await shot(page, '06-site-created');
  });

  await test.step('a duplicate slug is shown under the Slug field', async () => {
    await page.getByRole('button', { name: 'Create site' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name', { exact: true }).fill('Second office');
    const slug = dialog.getByLabel('Slug', { exact: true });
    await slug.fill('head-office');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await expect(slug).toHaveAttribute('aria-invalid', 'true');
    const helperId = await slug.getAttribute('aria-describedby');
    expect(helperId).toBeTruthy();
    const helper = page.locator(`[id="${helperId}"]`);
    await expect(helper).toHaveClass(/Mui-error/);
    await expect(helper).not.toHaveText(/Names the site worker/);
    await expect(dialog.getByLabel('Name', { exact: true })).toHaveAttribute('aria-invalid', 'false');
    await shot(page, '07-duplicate-slug');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(dialog).toBeHidden();
    await expect(page.locator('.ag-center-cols-container .ag-row')).toHaveCount(1);
  });

  await test.step('a toast sent through the API appears', async () => {
    await expect(page.getByTestId('stream-status')).toHaveAttribute('data-status', 'open');
    const sent = await postAsBrowser(page, '/api/notifications/notify', {
      title: 'Backup finished',
      message: 'Configuration backup written.\nNext run in 24 hours.',
      icon: 'schedule',
      variant: 'warning',
      ttl_ms: 60_000,
    });
    expect(sent.status, sent.body).toBe(200);
    const toast = page.getByTestId('toast').filter({ hasText: 'Backup finished' });
    await expect(toast).toBeVisible();
    await expect(toast).toHaveAttribute('data-variant', 'warning');
    await expect(toast).toHaveAttribute('data-icon', 'schedule');
    expect(await toast.getByTestId('toast-message').innerText()).toBe('Configuration backup written.\nNext run in 24 hours.');
    await shot(page, '08-toast');

    // More than five: only the five newest stay, newest on top.
    for (let i = 1; i <= 6; i++) {
      const r = await postAsBrowser(page, '/api/notifications/notify', {
        title: `Burst ${i}`,
        message: `Toast number ${i}`,
        variant: i % 2 ? 'info' : 'error',
        icon: i === 6 ? 'no-such-icon' : 'device',
        ttl_ms: 60_000,
      });
      expect(r.status, r.body).toBe(200);
    }
    await expect(page.getByTestId('toast').first()).toContainText('Burst 6');
    await expect(page.getByTestId('toast')).toHaveCount(5);
    await expect(page.getByTestId('toast').first()).toHaveAttribute('data-icon', 'bell');
    await expect(page.getByTestId('toast').filter({ hasText: 'Backup finished' })).toHaveCount(0);
    await shot(page, '09-toast-stack');
    await page.getByTestId('toast').first().getByRole('button', { name: 'Close notification' }).click();
    await expect(page.getByTestId('toast')).toHaveCount(4);
    for (let left = 4; left > 0; left--) {
      await page.getByTestId('toast').first().getByRole('button', { name: 'Close notification' }).click();
      await expect(page.getByTestId('toast')).toHaveCount(left - 1);
    }
  });

  await test.step('server and profile pages', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Server' }).click();
    await expect(page.getByRole('heading', { name: 'Server', exact: true })).toBeVisible();
    await expect(page.locator('.ag-row', { hasText: 'Engine' })).toBeVisible();
    await expect(page.locator('.ag-row', { hasText: 'site:head-office' })).toBeVisible();
    await shot(page, '10-server');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Devices' }).click();
    await expect(page.getByRole('heading', { name: 'Devices', exact: true })).toBeVisible();
    // A new deployment has no enrolled agent: the page says how to enroll one.
    await expect(page.getByTestId('devices-empty')).toBeVisible();

    await page.getByTestId('user-menu-button').click();
    await page.getByRole('menuitem', { name: 'Profile' }).click();
    await expect(page.getByTestId('profile-username')).toHaveText(USERNAME);
    await expect(page.getByTestId('profile-mfa')).toHaveText('Authenticator app set up');
    await shot(page, '11-profile');
  });

  await test.step('profile: an API token, shown once, used by a script, revoked', async () => {
    const section = page.getByTestId('tokens-section');
    await section.getByRole('button', { name: 'Create a token' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create an API token' });
    await dialog.getByLabel('Name').fill('e2e script');
    await dialog.getByRole('button', { name: 'Create token' }).click();
    const shown = page.getByRole('dialog', { name: 'Copy your new token' });
    const token = await shown.getByTestId('new-token').inputValue();
    expect(token).toMatch(/^cairn_pat_/);
    await shot(page, '11b-profile-token-created');
    await shown.getByRole('button', { name: 'Done' }).click();
    await expect(section.getByTestId('token-row')).toHaveCount(1);
    await expect(section.getByTestId('token-row')).toContainText('Read only · never used');

    // A script without the browser's cookies: reads work, changes do not.
    const script = await request.newContext({ baseURL: process.env.CAIRN_E2E_BASE_URL, extraHTTPHeaders: { Authorization: `Bearer ${token}` } });
    const me = await script.get('/api/auth/me');
    expect(me.status()).toBe(200);
    expect((await me.json()).username).toBe(USERNAME);
    expect((await script.post('/api/sites', { data: { name: 'Nope', site_worker_slug: 'nope' } })).status()).toBe(403);

    await page.reload();
    await expect(section.getByTestId('token-row')).toContainText('last used');
    await section.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog', { name: 'Revoke e2e script?' }).getByRole('button', { name: 'Revoke token' }).click();
    await expect(section.getByText('No API tokens yet.')).toBeVisible();
    expect((await script.get('/api/auth/me')).status()).toBe(401);
    await script.dispose();
  });

  await test.step('access: create an operator and assign it the site', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Access' }).click();
    await expect(page.getByRole('heading', { name: 'Access', exact: true })).toBeVisible();
    await expect(page.getByRole('tab', { name: 'Operators' })).toHaveAttribute('aria-selected', 'true');
    const adminRow = page.locator('.ag-center-cols-container .ag-row[row-id="admin"]');
    await expect(adminRow.locator('[col-id="role"]')).toHaveText('Admin');
    await expect(adminRow).toContainText('All sites');

    await page.getByRole('button', { name: 'New operator' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Username', { exact: true }).fill('operator1');
    await dialog.getByLabel('Password', { exact: true }).fill(OPERATOR_PASSWORD);
    await dialog.getByLabel('Confirm password', { exact: true }).fill(OPERATOR_PASSWORD);
    await expect(dialog.getByLabel('Role', { exact: true })).toHaveValue('operator');
    await shot(page, '12-access-new-operator');
    await dialog.getByRole('button', { name: 'Create' }).click();
    // Account administration needs a fresh proof of identity: the console
    // asks once, then sends the request again (docs/api.md "Re-authentication").
    const sudo = page.getByRole('dialog').filter({ has: page.getByTestId('sudo-explainer') });
    await expect(sudo).toBeVisible();
    const proof = await freshTotp(secret, usedStep);
    usedStep = proof.step;
    await sudo.getByLabel('Your password').fill(PASSWORD);
    await sudo.getByLabel('Authenticator code').fill(proof.code);
    await shot(page, '12b-access-confirm-identity');
    await sudo.getByRole('button', { name: 'Confirm' }).click();
    await expect(sudo).toBeHidden();
    await expect(dialog).toBeHidden();
    const row = page.locator('.ag-center-cols-container .ag-row[row-id="operator1"]');
    await expect(row).toBeVisible();
    await expect(row.locator('[col-id="role"]')).toHaveText('Operator');
    await expect(row.locator('[col-id="auth_source"]')).toHaveText('Local');
    await expect(row.locator('[col-id="mfa_enabled"]')).toHaveText('Required');
    await expect(row.locator('[col-id="mfa_configured"]')).toHaveText('Not set up');
    await expect(row.locator('[col-id="sites"]')).toHaveText('None');
    await expect(row.locator('[col-id="last_login_at"]')).toHaveText('Never');

    // The same username again: the Engine's 409 lands under Username.
    await page.getByRole('button', { name: 'New operator' }).click();
    await dialog.getByLabel('Username', { exact: true }).fill('operator1');
    await dialog.getByLabel('Password', { exact: true }).fill(OPERATOR_PASSWORD);
    await dialog.getByLabel('Confirm password', { exact: true }).fill(OPERATOR_PASSWORD);
    await dialog.getByRole('button', { name: 'Create' }).click();
    const username = dialog.getByLabel('Username', { exact: true });
    await expect(username).toHaveAttribute('aria-invalid', 'true');
    const helper = page.locator(`[id="${await username.getAttribute('aria-describedby')}"]`);
    await expect(helper).toHaveClass(/Mui-error/);
    await expect(dialog.getByLabel('Password', { exact: true })).toHaveAttribute('aria-invalid', 'false');
    await shot(page, '13-access-username-taken');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(dialog).toBeHidden();

    await page.getByRole('button', { name: 'Sites of operator1' }).click();
    await expect(dialog.getByRole('heading', { name: 'Sites of operator1' })).toBeVisible();
    const headOffice = dialog.getByRole('checkbox', { name: 'Head Office' });
    await expect(headOffice).not.toBeChecked();
    await headOffice.check();
    await shot(page, '14-access-assign-sites');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect(dialog).toBeHidden();
    await expect(row.locator('[col-id="sites"]')).toHaveText('Head Office');
    await expect(page.getByTestId('operators-notice')).toContainText('operator1: 1 site assigned');
    await shot(page, '15-access-operators');

    // The dialog starts from what the Engine stored.
    await page.getByRole('button', { name: 'Sites of operator1' }).click();
    await expect(dialog.getByRole('checkbox', { name: 'Head Office' })).toBeChecked();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(dialog).toBeHidden();

    // The only administrator cannot delete itself.
    await page.getByRole('button', { name: 'Actions for admin' }).click();
    await page.getByRole('menuitem', { name: 'Delete…' }).click();
    await dialog.getByRole('button', { name: 'Delete' }).click();
    const refusal = dialog.getByTestId('error-alert');
    await expect(refusal).toHaveAttribute('data-code', 'last_admin');
    await expect(refusal).toContainText('Last administrator');
    await shot(page, '16-access-last-admin');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(dialog).toBeHidden();
    await expect(adminRow).toBeVisible();
  });

  await test.step('access: the audit trail shows the changes', async () => {
    await page.getByRole('tab', { name: 'Audit' }).click();
    await expect(page).toHaveURL(/\/access\/audit$/);
    const rows = page.locator('.ag-center-cols-container .ag-row');
    const status = (code: number) => ({ has: page.locator('[col-id="status"]', { hasText: new RegExp(`^${code}$`) }) });
    const siteCreated = rows.filter({ hasText: 'POST /api/sites' }).filter(status(201));
    await expect(siteCreated).toHaveCount(1);
    await expect(siteCreated).toContainText(USERNAME);
    await expect(siteCreated.getByTestId('audit-outcome')).toHaveText('success');
    const operatorCreated = rows.filter({ hasText: 'POST /api/users' }).filter(status(201));
    await expect(operatorCreated).toHaveCount(1);
    await expect(operatorCreated.getByTestId('audit-outcome')).toHaveText('success');
    const taken = rows.filter({ hasText: 'POST /api/users' }).filter(status(409));
    await expect(taken.getByTestId('audit-outcome')).toHaveText('conflict');
    await expect(rows.filter({ hasText: 'POST /api/user_site_assignments/assign' })).toHaveCount(1);
    const refused = rows.filter({ hasText: 'DELETE /api/users/{username}' });
    await expect(refused).toContainText('username=admin');
    await expect(refused.getByTestId('audit-outcome')).toHaveText('last_admin');
    await shot(page, '17-access-audit');

    await page.getByLabel('Username', { exact: true }).fill('nobody-here');
    await expect(page.getByText('No entries for this username.')).toBeVisible();
    await page.getByLabel('Username', { exact: true }).fill(USERNAME);
    await expect(siteCreated).toHaveCount(1);
  });

  await test.step('a second site the operator is not assigned to', async () => {
    const created = await postAsBrowser(page, '/api/sites', { name: 'Branch', site_worker_slug: 'branch' });
    expect(created.status, created.body).toBe(201);
  });

  await test.step('sign out', async () => {
    await page.getByTestId('user-menu-button').click();
    await page.getByRole('menuitem', { name: 'Sign out' }).click();
    await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
    await shot(page, '18-signed-out');
    const me = await page.request.get('/api/auth/me');
    expect(me.status()).toBe(401);
  });

  await test.step('the operator sets up MFA, signs in and sees only its site', async () => {
    await page.getByLabel('Username', { exact: true }).fill('operator1');
    await page.getByLabel('Password', { exact: true }).fill(OPERATOR_PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect(page.getByRole('heading', { name: 'Set up your authenticator' })).toBeVisible();
    const operatorSecret = ((await page.getByTestId('totp-secret').textContent()) ?? '').trim();
    await page.getByLabel('Authentication code', { exact: true }).fill(totp(operatorSecret).code);
    await page.getByRole('button', { name: 'Verify and sign in' }).click();
    await expect(page.getByTestId('current-username')).toHaveText('operator1');
    await expect(page).toHaveURL(/\/sites$/);
    await expect(page.locator('.ag-row', { hasText: 'Head Office' })).toBeVisible();
    await expect(page.locator('.ag-center-cols-container .ag-row')).toHaveCount(1);
    await expect(page.getByText('Branch')).toHaveCount(0);
    await shot(page, '19-operator-sites');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Access' }).click();
    await expect(page.getByTestId('admins-only')).toContainText('Administrators only');
    await expect(page.getByRole('tab')).toHaveCount(0);
    await shot(page, '20-operator-access');

    await page.getByTestId('user-menu-button').click();
    await page.getByRole('menuitem', { name: 'Sign out' }).click();
    await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  });

  expect(consoleErrors).toEqual([]);
  expect(cspViolations).toEqual([]);
});
