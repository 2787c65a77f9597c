import { expect, test } from '@playwright/test';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, signIn } from './fleet';

// The Terminal tab on a real agent: a real PTY on this machine behind the
// Engine's shell bridge, driven through xterm.js in Chromium.

const AGENT_HOST = 'e2e-shell-agent';

let engine: Engine;
let agent: Agent | undefined;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-terminal', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
});

test('the Terminal tab runs a real shell: echo, resize, exit', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const auth = await signIn(page.request, base, 'admin', 'terminal e2e admin password', await engine.setupCode());
  // /bin/sh rather than root's login bash: this machine's root profile
  // waits a minute on a stale pyenv lock (docs/agent.md, CAIRN_AGENT_SHELL).
  agent = await enrollConnected(page.request, base, auth, {
    name: 'agent-terminal',
    hostname: AGENT_HOST,
    slug: 'e2e-shell',
    env: { CAIRN_AGENT_SHELL: '/bin/sh' },
  });

  await page.goto(`${base}/devices/${AGENT_HOST}`);
  await page.getByRole('tab', { name: 'Terminal', exact: true }).click();
  await expect(page.getByTestId('shell-status')).toHaveAttribute('data-status', 'connected', { timeout: 90_000 });
  const term = page.getByTestId('terminal');
  const screen = term.locator('.xterm-rows');
  await term.click();

  await test.step('a command runs and its output comes back', async () => {
    await page.keyboard.type('echo $((6*7))');
    await page.keyboard.press('Enter');
    await expect(screen).toContainText('42');
  });

  await test.step('a resize reaches the PTY', async () => {
    // The PTY's size as the shell sees it, after the last "size=" marker.
    const size = async () => [...(await screen.innerText()).matchAll(/size=(\d+)x(\d+)/g)].pop()?.slice(1).join('x');
    const ask = async () => {
      await page.keyboard.type('clear; echo "size=$(stty size | tr " " x)"');
      await page.keyboard.press('Enter');
    };
    await ask();
    await expect.poll(size).toMatch(/^\d+x\d+$/);
    const before = await size();
    await page.setViewportSize({ width: 900, height: 600 });
    await expect
      .poll(async () => {
        await ask();
        return size();
      }, { timeout: 30_000 })
      .not.toBe(before);
    await page.screenshot({ path: join(artifactsDir, 'terminal-01-shell.png'), fullPage: true });
  });

  await test.step('exit ends the session with its code', async () => {
    await page.keyboard.type('exit 3');
    await page.keyboard.press('Enter');
    await expect(page.getByTestId('shell-exit')).toContainText('Shell exited with code 3');
    await expect(page.getByTestId('shell-status')).toHaveAttribute('data-status', 'exited');
  });

  await test.step('the session is in the device\'s activity', async () => {
    await page.getByRole('tab', { name: 'Activity', exact: true }).click();
    await expect(page.getByRole('tabpanel')).toContainText(/shell/i);
  });
});
