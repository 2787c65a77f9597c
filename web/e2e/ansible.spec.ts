import { expect, test, type Page } from '@playwright/test';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, signIn } from './fleet';

// An Ansible playbook from the console on a real agent (issue 27 item 2):
// the playbook is written in the assembly editor, quick-run on an enrolled
// cairn-agent, which runs Debian's ansible-playbook against itself
// (scripts/deps.sh test installs it), and its output and play recap show
// per device.

const USERNAME = 'admin';
const PASSWORD = 'ansible e2e admin password';
const AGENT_HOST = 'e2e-ansible-agent';
const PLAYBOOK = 'e2e message of the day';
const TARGET = join(artifactsDir, 'ansible-motd.txt');
const BODY = `- hosts: localhost
  gather_facts: false
  tasks:
    - name: write the message
      ansible.builtin.copy:
        dest: ${TARGET}
        content: "hello from a playbook\\n"
`;

let engine: Engine;
let agent: Agent | undefined;

test.beforeAll(async () => {
  rmSync(TARGET, { force: true });
  engine = await startEngine({ name: 'engine-ansible', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
  rmSync(TARGET, { force: true });
});

async function pick(page: Page, scope: ReturnType<Page['getByRole']>, label: string, text: string) {
  const box = scope.getByRole('combobox', { name: label });
  await box.click();
  await box.fill(text);
  await page.getByRole('option', { name: new RegExp(text) }).first().click();
}

test('a playbook written in the console runs on a real agent with its output and recap', async ({ page }) => {
  test.setTimeout(420_000);
  const base = engine.baseURL;
  const api = page.request;
  const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
  agent = await enrollConnected(api, base, auth, { name: 'agent-ansible', hostname: AGENT_HOST, slug: 'e2e-ansible' });

  await test.step('write the playbook in the assembly editor', async () => {
    await page.goto(`${base}/automation`);
    await page.getByRole('button', { name: 'New assembly' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('textbox', { name: 'Name', exact: true }).fill(PLAYBOOK);
    await dialog.getByRole('combobox', { name: 'Kind' }).click();
    await page.getByRole('option', { name: 'Ansible playbook' }).click();
    await expect(dialog.getByTestId('playbook-help')).toContainText('ansible-playbook');
    const body = dialog.locator('.cm-content[aria-label="Body"]');
    await expect(body).toHaveAttribute('data-language', 'yaml');
    await body.click();
    await page.keyboard.insertText(BODY);
    await expect(body).toContainText('ansible.builtin.copy');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await expect(page.getByTestId('assembly-saved')).toContainText(`Saved ${PLAYBOOK} as version 1.`);
    await dialog.locator('.MuiDialogActions-root').getByRole('button', { name: 'Close' }).click();
  });

  const runOnce = async (changed: string) => {
    await page.getByRole('button', { name: `Run ${PLAYBOOK}` }).click();
    const dialog = page.getByRole('dialog', { name: 'Run a script' });
    await expect(dialog.getByRole('combobox', { name: 'Assembly' })).toHaveValue(PLAYBOOK);
    await pick(page, dialog, 'Devices', AGENT_HOST);
    await dialog.getByRole('button', { name: 'Run' }).click();
    const results = page.getByRole('dialog', { name: `Quick run on ${AGENT_HOST}` });
    const view = results.getByTestId('run-view');
    await expect(view).toHaveAttribute('data-run-status', /^(succeeded|failed)$/, { timeout: 180_000 });
    await expect(results.getByTestId('stdout')).toContainText('PLAY RECAP');
    await expect(results.getByTestId('stdout')).toContainText('TASK [write the message]');
    await expect(results.getByTestId('exit-code')).toHaveText('Exit code: 0');
    await expect(view).toHaveAttribute('data-run-status', 'succeeded');
    const recap = results.getByRole('group', { name: 'Play recap' });
    await expect(recap.getByTestId('recap-ok')).toHaveText('ok 1');
    await expect(recap.getByTestId('recap-changed')).toHaveText(changed);
    await expect(recap.getByTestId('recap-failed')).toHaveText('failed 0');
    return results;
  };

  await test.step('run it on the agent and see its output and recap', async () => {
    const results = await runOnce('changed 1');
    await expect(results.getByTestId('stdout')).toContainText('changed: [localhost]');
    expect(existsSync(TARGET)).toBe(true);
    expect(readFileSync(TARGET, 'utf8')).toBe('hello from a playbook\n');
    await page.screenshot({ path: join(artifactsDir, 'ansible-01-playbook-run.png'), fullPage: true });
    await results.locator('.MuiDialogActions-root').getByRole('button', { name: 'Close' }).click();
  });

  await test.step('a second run finds the device as the playbook wants it', async () => {
    const results = await runOnce('changed 0');
    await expect(results.getByTestId('stdout')).toContainText('ok: [localhost]');
    await results.locator('.MuiDialogActions-root').getByRole('button', { name: 'Close' }).click();
  });
});
