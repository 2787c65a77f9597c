import { expect, test, type Page } from '@playwright/test';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, signIn } from './fleet';

// Automation from the console on a real agent: an assembly written in the
// editor is quick-run on an enrolled cairn-agent (signed by the Engine,
// verified and run by the agent), and its output and exit code show live;
// then a cron job for it is created with the Engine's preview of its next
// runs, and listed. Needs the issue 11 routes (assemblies, quick runs,
// scheduled jobs, agent updates) in the Engine under test.

const USERNAME = 'admin';
const PASSWORD = 'automation e2e admin password';
const AGENT_HOST = 'e2e-automation-agent';
const ASSEMBLY = 'e2e hello';
const JOB = 'e2e every five minutes';
const SCRIPT = 'echo "hello from cairn on $(hostname)"\necho "to stderr" >&2\nexit 3';

let engine: Engine;
let agent: Agent | undefined;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-automation', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
});

/** Picks `option` in the MUI Autocomplete labelled `label` inside `scope`. */
async function pick(page: Page, scope: ReturnType<Page['getByRole']>, label: string, text: string) {
  const box = scope.getByRole('combobox', { name: label });
  await box.click();
  await box.fill(text);
  await page.getByRole('option', { name: new RegExp(text) }).first().click();
}

test('an assembly runs on a real agent with its output and exit code, and a cron job for it is listed', async ({ page }) => {
  test.setTimeout(420_000);
  const base = engine.baseURL;
  const api = page.request;
  const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
  agent = await enrollConnected(api, base, auth, { name: 'agent-automation', hostname: AGENT_HOST, slug: 'e2e-auto' });

  await test.step('create an assembly in the editor', async () => {
    await page.goto(`${base}/automation`);
    await expect(page.getByRole('tab', { name: 'Assemblies', selected: true })).toBeVisible();
    await page.getByRole('button', { name: 'New assembly' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('textbox', { name: 'Name', exact: true }).fill(ASSEMBLY);
    await dialog.getByRole('spinbutton', { name: 'Timeout (s)' }).fill('120');
    // CodeMirror: type into its content area; its highlighting must be on.
    const body = dialog.locator('.cm-content[aria-label="Body"]');
    await expect(body).toHaveAttribute('data-language', 'bash');
    await body.click();
    await page.keyboard.insertText(SCRIPT);
    await expect(body).toContainText('to stderr');
    await expect(body.locator('span[class]').first()).toBeVisible();
    await dialog.getByRole('button', { name: 'Create' }).click();
    await expect(page.getByTestId('assembly-saved')).toContainText(`Saved ${ASSEMBLY} as version 1.`);
    // The saved notice has a close icon of its own; this is the dialog's button.
    await dialog.locator('.MuiDialogActions-root').getByRole('button', { name: 'Close' }).click();
    await expect(page.getByRole('button', { name: `Edit ${ASSEMBLY}` })).toBeVisible();
  });

  await test.step('quick-run it on the agent and see its output and exit code', async () => {
    await page.getByRole('button', { name: `Run ${ASSEMBLY}` }).click();
    const dialog = page.getByRole('dialog', { name: 'Run a script' });
    await expect(dialog.getByRole('combobox', { name: 'Assembly' })).toHaveValue(ASSEMBLY);
    await pick(page, dialog, 'Devices', AGENT_HOST);
    await dialog.getByRole('button', { name: 'Run' }).click();

    const results = page.getByRole('dialog', { name: `Quick run on ${AGENT_HOST}` });
    const view = results.getByTestId('run-view');
    // The run finishes when the agent has run the signed script and replied.
    await expect(view).toHaveAttribute('data-run-status', /^(succeeded|failed)$/, { timeout: 120_000 });
    await expect(results.getByTestId('stdout')).toContainText(`hello from cairn on`);
    await expect(results.getByTestId('stderr')).toContainText('to stderr');
    await expect(results.getByTestId('exit-code')).toHaveText('Exit code: 3');
    await expect(view).toHaveAttribute('data-run-status', 'failed');
    await page.screenshot({ path: join(artifactsDir, 'automation-01-quick-run.png'), fullPage: true });
    await results.locator('.MuiDialogActions-root').getByRole('button', { name: 'Close' }).click();
  });

  await test.step('create a cron job with its next runs previewed, and see it listed', async () => {
    await page.getByRole('tab', { name: 'Scheduled jobs' }).click();
    await page.getByRole('button', { name: 'New job' }).click();
    const dialog = page.getByRole('dialog', { name: 'New scheduled job' });
    await dialog.getByRole('textbox', { name: 'Name', exact: true }).fill(JOB);
    await pick(page, dialog, 'Assembly', ASSEMBLY);
    await pick(page, dialog, 'Devices', AGENT_HOST);
    await dialog.getByRole('textbox', { name: 'Cron expression' }).fill('*/5 * * * *');
    await expect(dialog.getByTestId('next-runs').locator('time')).toHaveCount(5);
    await expect(dialog.getByTestId('schedule-words')).toContainText('Every 5 minutes');
    await dialog.getByRole('button', { name: 'Create job' }).click();
    await expect(dialog).toBeHidden();

    const row = page.locator('.ag-row', { hasText: JOB });
    await expect(row).toContainText('Every 5 minutes (');
    await expect(row).toContainText('1 device');
    await expect(row.getByRole('switch', { name: `Enable ${JOB}` })).toBeChecked();
    await page.screenshot({ path: join(artifactsDir, 'automation-02-jobs.png'), fullPage: true });
  });

  await test.step('the device page shows the Agent tab with Update now', async () => {
    await page.goto(`${base}/devices/${AGENT_HOST}/agent`);
    const build = page.getByRole('region', { name: 'Agent build' });
    await expect(build).toBeVisible();
    await expect(build.getByRole('button', { name: 'Update now' })).toBeEnabled();
    await expect(page.getByRole('region', { name: 'Update history' })).toBeVisible();
  });
});
