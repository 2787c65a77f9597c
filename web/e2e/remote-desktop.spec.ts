import { expect, test, type Page } from '@playwright/test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAgent, type Agent } from './agent';
import { artifactsDir, startEngine, type Engine } from './engine';
import { approveWhenPending, ok, signIn, siteEnrollmentCode, waitConnected } from './fleet';
import { freeUDPPort, makeNetns, type Netns } from './netns';

// Issue 23 (a): the Remote Desktop tab on a real cairn-agent in its own
// network namespace (netns.ts), which reaches the Engine only over a veth
// pair, so the desktop's only path is the WireGuard tunnel. The agent's
// display is an Xvfb inside that namespace with a Tk test window
// (desktop-window.tcl); the agent serves it with x11vnc on its tunnel
// address, and noVNC in Chromium shows it through the Engine's gateway.
// The test reads the window's pixels from noVNC's canvas, types into the
// window and sees its colour change (and reads back what arrived), sends
// Ctrl-Alt-Del with the console's button, and disconnects.

const AGENT_HOST = 'e2e-desktop-agent';
const here = dirname(fileURLToPath(import.meta.url));

type RGB = [number, number, number];
const ORANGE: RGB = [0xff, 0x80, 0x00];
const BLUE: RGB = [0x20, 0x40, 0xa0];
const GREEN: RGB = [0x00, 0xc0, 0x00];
// The window's regions, in the remote screen's pixels (desktop-window.tcl).
const BACKGROUND = { x: 320, y: 200 };
const TYPED = { x: 120, y: 80 };
const CAD = { x: 520, y: 80 };
const ENTRY = { x: 60, y: 310 };

let ns: Netns | undefined;
let engine: Engine | undefined;
let agent: Agent | undefined;
let work = '';

test.beforeAll(async () => {
  ns = makeNetns();
  work = mkdtempSync(join(tmpdir(), 'cairn-e2e-desktop-'));
  engine = await startEngine({
    name: 'engine-remote-desktop',
    publicHost: 'localhost',
    httpsHost: '0.0.0.0',
    env: {
      CAIRN_WIREGUARD_PORT: String(await freeUDPPort()),
      CAIRN_WIREGUARD_FALLBACK_IP: ns.hostIP,
      CAIRN_WIREGUARD_NETWORK: '10.235.0.0/24',
    },
  });
});

