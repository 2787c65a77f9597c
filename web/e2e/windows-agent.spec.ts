import { expect, test } from '@playwright/test';
import { startEngine, type Engine } from './engine';
import { ok, signIn } from './fleet';
import { enrollConnectedUnderWine, type WineAgent } from './wine';

// The Windows agent against a real Engine: the Windows build of
// cairn-agent runs under Wine, enrolls, is approved, connects, reports a
// Windows inventory, and starts and stops a service of Wine's service
// control manager through the Engine's command path.
//
// The Wine prefix and binaries: see wine.ts.

const USERNAME = 'admin';
const PASSWORD = 'windows agent e2e admin password';
const HOST = 'e2e-windows-agent';
// Wine's own Windows Update service: a stub that starts and stops cleanly.
const SERVICE = 'wuauserv';

let engine: Engine;
let agent: WineAgent | undefined;

test.beforeAll(async () => {
  engine = await startEngine({ name: 'engine-windows-agent', publicHost: 'localhost' });
});

test.afterAll(async () => {
  agent?.stop();
  await engine?.stop();
});

test('the Windows agent under Wine enrolls, reports Windows inventory and controls a service', async ({ page }) => {
  test.setTimeout(300_000);
  const base = engine.baseURL;
  const api = page.request;
  const auth = await signIn(api, base, USERNAME, PASSWORD, await engine.setupCode());

  await test.step('enroll, approve, connect', async () => {
    agent = await enrollConnectedUnderWine(api, base, auth, { name: 'windows-agent', hostname: HOST, slug: 'e2e-win' });
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
