import { expect, test } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { artifactsDir, startEngine, type Engine } from './engine';
import { ok, signIn } from './fleet';

// The Windows agent against a real Engine: the Windows build of
// cairn-agent runs under Wine, enrolls, is approved, connects, reports a
// Windows inventory, and starts and stops a service of Wine's service
// control manager through the Engine's command path.
//
// Environment:
//   CAIRN_E2E_WINEPREFIX           a prepared Wine prefix (make test-wine's:
//                                  booted, ProcessPrng shim in system32)
//   CAIRN_E2E_WINDOWS_AGENT_BIN    the Windows agent (default
//                                  ../bin/agents/windows-amd64/cairn-agent.exe)
//   CAIRN_E2E_WINE                 the Wine loader (default /usr/lib/wine/wine64)

const webDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const USERNAME = 'admin';
const PASSWORD = 'windows agent e2e admin password';
const HOST = 'e2e-windows-agent';
// Wine's own Windows Update service: a stub that starts and stops cleanly.
const SERVICE = 'wuauserv';

let engine: Engine;
const children: ChildProcess[] = [];
// The agent's config directory, C:\<configDir> inside the prefix.
const configDir = `cairn-e2e-${Date.now()}`;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-windows-agent', publicHost: 'localhost' });
});

test.afterAll(async () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
  await engine?.stop();
  const prefix = process.env.CAIRN_E2E_WINEPREFIX;
  if (prefix) rmSync(join(prefix, 'drive_c', configDir), { recursive: true, force: true });
});

function wineAgent(args: string[]): ChildProcess {
  const prefix = process.env.CAIRN_E2E_WINEPREFIX;
  if (!prefix || !existsSync(join(prefix, 'drive_c', 'windows', 'system32', 'bcryptprimitives.dll'))) {
    throw new Error(`CAIRN_E2E_WINEPREFIX (${prefix ?? 'unset'}) must name a Wine prefix with the ProcessPrng shim (make test-wine prepares one)`);
  }
  const exe = resolve(webDir, process.env.CAIRN_E2E_WINDOWS_AGENT_BIN ?? '../bin/agents/windows-amd64/cairn-agent.exe');
  if (!existsSync(exe)) throw new Error(`Windows agent not found at ${exe}; build it with make agents`);
  mkdirSync(artifactsDir, { recursive: true });
  const log = createWriteStream(join(artifactsDir, `windows-agent-${args[0]}.log`));
  const child = spawn(process.env.CAIRN_E2E_WINE ?? '/usr/lib/wine/wine64', [exe, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, WINEPREFIX: prefix, WINEDEBUG: '-all' },
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  children.push(child);
  return child;
}

test('the Windows agent under Wine enrolls, reports Windows inventory and controls a service', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const api = page.request;
  const config = `C:\\${configDir}\\agent.json`;
  const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());

  await test.step('enroll, approve, connect', async () => {
    const site = await ok(await api.post(`${base}/api/sites`, { headers: auth, data: { name: 'e2e-win', site_worker_slug: 'e2e-win' } }), 201);
    const code = await ok(await api.post(`${base}/api/admin/enrollment-codes`, { headers: auth, data: { site_id: site.site_id } }), 201);
    const enroll = wineAgent(['enroll', '--server', base, '--code', code.code, '--config', config, '--hostname', HOST]);
    const enrolled = new Promise<number | null>((r) => enroll.once('exit', r));
    let approvalID = '';
    await expect
      .poll(async () => {
        const list = await (await api.get(`${base}/api/admin/device-approvals?status=pending`)).json();
        approvalID = list.approvals.find((a: any) => a.hostname === HOST)?.id ?? '';
        return approvalID;
      }, { timeout: 120_000 })
      .not.toBe('');
    await ok(await api.post(`${base}/api/admin/device-approvals/${approvalID}/approve`, { headers: auth }));
    expect(await enrolled).toBe(0);
    wineAgent(['run', '--config', config, '--hostname', HOST]);
    await expect
      .poll(async () => {
        const list = await (await api.get(`${base}/api/devices`)).json();
        const d = list.devices.find((x: any) => x.hostname === HOST);
        return d?.connectivity_status === 'Connected' && d?.agent_socket === true;
      }, { timeout: 120_000 })
      .toBe(true);
  });

  await test.step('the inventory is Windows', async () => {
    let details: any;
    await expect
      .poll(async () => {
        details = await (await api.get(`${base}/api/device/details/${HOST}`, { headers: auth })).json();
        return Boolean(details.os && details.hardware && details.services && details.processes);
      }, { timeout: 120_000 })
      .toBe(true);
    expect(details.os.family).toBe('windows');
    expect(details.os.name).toContain('Windows');
    expect(details.hardware.memory_total_bytes).toBeGreaterThan(0);
    expect(details.hardware.disks.map((d: any) => d.name)).toContain('C:');
    expect(details.services.map((s: any) => s.name)).toContain(SERVICE);
    expect(details.processes.map((p: any) => p.name)).toContain('cairn-agent.exe');
  });

  await test.step('start and stop a service through the Engine', async () => {
    for (const [action, state] of [['start', 'running'], ['stop', 'stopped']]) {
      const res = await ok(await api.post(`${base}/api/device/services/${HOST}/action`, { headers: auth, data: { name: SERVICE, action } }));
      expect(res).toEqual({ name: SERVICE, state });
    }
  });
});