test.afterAll(async () => {
  await agent?.stop();
  ns?.remove();
  await engine?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Xvfb inside the namespace (its X socket is the namespace's), on a display it picks; returns ":N". */
async function startDisplay(n: Netns): Promise<string> {
  const xvfb = n.spawn('Xvfb', ['-displayfd', '3', '-noreset', '-nolisten', 'tcp', '-screen', '0', '640x400x24'], { fds: 1 });
  const display = await new Promise<string>((res, rej) => {
    let got = '';
    xvfb.stdio[3]!.on('data', (b) => {
      got += String(b);
      if (got.includes('\n')) res(`:${got.trim()}`);
    });
    xvfb.once('exit', (code) => rej(new Error(`Xvfb exited ${code} before it reported its display`)));
  });
  return display;
}

/** The pixel at (x, y) of the remote screen, read from noVNC's canvas. */
async function pixel(page: Page, at: { x: number; y: number }): Promise<RGB | null> {
  return page.getByTestId('desktop-screen').locator('canvas').first().evaluate((c: HTMLCanvasElement, p) => {
    if (c.width < 640 || c.height < 400) return null;
    const d = c.getContext('2d')?.getImageData(p.x, p.y, 1, 1).data;
    return d ? ([d[0], d[1], d[2]] as [number, number, number]) : null;
  }, at);
}

/** Whether a is b within the JPEG's tolerance (Prefer Speed is quality 2). */
function near(a: RGB | null, b: RGB): boolean {
  return a !== null && a.every((v, i) => Math.abs(v - b[i]) <= 48);
}

/** Clicks the remote screen at (x, y): the canvas is scaled to fit. */
async function clickRemote(page: Page, at: { x: number; y: number }) {
  const canvas = page.getByTestId('desktop-screen').locator('canvas').first();
  const box = (await canvas.boundingBox())!;
  const size = await canvas.evaluate((c: HTMLCanvasElement) => ({ w: c.width, h: c.height }));
  await page.mouse.click(box.x + (at.x * box.width) / size.w, box.y + (at.y * box.height) / size.h);
}

test('the Remote Desktop tab shows, types into, hands over and closes a real desktop through the tunnel', async ({ page, browser }) => {
  test.setTimeout(420_000);
  const n = ns!;
  const base = engine!.baseURL;
  const winLog = join(work, 'window.log');
  writeFileSync(winLog, '');
  let display = '';

  await test.step('a display with a test window inside the namespace', async () => {
    display = await startDisplay(n);
    n.spawn('wish', [join(here, 'desktop-window.tcl'), winLog], { env: { DISPLAY: display } });
    await expect.poll(() => readFileSync(winLog, 'utf8'), { timeout: 30_000 }).toContain('ready');
  });

  const auth = await signIn(page.request, base, 'admin', 'desktop e2e admin password', await engine!.setupCode());
  let guid = '';

  await test.step('a real agent in the namespace enrolls over the veth pair', async () => {
    const code = await siteEnrollmentCode(page.request, base, auth, 'e2e-desktop');
    const ca = join(work, 'ca.pem');
    const res = await page.request.get(`${base}/api/tls/ca.pem`);
    expect(res.status()).toBe(200);
    writeFileSync(ca, await res.body());
    // localhost inside the namespace is the namespace's own: every call
    // falls back to the host's veth address (behaviour 6).
    agent = await startAgent({
      name: 'agent-remote-desktop',
      server: `https://localhost:${engine!.ports.https}`,
      code,
      hostname: AGENT_HOST,
      wrap: n.exec,
      enrollArgs: ['--ca-file', ca, '--server-ip-fallback', n.hostIP],
      env: { CAIRN_AGENT_WG_INTERFACE: n.wgIface, DISPLAY: display },
    });
    await approveWhenPending(page.request, base, auth, AGENT_HOST);
    await agent.enrolled;
    agent.run();
    await waitConnected(page.request, base, AGENT_HOST);
    const list = await ok(await page.request.get(`${base}/api/devices`));
    guid = list.devices.find((d: any) => d.hostname === AGENT_HOST).guid;
  });

  await test.step('the WireGuard tunnel comes up between the namespaces', async () => {
    await ok(await page.request.post(`${base}/api/server/wireguard/recover`, { headers: auth, data: { guid } }), 202);
    await expect
      .poll(
        async () => {
          const st = await (await page.request.get(`${base}/api/tunnel/connect/status?guid=${guid}`)).json();
          return st.establishment?.phase;
        },
        { timeout: 180_000, intervals: [1000] },
      )
      .toBe('ready');
  });

  await test.step('the Remote Desktop tab shows the window\'s pixels', async () => {
    await page.goto(`${base}/devices/${AGENT_HOST}`);
    await page.getByRole('tab', { name: 'Remote Desktop', exact: true }).click();
    await expect(page.getByTestId('desktop-status')).toHaveAttribute('data-status', 'connected', { timeout: 120_000 });
    await expect.poll(async () => near(await pixel(page, BACKGROUND), ORANGE), { timeout: 30_000 }).toBe(true);
    expect(near(await pixel(page, TYPED), BLUE)).toBe(true);
    expect(near(await pixel(page, CAD), BLUE)).toBe(true);
    await page.screenshot({ path: join(artifactsDir, 'remote-desktop-01-window.png'), fullPage: true });
    // The browser never sees the VNC password: the sessions it can read
    // carry none.
    const sessions = await ok(await page.request.get(`${base}/api/vnc/sessions`));
    expect(sessions.sessions.map((s: any) => s.guid)).toContain(guid);
    expect(JSON.stringify(sessions).toLowerCase()).not.toContain('password');
  });

  await test.step('typing reaches the window and its pixels change', async () => {
    await clickRemote(page, ENTRY);
    await page.keyboard.type('cairn', { delay: 50 });
    await expect.poll(() => readFileSync(winLog, 'utf8'), { timeout: 30_000 }).toContain('text cairn');
    await expect.poll(async () => near(await pixel(page, TYPED), GREEN), { timeout: 30_000 }).toBe(true);
    await page.screenshot({ path: join(artifactsDir, 'remote-desktop-02-typed.png'), fullPage: true });
  });

  await test.step('Ctrl-Alt-Del sends Delete with Control and Alt held', async () => {
    expect(near(await pixel(page, CAD), BLUE)).toBe(true);
    await page.getByRole('button', { name: 'Ctrl-Alt-Del' }).click();
    await expect.poll(() => readFileSync(winLog, 'utf8'), { timeout: 30_000 }).toMatch(/delete state=\d+/);
    await expect.poll(async () => near(await pixel(page, CAD), GREEN), { timeout: 30_000 }).toBe(true);
  });

  // The operator's second browser (the same sign-in) takes the session
  // over: the first browser's socket closes and it says who took it.
  const second = await browser.newContext({ storageState: await page.context().storageState(), viewport: { width: 1366, height: 860 } });
  const taker = await second.newPage();
  await test.step('a second browser takes the session over', async () => {
    await taker.goto(`${base}/devices/${AGENT_HOST}`);
    await taker.getByRole('tab', { name: 'Remote Desktop', exact: true }).click();
    const others = taker.getByTestId('desktop-others');
    await expect(others).toContainText("admin's session is open", { timeout: 120_000 });
    await others.getByRole('button', { name: 'Take over' }).click();
    await expect(page.getByTestId('desktop-status')).toHaveAttribute('data-status', 'closed', { timeout: 60_000 });
    await expect(page.getByText(/took this session on e2e-desktop-agent over/)).toBeVisible();
    await expect(taker.getByTestId('desktop-status')).toHaveAttribute('data-status', 'connected', { timeout: 60_000 });
    // The same desktop, as the first browser left it.
    await expect.poll(async () => near(await pixel(taker, TYPED), GREEN), { timeout: 30_000 }).toBe(true);
    const sessions = await ok(await page.request.get(`${base}/api/vnc/sessions`));
    const mine = sessions.sessions.filter((s: any) => s.guid === guid);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ status: 'live', operator: 'admin', handed_off_from: 'admin', handoffs: 1 });
    await taker.screenshot({ path: join(artifactsDir, 'remote-desktop-03-taken-over.png'), fullPage: true });
  });

  await test.step('Disconnect ends the session', async () => {
    await taker.getByRole('button', { name: 'Disconnect' }).click();
    await expect(taker.getByTestId('desktop-status')).toHaveAttribute('data-status', 'closed');
    await expect
      .poll(async () => (await ok(await page.request.get(`${base}/api/vnc/sessions`))).sessions.filter((s: any) => s.guid === guid).length, {
        timeout: 60_000,
      })
      .toBe(0);
    await taker.getByRole('tab', { name: 'Activity', exact: true }).click();
    await expect(taker.getByRole('tabpanel')).toContainText(/Remote desktop session/i);
    await second.close();
  });
});
