import { expect, test, type APIRequestContext } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { hostname as machineHostname } from 'node:os';
import { join } from 'node:path';
import { startAgent, type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { freshTotp, totp } from './totp';

// A real cairn-agent on this machine enrolls with an Engine of its own, is
// approved through the API, and the console shows it: the devices grid,
// then the device page, whose tabs must hold this machine's real data.

const USERNAME = 'admin';
const PASSWORD = 'devices e2e admin password';
const AGENT_HOST = 'e2e-console-agent';

let engine: Engine;
let agent: Agent | undefined;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-devices', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
});

async function ok(res: Awaited<ReturnType<APIRequestContext['post']>>, status = 200): Promise<any> {
  expect(res.status(), await res.text()).toBe(status);
  return res.json();
}

function prettyName(): string {
  const line = readFileSync('/etc/os-release', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('PRETTY_NAME='));
  return (line ?? '').replace('PRETTY_NAME=', '').replace(/^"|"$/g, '');
}

test('an enrolled agent shows in the devices grid and its page holds this machine\'s data', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const api = page.request;

  // Changes through page.request carry the session as a bearer token (a
  // cookie-authenticated change would need the CSRF header too).
  let auth: Record<string, string> = {};
  await test.step('bootstrap and sign in', async () => {
    await ok(await api.post(`${base}/api/bootstrap/aegis/setup`, { data: { passphrase: 'devices e2e passphrase' } }));
    const admin = await ok(await api.post(`${base}/api/bootstrap/admin/setup`, { data: { username: USERNAME, password: PASSWORD } }));
    const first = totp(admin.mfa.secret);
    await ok(await api.post(`${base}/api/bootstrap/admin/mfa/verify`, { data: { pending_token: admin.pending_token, code: first.code } }));
    const login = await ok(await api.post(`${base}/api/auth/login`, { data: { username: USERNAME, password: PASSWORD } }));
    const second = await freshTotp(admin.mfa.secret, first.step);
    const sess = await ok(await api.post(`${base}/api/auth/mfa/verify`, { data: { pending_token: login.pending_token, code: second.code } }));
    auth = { Authorization: `Bearer ${sess.token}` };
  });

  await test.step('enroll a real agent and approve it', async () => {
    const site = await ok(await api.post(`${base}/api/sites`, { headers: auth, data: { name: 'E2E Devices', site_worker_slug: 'e2e-devices' } }), 201);
    const code = await ok(await api.post(`${base}/api/admin/enrollment-codes`, { headers: auth, data: { site_id: site.site_id } }), 201);
    agent = await startAgent({ name: 'agent-devices', server: base, code: code.code, hostname: AGENT_HOST });
    let approvalID = '';
    await expect
      .poll(async () => {
        const list = await (await api.get(`${base}/api/admin/device-approvals?status=pending`)).json();
        approvalID = list.approvals.find((a: any) => a.hostname === AGENT_HOST)?.id ?? '';
        return approvalID;
      }, { timeout: 60_000 })
      .not.toBe('');
    await ok(await api.post(`${base}/api/admin/device-approvals/${approvalID}/approve`, { headers: auth }));
    await agent.enrolled;
    agent.run();
    await expect
      .poll(async () => {
        const list = await (await api.get(`${base}/api/devices`)).json();
        return list.devices.find((d: any) => d.hostname === AGENT_HOST)?.connectivity_status;
      }, { timeout: 120_000 })
      .toBe('Connected');
    await expect
      .poll(async () => (await (await api.get(`${base}/api/device/details/${AGENT_HOST}`)).text()).includes('"bash"'), { timeout: 60_000 })
      .toBe(true);
  });

  await test.step('the devices grid shows it Connected', async () => {
    await page.goto(`${base}/devices`);
    const row = page.getByRole('row', { name: new RegExp(AGENT_HOST) });
    await expect(row).toBeVisible();
    await expect(row).toContainText('Connected');
    await expect(row).toContainText(prettyName());
    await page.screenshot({ path: join(artifactsDir, 'devices-01-grid.png'), fullPage: true });
    await row.getByRole('link', { name: AGENT_HOST }).click();
    await expect(page).toHaveURL(new RegExp(`/devices/${AGENT_HOST}`));
  });

  await test.step('the device page tabs hold this machine\'s data', async () => {
    await expect(page.getByRole('heading', { name: AGENT_HOST })).toBeVisible();
    const tab = (name: string) => page.getByRole('tab', { name, exact: true });
    const panel = page.getByRole('tabpanel');

    await tab('Summary').click();
    await expect(panel).toContainText(prettyName());

    await tab('Hardware').click();
    await expect(panel.getByRole('table', { name: 'Disks' })).toBeVisible();

    await tab('Network').click();
    const nics = panel.getByRole('table', { name: 'Network interfaces' });
    await expect(nics).toContainText('lo');
    await expect(nics).toContainText('127.0.0.1/8');

    await tab('Software').click();
    await expect(panel).toContainText('bash');

    await tab('Processes').click();
    await expect(panel).toContainText('cairn-agent');

    await tab('Sessions').click();
    await expect(panel).toBeVisible();

    await tab('Agent Health').click();
    await expect(panel.getByRole('table', { name: 'Roles' })).toContainText('device_audit');

    await tab('Activity').click();
    await expect(panel).toContainText(/enrolled/i);
    await page.screenshot({ path: join(artifactsDir, 'devices-02-device-page.png'), fullPage: true });
  });
  expect(machineHostname()).not.toBe('');
});
