import { expect, test, type Locator, type Page } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, ok, signIn } from './fleet';

// Watchdogs end to end (issue 25): a watchdog built in the console's
// editor watches a real init-script service on a real agent (SysV scripts
// in a private directory, as operations.spec.ts does: this machine has no
// systemd). The test stops the service; the agent's inventory says so,
// the evaluation opens an incident, its toast shows, the operator
// acknowledges it on the Alerts page, the watchdog's service_control
// action starts the service again through the command path, and the
// incident resolves once an evaluation sees the service running.
//
// Every wait is on a condition: the agent posts its inventory every
// minute and the watchdogs maintenance job evaluates every minute, so the
// incident opens one to two minutes after the stop and resolves one to
// two minutes after the restart (plus the auto-resolve delay), more on a
// loaded machine.

const USERNAME = 'admin';
const PASSWORD = 'watchdogs e2e admin password';
const AGENT_HOST = 'e2e-watchdog-agent';
const SERVICE = 'cairn-e2e-watched';
const WATCHDOG = 'Watched service down';
const TITLE = `${WATCHDOG} on ${AGENT_HOST}`;

let engine: Engine;
let agent: Agent | undefined;
const work = mkdtempSync(join(tmpdir(), 'cairn-e2e-watchdogs-'));
const initDir = join(work, 'init.d');
const script = join(initDir, SERVICE);
const pidBase = join(work, SERVICE);

function writeService() {
  mkdirSync(initDir, { recursive: true });
  writeFileSync(
    script,
    `#!/bin/sh
BASE='${pidBase}'
running() { [ -f "$BASE.pid" ] && kill -0 "$(cat "$BASE.pid")" 2>/dev/null; }
case "$1" in
start) running && exit 0; sleep 100000 >/dev/null 2>&1 & echo $! > "$BASE.pid"; echo start >> "$BASE.starts" ;;
stop) if running; then kill "$(cat "$BASE.pid")"; fi; rm -f "$BASE.pid" ;;
restart) "$0" stop; "$0" start ;;
status) running && exit 0; exit 3 ;;
*) exit 2 ;;
esac
`,
  );
  chmodSync(script, 0o755);
}

function service(action: 'start' | 'stop' | 'status'): number {
  return spawnSync(script, [action], { stdio: 'ignore' }).status ?? -1;
}

/** How many times the service was started (the test's start, then the watchdog's). */
function starts(): number {
  return existsSync(`${pidBase}.starts`) ? readFileSync(`${pidBase}.starts`, 'utf8').trim().split('\n').length : 0;
}

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-watchdogs', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
  if (existsSync(script)) service('stop');
  rmSync(work, { recursive: true, force: true });
});

