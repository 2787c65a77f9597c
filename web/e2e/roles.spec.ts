import { expect, test, type Page } from '@playwright/test';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, signIn } from './fleet';

// Issue 27 item 4, from the device page: an operator stops a real agent's
// Remote shell role on the Agent Health tab, the agent reports it Stopped
// (also after a reload) and refuses a shell, which the Terminal tab says;
// started again, the agent reports it Healthy and serves a shell.

const AGENT_HOST = 'e2e-roles-agent';

let engine: Engine;
let agent: Agent | undefined;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-roles', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
});

function shellRow(page: Page) {
  return page.getByRole('table', { name: 'Roles', exact: true }).locator('tr[data-role-key="system:remote_shell"]');
}

async function openAgentHealth(page: Page) {
  await page.getByRole('tab', { name: 'Agent Health', exact: true }).click();
  await expect(page.getByRole('table', { name: 'Roles', exact: true })).toBeVisible();
}

test('a role is stopped and started from the device page, and the agent honours it', async ({ page }) => {
  test.setTimeout(600_000);
  const base = engine.baseURL;

  await test.step('bootstrap, sign in and enroll a real agent', async () => {
    const auth = await signIn(page.request, base, 'admin', 'roles e2e admin password', await engine.setupCode());
    agent = await enrollConnected(page.request, base, auth, {
      name: 'agent-roles',
      hostname: AGENT_HOST,
      slug: 'e2e-roles',
      env: { CAIRN_AGENT_SHELL: '/bin/sh' },
    });
  });

  await test.step('the Remote shell role runs', async () => {
    await page.goto(`${base}/devices/${AGENT_HOST}`);
    await expect(page.getByRole('heading', { name: AGENT_HOST })).toBeVisible();
    await openAgentHealth(page);
    // The agent publishes its role health with its status posts.
    await expect(async () => {
      await page.reload();
      await openAgentHealth(page);
      await expect(shellRow(page).getByTestId('observed-chip')).toHaveText('Healthy', { timeout: 5_000 });
    }).toPass({ timeout: 180_000, intervals: [2_000] });
    await expect(shellRow(page).getByRole('cell').nth(1)).toHaveText('running');
  });

  await test.step('Stop asks first, then the agent reports the role Stopped', async () => {
    await shellRow(page).getByRole('button', { name: 'Stop Remote shell' }).click();
    const dialog = page.getByRole('dialog', { name: 'Stop Remote shell?' });
    await expect(dialog).toContainText(`The agent on ${AGENT_HOST} refuses every request`);
    await dialog.getByRole('button', { name: 'Stop', exact: true }).click();
    await expect(dialog).toBeHidden({ timeout: 120_000 });
    await expect(shellRow(page).getByRole('cell').nth(1)).toHaveText('stopped');
    await expect(shellRow(page).getByTestId('observed-chip')).toHaveText('Stopped');
    // What the agent reports, read again from the Engine.
    await page.reload();
    await openAgentHealth(page);
    await expect(shellRow(page).getByRole('cell').nth(1)).toHaveText('stopped');
    await expect(shellRow(page).getByTestId('observed-chip')).toHaveText('Stopped');
    await expect(shellRow(page).getByRole('button', { name: 'Start Remote shell' })).toBeVisible();
    await page.screenshot({ path: join(artifactsDir, 'roles-01-stopped.png'), fullPage: true });
  });

  await test.step('a stopped role refuses a shell, and the Terminal tab says so', async () => {
    await page.getByRole('tab', { name: 'Terminal', exact: true }).click();
    const refused = page.getByTestId('shell-error');
    await expect(refused).toHaveAttribute('data-code', 'role_stopped', { timeout: 120_000 });
    await expect(refused).toContainText('The Remote shell role is stopped');
    await expect(page.getByTestId('shell-status')).toHaveAttribute('data-status', 'closed');
    await page.screenshot({ path: join(artifactsDir, 'roles-02-shell-refused.png'), fullPage: true });
  });

  await test.step('Start asks first, then the agent reports the role Healthy', async () => {
    await openAgentHealth(page);
    await shellRow(page).getByRole('button', { name: 'Start Remote shell' }).click();
    const dialog = page.getByRole('dialog', { name: 'Start Remote shell?' });
    await dialog.getByRole('button', { name: 'Start', exact: true }).click();
    await expect(dialog).toBeHidden({ timeout: 120_000 });
    await expect(shellRow(page).getByRole('cell').nth(1)).toHaveText('running');
    await expect(async () => {
      await page.reload();
      await openAgentHealth(page);
      await expect(shellRow(page).getByRole('cell').nth(1)).toHaveText('running', { timeout: 5_000 });
      await expect(shellRow(page).getByTestId('observed-chip')).toHaveText('Healthy', { timeout: 5_000 });
    }).toPass({ timeout: 180_000, intervals: [2_000] });
  });

  await test.step('a started role serves a shell again', async () => {
    await page.getByRole('tab', { name: 'Terminal', exact: true }).click();
    await expect(page.getByTestId('shell-status')).toHaveAttribute('data-status', 'connected', { timeout: 120_000 });
    await expect(page.getByTestId('shell-error')).toHaveCount(0);
    const term = page.getByTestId('terminal');
    await term.click();
    await page.keyboard.type('echo cairn-$((6*7))');
    await page.keyboard.press('Enter');
    await expect(term.locator('.xterm-rows')).toContainText('cairn-42', { timeout: 60_000 });
    await page.screenshot({ path: join(artifactsDir, 'roles-03-started.png'), fullPage: true });
  });
});
