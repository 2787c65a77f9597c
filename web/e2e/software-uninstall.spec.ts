import { expect, test } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { enrollConnected, ok, signIn } from './fleet';

// Issue 27 item 1 from the Software tab: a real Linux agent uninstalls a
// package the test installed. The packages are built with dpkg-deb and
// installed into a private dpkg root, so nothing of this machine's own dpkg
// database, apt lists or locks is touched: the agent runs with
// DPKG_ADMINDIR and APT_CONFIG pointing inside the root, and the real
// dpkg-query (which the inventory and the uninstall script read) and the
// real apt-get (which the script removes the package with) honour them.
// The root goes with the test.

const AGENT_HOST = 'e2e-uninstall-agent';
const PACKAGE = 'cairn-e2e-uninstall';
const KEEP = 'cairn-e2e-keep';
const VERSION = '1.0';

let engine: Engine;
let agent: Agent | undefined;
let dir = '';

const run = (cmd: string, args: string[], env: NodeJS.ProcessEnv = {}) =>
  execFileSync(cmd, args, { env: { ...process.env, LC_ALL: 'C', DEBIAN_FRONTEND: 'noninteractive', ...env }, encoding: 'utf8' });

interface DpkgRoot {
  root: string;
  /** The environment that points dpkg-query and apt-get inside the root. */
  env: Record<string, string>;
}

/** A private dpkg/apt root with PACKAGE and KEEP installed (no maintainer scripts). */
async function dpkgRoot(base: string): Promise<DpkgRoot> {
  const root = join(base, 'root');
  for (const d of ['var/lib/dpkg/info', 'var/lib/dpkg/updates', 'var/lib/apt/lists/partial', 'var/cache/apt/archives/partial',
    'etc/apt/sources.list.d', 'etc/apt/preferences.d', 'etc/apt/apt.conf.d', 'etc/apt/trusted.gpg.d', 'var/log/apt']) {
    await mkdir(join(root, d), { recursive: true });
  }
  for (const f of ['var/lib/dpkg/status', 'var/lib/dpkg/available', 'etc/apt/sources.list']) await writeFile(join(root, f), '');
  for (const name of [PACKAGE, KEEP]) {
    const src = join(base, `src-${name}`);
    await mkdir(join(src, 'DEBIAN'), { recursive: true });
    await mkdir(join(src, 'usr/share', name), { recursive: true });
    await writeFile(join(src, 'usr/share', name, 'README'), `${name} is installed by the Cairn e2e test\n`);
    await writeFile(
      join(src, 'DEBIAN/control'),
      `Package: ${name}\nVersion: ${VERSION}\nArchitecture: all\nMaintainer: Cairn Tests <tests@example.invalid>\n` +
        `Description: a package the Cairn e2e test uninstalls\n`,
    );
    const deb = join(base, `${name}_${VERSION}_all.deb`);
    run('dpkg-deb', ['--root-owner-group', '-b', src, deb]);
    run('dpkg', [`--root=${root}`, '--force-not-root', '--force-script-chrootless', '-i', deb]);
  }
  const aptConf = join(base, 'apt.conf');
  await writeFile(
    aptConf,
    [
      `Dir "${root}/";`,
      `Dir::State::status "${root}/var/lib/dpkg/status";`,
      `Dir::Etc::trusted "${root}/etc/apt/trusted.gpg";`,
      `Dir::Etc::trustedparts "${root}/etc/apt/trusted.gpg.d";`,
      `Dir::Log "${root}/var/log/apt";`,
      'APT::Sandbox::User "root";',
      `DPkg::Options { "--root=${root}"; "--force-not-root"; "--force-script-chrootless"; };`,
      '',
    ].join('\n'),
  );
  return { root, env: { DPKG_ADMINDIR: join(root, 'var/lib/dpkg'), APT_CONFIG: aptConf } };
}

/** dpkg's status of a package in the root ('' when dpkg does not know it). */
function status(r: DpkgRoot, name: string): string {
  try {
    return run('dpkg-query', ['-W', '-f=${Status}', '--', name], r.env).trim();
  } catch {
    return '';
  }
}

let pkgRoot: DpkgRoot;

test.beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-e2e-dpkg-'));
  pkgRoot = await dpkgRoot(dir);
  expect(status(pkgRoot, PACKAGE)).toBe('install ok installed');
  engine = await startEngine({ name: 'engine-software-uninstall', publicHost: 'localhost' });
});

test.afterAll(async () => {
  await agent?.stop();
  await engine?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('the Software tab uninstalls a package from a real Linux agent', async ({ page }) => {
  test.setTimeout(600_000);
  const base = engine.baseURL;
  const api = page.request;

  await test.step('bootstrap, sign in and enroll a real agent over the private dpkg root', async () => {
    const auth = await signIn(api, base, 'admin', 'uninstall e2e admin password', await engine.setupCode());
    agent = await enrollConnected(api, base, auth, { name: 'agent-software-uninstall', hostname: AGENT_HOST, slug: 'e2e-uninstall', env: pkgRoot.env });
    await expect
      .poll(
        async () => {
          const d = await ok(await api.get(`${base}/api/device/details/${AGENT_HOST}`));
          return (d.software ?? []).map((s: { name: string; version: string }) => `${s.name} ${s.version}`).sort();
        },
        { timeout: 180_000, intervals: [2_000] },
      )
      .toEqual([`${KEEP} ${VERSION}`, `${PACKAGE} ${VERSION}`]);
  });

  await test.step('Uninstall asks first, then the agent removes the package', async () => {
    await page.goto(`${base}/devices/${AGENT_HOST}/software`);
    const panel = page.getByRole('tabpanel');
    await expect(panel).toContainText(PACKAGE);
    await panel.getByRole('button', { name: `Uninstall ${PACKAGE} ${VERSION}`, exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `Uninstall ${PACKAGE}?` });
    await expect(dialog).toContainText(`${PACKAGE} ${VERSION} will be removed from ${AGENT_HOST}`);
    await dialog.getByRole('button', { name: 'Uninstall', exact: true }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByText(`${PACKAGE} uninstalled`)).toBeVisible({ timeout: 180_000 });
    await page.screenshot({ path: join(artifactsDir, 'software-uninstall-01-done.png'), fullPage: true });
  });

  await test.step('apt-get really removed it, and the tab lists only the other package', async () => {
    expect(status(pkgRoot, PACKAGE)).not.toBe('install ok installed');
    expect(existsSync(join(pkgRoot.root, 'usr/share', PACKAGE, 'README'))).toBe(false);
    expect(status(pkgRoot, KEEP)).toBe('install ok installed');
    const panel = page.getByRole('tabpanel');
    // The Engine reads the device's software again after the run.
    await expect(async () => {
      await page.reload();
      await expect(panel).toContainText(KEEP, { timeout: 10_000 });
      await expect(panel).not.toContainText(PACKAGE, { timeout: 1_000 });
    }).toPass({ timeout: 180_000, intervals: [2_000] });
    await page.screenshot({ path: join(artifactsDir, 'software-uninstall-02-gone.png'), fullPage: true });
  });

  await test.step('the run is in the device activity', async () => {
    await page.getByRole('tab', { name: 'Activity', exact: true }).click();
    await expect(page.getByRole('tabpanel')).toContainText(`Uninstall ${PACKAGE}`, { timeout: 60_000 });
  });
});