/** Picks option in the MUI select labelled label inside scope (its name is the label, then the value). */
async function choose(page: Page, scope: Locator, label: string, option: string) {
  await scope.getByRole('combobox', { name: new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`) }).click();
  await page.getByRole('option', { name: option, exact: true }).click();
  await expect(page.getByRole('listbox')).toHaveCount(0);
}

test('a watchdog built in the console opens an incident on a stopped service, the operator acknowledges it, the remediation starts it and the incident resolves', async ({
  page,
}) => {
  test.setTimeout(900_000);
  const base = engine.baseURL;
  const api = page.request;
  writeService();
  expect(service('start')).toBe(0);

  const serviceState = async () => {
    const list = await ok(await api.get(`${base}/api/device/services/${AGENT_HOST}`));
    return list.services?.find((s: { name: string }) => s.name === SERVICE)?.state ?? '';
  };

  await test.step('bootstrap, sign in and enroll a real agent that sees the service running', async () => {
    const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());
    agent = await enrollConnected(api, base, auth, {
      name: 'agent-watchdogs',
      hostname: AGENT_HOST,
      slug: 'e2e-watchdogs',
      env: { CAIRN_AGENT_INIT_DIR: initDir },
    });
    await expect.poll(serviceState, { timeout: 180_000, intervals: [2_000] }).toBe('running');
  });

  await test.step('build the watchdog in the console', async () => {
    await page.goto(`${base}/alerts/watchdogs`);
    await page.getByRole('button', { name: 'New watchdog' }).click();
    const dialog = page.getByRole('dialog', { name: 'New watchdog' });
    await dialog.getByRole('textbox', { name: 'Name' }).fill(WATCHDOG);
    await choose(page, dialog, 'Severity', 'critical');

    await dialog.getByRole('button', { name: 'Add rule' }).click();
    const rule = dialog.getByTestId('rule-0');
    await choose(page, rule, 'Subject', 'Service state');
    await choose(page, rule, 'Operator', 'not_running');
    await rule.getByRole('textbox', { name: 'Target' }).fill(SERVICE);

    await dialog.getByRole('spinbutton', { name: 'Evaluate every (s)' }).fill('30');
    // The condition must stay clear a minute before the incident resolves:
    // the operator acknowledges it before then, however fast the restart.
    await dialog.getByRole('spinbutton', { name: 'Auto-resolve after clear (s)' }).fill('60');

    await dialog.getByRole('button', { name: 'Add action' }).click(); // a toast
    await dialog.getByRole('button', { name: 'Add action' }).click();
    const remediation = dialog.getByTestId('action-1');
    await choose(page, remediation, 'Action', 'service_control');
    await remediation.getByRole('textbox', { name: 'Service' }).fill(SERVICE);
    await choose(page, remediation, 'Do', 'start');

    await dialog.getByRole('button', { name: 'Preview' }).click();
    await expect(dialog.getByTestId('preview')).toContainText(`${AGENT_HOST}: clear`);
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByRole('table', { name: 'Watchdogs' })).toContainText(WATCHDOG);
    await page.screenshot({ path: join(artifactsDir, 'watchdogs-01-saved.png'), fullPage: true });

    const saved = await ok(await api.get(`${base}/api/watchdogs`));
    expect(saved.watchdogs).toEqual([
      expect.objectContaining({
        name: WATCHDOG,
        severity: 'critical',
        rules: [expect.objectContaining({ subject: 'service', operator: 'not_running', target: SERVICE })],
        actions: [
          expect.objectContaining({ type: 'toast' }),
          expect.objectContaining({ type: 'service_control', service: SERVICE, service_action: 'start' }),
        ],
      }),
    ]);
  });

  await test.step('stopping the service opens an incident and its toast shows', async () => {
    await page.goto(`${base}/alerts`);
    await expect(page.getByRole('table', { name: 'Incidents' })).toContainText('No incidents.');
    expect(service('stop')).toBe(0);
    expect(service('status')).toBe(3);
    const toasts = page.getByRole('region', { name: 'Notifications' });
    await expect(toasts).toContainText(TITLE, { timeout: 420_000 });
    await expect(toasts).toContainText('Watchdog incident');
    await page.screenshot({ path: join(artifactsDir, 'watchdogs-02-toast.png'), fullPage: true });
  });

  await test.step('the operator acknowledges it on the Alerts page', async () => {
    const row = page.getByRole('row').filter({ hasText: TITLE });
    await expect(row).toContainText('Open');
    await row.getByRole('button', { name: 'Acknowledge', exact: true }).click();
    await expect(row).toContainText('Acknowledged');
    await expect(row).toContainText(USERNAME);
  });

  await test.step('the device\'s Watchdogs tab shows it with its incident', async () => {
    // The incident cannot resolve yet: the condition must stay clear a
    // minute first.
    await page.goto(`${base}/devices/${AGENT_HOST}`);
    await page.getByRole('tab', { name: 'Watchdogs', exact: true }).click();
    const row = page.getByRole('tabpanel').getByRole('row').filter({ hasText: WATCHDOG });
    await expect(row).toContainText('critical');
    await expect(row).toContainText('Acknowledged');
  });

  await test.step('the remediation starts the service and the incident resolves', async () => {
    await expect.poll(() => service('status'), { timeout: 300_000, intervals: [1_000] }).toBe(0);
    expect(starts()).toBe(2); // the test's start, then the watchdog's
    await page.goto(`${base}/alerts`);
    await page.getByTestId('state-Resolved').click();
    const row = page.getByRole('row').filter({ hasText: TITLE }).filter({ hasText: 'Resolved' });
    await expect(row).toBeVisible({ timeout: 420_000 });
    await expect(page.getByTestId('count-Resolved')).toHaveText('1');
    await page.screenshot({ path: join(artifactsDir, 'watchdogs-03-resolved.png'), fullPage: true });

    const queue = await ok(await api.get(`${base}/api/watchdogs/incidents?state=Resolved`));
    expect(queue.incidents).toHaveLength(1);
    const inc = queue.incidents[0];
    expect(inc).toEqual(expect.objectContaining({ title: TITLE, state: 'Resolved', severity: 'critical', acknowledged_by: USERNAME }));
    expect(inc.outcomes).toEqual([
      expect.objectContaining({ type: 'toast', status: 'succeeded' }),
      expect.objectContaining({ type: 'service_control', status: 'succeeded' }),
    ]);
    expect(starts()).toBe(2); // and nothing started it again
  });

  await test.step('the operator mutes the watchdog on the device with a reason, then unmutes it', async () => {
    await page.goto(`${base}/devices/${AGENT_HOST}`);
    await page.getByRole('tab', { name: 'Watchdogs', exact: true }).click();
    const row = page.getByRole('tabpanel').getByRole('row').filter({ hasText: WATCHDOG });
    await expect(row).toContainText('none'); // no active incident
    await row.getByRole('button', { name: 'Mute', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await expect(dialog.getByRole('button', { name: 'Mute', exact: true })).toBeDisabled(); // a reason is required
    await dialog.getByRole('textbox', { name: 'Reason' }).fill('service retired next week');
    await dialog.getByRole('button', { name: 'Mute', exact: true }).click();
    await expect(dialog).toBeHidden();
    await expect(row).toContainText('Muted: service retired next week');
    await page.screenshot({ path: join(artifactsDir, 'watchdogs-04-muted.png'), fullPage: true });
    await row.getByRole('button', { name: 'Unmute', exact: true }).click();
    await expect(row).not.toContainText('Muted');
  });
});
