import { expect, test } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { artifactsDir, startEngine, type Engine } from './engine';
import { ok, signInWithSecret } from './fleet';
import { freshTotp } from './totp';

// Issue 26, the Server page's Cluster section with real processes: the
// administrator makes a worker join code in the console; `cairn cluster
// join` on the "new host" asks with it and prints its key's fingerprint;
// the console lists the admission with that fingerprint; the administrator
// re-authenticates and approves it in the console; the joiner writes its
// member file (its own Internal key); a real `cairn worker` started from
// it runs the site's workers and the console shows it as an up member
// admitted through the admission, with its site.

const USERNAME = 'admin';
const PASSWORD = 'cluster e2e admin password';
const SLUG = 'e2e-cluster';

const webDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const bin = resolve(webDir, process.env.CAIRN_E2E_ENGINE_BIN ?? '../bin/cairn');

let engine: Engine | undefined;
let dir = '';
const children: ChildProcess[] = [];

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

/** Runs `cairn <args>` with env and no inherited DATABASE_URL, TEMPORAL_ADDRESS or CAIRN_*. */
function cairn(name: string, args: string[], env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const clean: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k !== 'DATABASE_URL' && k !== 'TEMPORAL_ADDRESS' && !k.startsWith('CAIRN_')) clean[k] = v;
  }
  const child = spawn(bin, args, { env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  const log = createWriteStream(join(artifactsDir, `${name}.log`));
  for (const s of [child.stdout, child.stderr]) {
    s?.on('data', (d: Buffer) => {
      out += d.toString();
      log.write(d);
    });
  }
  return { child, output: () => out };
}

test.beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-e2e-cluster-'));
  engine = await startEngine({ name: 'engine-cluster' });
});

test.afterAll(async () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  }
  await engine?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('a worker joins through an admission approved in the console and is shown as a member', async ({ page }) => {
  test.setTimeout(600_000);
  const base = engine!.baseURL;
  const api = page.request;
  const s = await signInWithSecret(api, base, USERNAME, PASSWORD, await engine!.setupCode());
  await ok(await api.post(`${base}/api/sites`, { headers: s.auth, data: { name: SLUG, site_worker_slug: SLUG } }), 201);

  await page.goto(`${base}/server`);
  const section = page.getByTestId('cluster');
  await expect(section.getByRole('row', { name: /\(this replica\).*Engine replica/ })).toBeVisible({ timeout: 60_000 });

  // A join code needs a recent re-authentication.
  const reauth = async () => {
    const code = await freshTotp(s.secret, s.usedStep);
    s.usedStep = code.step;
    await ok(await api.post(`${base}/api/auth/reauth`, { headers: s.auth, data: { password: PASSWORD, totp_code: code.code } }));
  };
  await reauth();
  await section.getByRole('button', { name: 'Join code for a worker' }).click();
  const joinCode = (await section.getByTestId('join-code').locator('code').first().textContent()) ?? '';
  expect(joinCode).toMatch(/^cjc_/);

  const workerData = join(dir, 'worker');
  const join_ = cairn('cluster-join', ['cluster', 'join', '--engine-url', base, '--code', joinCode, '--role', 'worker', '--site', SLUG,
    '--name', 'e2e-joiner', '--data-dir', workerData], {});
  let fingerprint = '';
  await expect
    .poll(() => {
      fingerprint = /key fingerprint (\S+)/.exec(join_.output())?.[1] ?? '';
      return fingerprint;
    }, { timeout: 60_000 })
    .not.toBe('');

  // The console lists the admission with the fingerprint the host printed.
  const row = section.getByRole('row', { name: new RegExp(`Site worker e2e-joiner.*${fingerprint}`) });
  await expect(row).toBeVisible({ timeout: 60_000 });
  await page.screenshot({ path: join(artifactsDir, 'cluster-01-admission.png'), fullPage: true });

  await reauth();
  await row.getByRole('button', { name: 'Approve' }).click();
  const exitCode = await new Promise<number | null>((res) => {
    if (join_.child.exitCode !== null) res(join_.child.exitCode);
    else join_.child.once('exit', (code) => res(code));
  });
  expect(exitCode, join_.output()).toBe(0);
  expect(join_.output()).toContain('approved: member file');
  const memberFile = join(workerData, 'cluster-member.json');
  expect(statSync(memberFile).mode & 0o777).toBe(0o600);
  const member = JSON.parse(readFileSync(memberFile, 'utf8'));
  const keys = await ok(await api.get(`${base}/api/server/internal-keys`, { headers: s.auth }));
  const key = keys.keys.find((k: { key_id: string }) => k.key_id === member.internal_key_id);
  expect(key?.admission_id, 'the member holds a key of its own').toBe(member.admission_id);

  // The worker: the Engine's private PostgreSQL (as its banner names it),
  // its embedded Temporal, the cipher's passphrase, the member file.
  const banner = readFileSync(join(artifactsDir, 'engine-cluster.log'), 'utf8');
  const [, pgBase, pgPort] = /private cluster in (\S+) on 127\.0\.0\.1:(\d+)/.exec(banner) ?? [];
  expect(pgBase).toBeTruthy();
  const pgPassword = readFileSync(join(pgBase, 'password'), 'utf8').trim();
  const passFile = join(dir, 'passphrase');
  await writeFile(passFile, `${PASSWORD} passphrase`, { mode: 0o600 });
  const worker = cairn('cluster-worker', ['worker', '--site', SLUG], {
    DATABASE_URL: `postgres://cairn:${encodeURIComponent(pgPassword)}@127.0.0.1:${pgPort}/cairn?sslmode=disable`,
    TEMPORAL_ADDRESS: `127.0.0.1:${engine!.ports.temporal}`,
    CAIRN_DATA_DIR: workerData,
    CAIRN_AEGIS_PASSPHRASE_FILE: passFile,
    CAIRN_WORKER_ADDR: `127.0.0.1:${await freePort()}`,
    CAIRN_ENGINE_URL: base,
  });
  await expect.poll(() => worker.output(), { timeout: 120_000 }).toContain('site worker running');
  expect(existsSync(memberFile)).toBe(true);

  // The console shows it: a site worker, up, with its site, admitted (not
  // "configured by hand").
  const memberRow = section.getByRole('row', { name: new RegExp(`Site worker.*${SLUG}.*up`) });
  await expect(memberRow).toBeVisible({ timeout: 90_000 });
  await expect(memberRow).not.toContainText('configured by hand');
  await page.screenshot({ path: join(artifactsDir, 'cluster-02-member.png'), fullPage: true });
});
