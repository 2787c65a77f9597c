import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import DevicePage from './DevicePage';
import { fullDetails } from './fixtures';

// jsdom has no canvas or WebSocket RFB; a stand-in for noVNC records what
// the tab asks of it and lets the test play the connection.
const { FakeRFB, rfbs } = vi.hoisted(() => {
  const rfbs: InstanceType<typeof FakeRFB>[] = [];
  class FakeRFB extends EventTarget {
    viewOnly = false;
    scaleViewport = false;
    clipViewport = false;
    resizeSession = false;
    focusOnClick = false;
    showDotCursor = false;
    qualityLevel = 6;
    compressionLevel = 2;
    background = '';
    disconnected = false;
    ctrlAltDel = 0;
    pasted: string[] = [];
    constructor(
      readonly target: HTMLElement,
      readonly url: string,
      readonly options: Record<string, unknown> = {},
    ) {
      super();
      rfbs.push(this);
    }
    disconnect() {
      this.disconnected = true;
    }
    sendCtrlAltDel() {
      this.ctrlAltDel++;
    }
    clipboardPasteFrom(text: string) {
      this.pasted.push(text);
    }
    focus() {}
    // What the gateway does:
    serverConnect() {
      act(() => {
        this.dispatchEvent(new Event('connect'));
      });
    }
    serverDisconnect(clean: boolean) {
      act(() => {
        this.dispatchEvent(new CustomEvent('disconnect', { detail: { clean } }));
      });
    }
  }
  return { FakeRFB, rfbs };
});
vi.mock('@novnc/novnc', () => ({ default: FakeRFB }));

function details(caps: string[] = ['vnc', 'shell']) {
  const d = fullDetails();
  d.device.capabilities = caps;
  return d;
}

const SESSION = (id: string, monitors = 1) => ({
  session_id: id,
  token: 'one-time',
  ws_url: `/api/vnc/ws/${id}?token=one-time`,
  expires_at: '2026-11-29T07:00:00Z',
  guid: 'guid-web-1',
  hostname: 'web-1',
  protocol: 'vnc',
  quality: 'speed',
  display_topology: Array.from({ length: monitors }, (_, i) => ({ name: `m${i}`, x: i * 1280, y: 0, width: 1280, height: 800, primary: i === 0 })),
  display_virtual_bounds: `${monitors * 1280}x800+0+0`,
});

function renderPage(route = '/devices/web-1/desktop') {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
      <WithToasts>
        <Routes>
          <Route path="/devices/:hostname/:tab?" element={<DevicePage />} />
        </Routes>
      </WithToasts>
    </SessionContext.Provider>,
    { route },
  );
}

const status = () => screen.getByTestId('desktop-status');

beforeEach(() => {
  rfbs.length = 0;
});
afterEach(() => vi.unstubAllGlobals());

describe('Remote Desktop tab', () => {
  it('establishes a session and opens noVNC on the one-time socket, with Prefer Speed, fitted', async () => {
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: details() },
      'POST /api/vnc/establish': { body: SESSION('s-1') },
      'POST /api/vnc/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(rfbs).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/vnc/establish')[0].body).toEqual({ guid: 'guid-web-1', quality: 'speed' });
    const rfb = rfbs[0];
    expect(rfb.url).toBe(`ws://${window.location.host}/api/vnc/ws/s-1?token=one-time`);
    expect(rfb.options).toEqual({ shared: true, wsProtocols: ['binary'] });
    expect(rfb.target).toBe(screen.getByTestId('desktop-screen'));
    expect([rfb.qualityLevel, rfb.compressionLevel]).toEqual([2, 9]);
    expect(rfb.scaleViewport).toBe(true);
    expect(status()).toHaveTextContent('Connecting…');
    // A single display: Scaled is not offered (rule 9).
    expect(screen.getByRole('button', { name: 'Scaled' })).toBeDisabled();

    rfb.serverConnect();
    expect(status()).toHaveTextContent('Connected');
    await userEvent.click(screen.getByRole('button', { name: /Ctrl-Alt-Del/ }));
    expect(rfb.ctrlAltDel).toBe(1);

    // Disconnect ends noVNC and the Engine's session.
    await userEvent.click(screen.getByRole('button', { name: /Disconnect/ }));
    expect(rfb.disconnected).toBe(true);
    await waitFor(() => expect(engine.callsTo('POST', '/api/vnc/disconnect')[0]?.body).toEqual({ session_id: 's-1' }));
    expect(status()).toHaveTextContent('Closed');
  });

  it('reconnects with the other quality when the preference changes (rule 4)', async () => {
    let n = 0;
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: details() },
      'POST /api/vnc/establish': () => ({ body: SESSION(`s-${++n}`, 2) }),
      'POST /api/vnc/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(rfbs).toHaveLength(1));
    rfbs[0].serverConnect();
    // Two displays: Display All may be Scaled 1:1.
    await userEvent.click(screen.getByRole('button', { name: 'Scaled' }));
    expect(rfbs[0].scaleViewport).toBe(false);

    await userEvent.click(screen.getByTestId('desktop-quality').parentElement!.querySelector('[role="combobox"]')!);
    await userEvent.click(within(screen.getByRole('listbox')).getByText('Prefer Quality'));
    await waitFor(() => expect(rfbs).toHaveLength(2));
    expect(rfbs[0].disconnected).toBe(true);
    expect(engine.callsTo('POST', '/api/vnc/establish')[1].body).toEqual({ guid: 'guid-web-1', quality: 'quality' });
    expect([rfbs[1].qualityLevel, rfbs[1].compressionLevel]).toEqual([9, 2]);
    await waitFor(() => expect(engine.callsTo('POST', '/api/vnc/disconnect')[0]?.body).toEqual({ session_id: 's-1' }));
  });

  it('tells the operator why establish failed, and an unclean close', async () => {
    fakeEngine({
      'GET /api/device/details/web-1': { body: details() },
      'POST /api/vnc/establish': {
        status: 502,
        body: { error: 'vnc_backend_no_rfb_banner', message: "the agent's VNC server sent no RFB banner (banner_read_timeout)", probe_stage: 'banner_read_timeout' },
      },
    });
    renderPage();
    expect(await screen.findByText(/sent no RFB banner/)).toBeInTheDocument();
    expect(status()).toHaveTextContent('Closed');
    expect(rfbs).toHaveLength(0);
  });

  it('asks for vnc_auth_retry on the attempt after a failed open (rule 7)', async () => {
    let n = 0;
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: details() },
      'POST /api/vnc/establish': () => ({ body: SESSION(`s-${++n}`) }),
      'POST /api/vnc/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(rfbs).toHaveLength(1));
    rfbs[0].serverDisconnect(false); // closed before it connected: the gateway refused
    expect(status()).toHaveTextContent('Closed');
    await userEvent.click(screen.getByRole('button', { name: /Reconnect/ }));
    await waitFor(() => expect(rfbs).toHaveLength(2));
    // The second attempt also runs the diagnostic auth probe (rule 7).
    expect(engine.callsTo('POST', '/api/vnc/establish')[1].body).toEqual({
      guid: 'guid-web-1',
      quality: 'speed',
      reason: 'vnc_auth_retry',
      auth_probe: true,
    });
    rfbs[1].serverConnect();
    rfbs[1].serverDisconnect(true);
    await userEvent.click(screen.getByRole('button', { name: /Reconnect/ }));
    await waitFor(() => expect(rfbs).toHaveLength(3));
    expect(engine.callsTo('POST', '/api/vnc/establish')[2].body).toEqual({ guid: 'guid-web-1', quality: 'speed' });
  });

  it('offers RDP where the agent has it; a stored credential is sent by its ID only', async () => {
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: details(['vnc', 'rdp']) },
      'GET /api/credentials': {
        body: {
          credentials: [
            { credential_id: 7, name: 'Local admin', connection_type: 'Windows', credential_type: 'Machine', username: 'administrator', domain: null, site_id: 1, has_password: true, secret_status: 'ok', created_at: '', updated_at: '' },
          ],
        },
      },
      'POST /api/vnc/establish': (req) => ({ body: { ...SESSION((req.body as { protocol?: string }).protocol === 'rdp' ? 'r-1' : 's-1'), protocol: (req.body as { protocol?: string }).protocol ?? 'vnc' } }),
      'POST /api/vnc/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(rfbs).toHaveLength(1));
    await userEvent.click(screen.getByRole('button', { name: 'RDP' }));
    expect(rfbs[0].disconnected).toBe(true);
    // RDP waits for a login.
    const form = await screen.findByTestId('rdp-login');
    expect(within(form).getByRole('button', { name: 'Connect' })).toBeDisabled();
    await userEvent.click(screen.getByTestId('rdp-credential').parentElement!.querySelector('[role="combobox"]')!);
    await userEvent.click(within(screen.getByRole('listbox')).getByText(/Local admin/));
    await userEvent.click(within(form).getByRole('button', { name: 'Connect' }));
    await waitFor(() => expect(rfbs).toHaveLength(2));
    expect(engine.callsTo('GET', '/api/credentials')[0].query.get('site_id')).toBe('1');
    expect(engine.callsTo('POST', '/api/vnc/establish')[1].body).toEqual({ guid: 'guid-web-1', quality: 'speed', protocol: 'rdp', credential_id: 7 });
    expect(rfbs[1].url).toBe(`ws://${window.location.host}/api/vnc/ws/r-1?token=one-time`);
    rfbs[1].serverConnect();
    expect(status()).toHaveTextContent('Connected');
  });

  it('connects RDP with manual credentials and forgets the password on disconnect (rule 3)', async () => {
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: details(['rdp']) },
      'GET /api/credentials': { body: { credentials: [] } },
      'POST /api/vnc/establish': { body: { ...SESSION('r-2'), protocol: 'rdp' } },
      'POST /api/vnc/disconnect': { body: {} },
    });
    renderPage();
    const form = await screen.findByTestId('rdp-login');
    // One protocol: no choice offered, and nothing established yet.
    expect(screen.queryByRole('button', { name: 'VNC' })).toBeNull();
    expect(engine.callsTo('POST', '/api/vnc/establish')).toHaveLength(0);
    await userEvent.click(screen.getByTestId('rdp-credential').parentElement!.querySelector('[role="combobox"]')!);
    await userEvent.click(within(screen.getByRole('listbox')).getByText(/Enter a username and password/));
    await userEvent.type(within(form).getByLabelText('Username'), 'ops');
    await userEvent.type(within(form).getByLabelText('Password'), 'Manual-Secret-1');
    await userEvent.type(within(form).getByLabelText('Domain (optional)'), 'CORP');
    await userEvent.click(within(form).getByRole('button', { name: 'Connect' }));
    await waitFor(() => expect(rfbs).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/vnc/establish')[0].body).toEqual({
      guid: 'guid-web-1',
      quality: 'speed',
      protocol: 'rdp',
      rdp_username: 'ops',
      rdp_password: 'Manual-Secret-1',
      rdp_domain: 'CORP',
    });
    rfbs[0].serverConnect();
    await userEvent.click(screen.getByRole('button', { name: /Disconnect/ }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/vnc/disconnect')[0]?.body).toEqual({ session_id: 'r-2' }));
    const again = await screen.findByTestId('rdp-login');
    expect(within(again).getByLabelText('Password')).toHaveValue('');
    expect(within(again).getByLabelText('Username')).toHaveValue('ops');
    expect(within(again).getByRole('button', { name: 'Connect' })).toBeDisabled();
  });

  it("takes another browser's session over (handoff)", async () => {
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: details() },
      'POST /api/vnc/establish': { body: SESSION('s-1') },
      'GET /api/vnc/sessions': {
        body: {
          sessions: [
            { session_id: 's-alice', guid: 'guid-web-1', operator: 'alice', status: 'live' },
            { session_id: 's-elsewhere', guid: 'guid-other', operator: 'bob', status: 'live' },
          ],
        },
      },
      'POST /api/vnc/handoff': { body: { ...SESSION('s-alice'), previous_operator: 'alice', handoffs: 1 } },
      'POST /api/vnc/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(rfbs).toHaveLength(1));
    const others = await screen.findByTestId('desktop-others');
    expect(others).toHaveTextContent("alice's session is open.");
    expect(others).not.toHaveTextContent('bob');
    await userEvent.click(within(others).getByRole('button', { name: 'Take over' }));
    await waitFor(() => expect(rfbs).toHaveLength(2));
    expect(engine.callsTo('POST', '/api/vnc/handoff')[0].body).toEqual({ session_id: 's-alice' });
    expect(rfbs[0].disconnected).toBe(true);
    expect(rfbs[1].url).toBe(`ws://${window.location.host}/api/vnc/ws/s-alice?token=one-time`);
    await waitFor(() => expect(engine.callsTo('POST', '/api/vnc/disconnect')[0]?.body).toEqual({ session_id: 's-1' }));
    rfbs[1].serverConnect();
    expect(status()).toHaveTextContent('Connected');
  });

  it('lets a session taken over elsewhere go without disconnecting it', async () => {
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: details() },
      'POST /api/vnc/establish': { body: SESSION('s-1') },
      'GET /api/vnc/sessions/s-1': { body: { session_id: 's-1', operator: 'alice', status: 'ready', handoffs: 1 } },
      'POST /api/vnc/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(rfbs).toHaveLength(1));
    rfbs[0].serverConnect();
    rfbs[0].serverDisconnect(true); // the gateway closed it: a handoff
    expect(await screen.findByText(/alice took this session on web-1 over/)).toBeInTheDocument();
    expect(status()).toHaveTextContent('Closed');
    await userEvent.click(screen.getByRole('button', { name: /Reconnect/ }));
    await waitFor(() => expect(rfbs).toHaveLength(2));
    expect(engine.callsTo('POST', '/api/vnc/disconnect')).toHaveLength(0);
  });

  it('carries text clipboards both ways and goes full screen', async () => {
    fakeEngine({
      'GET /api/device/details/web-1': { body: details() },
      'POST /api/vnc/establish': { body: SESSION('s-1') },
      'POST /api/vnc/disconnect': { body: {} },
    });
    const written: string[] = [];
    // userEvent installs its own clipboard on navigator; this one replaces it.
    const clipboard = {
      readText: vi.fn(async () => 'from the browser'),
      writeText: vi.fn(async (t: string) => {
        written.push(t);
      }),
    };
    renderPage();
    await waitFor(() => expect(rfbs).toHaveLength(1));
    Object.defineProperty(window.navigator, 'clipboard', { value: clipboard, configurable: true });
    const rfb = rfbs[0];
    const fullscreen = vi.fn(async () => {});
    (screen.getByTestId('desktop-screen') as HTMLElement & { requestFullscreen: unknown }).requestFullscreen = fullscreen;
    // Not connected yet: nothing to paste into or enlarge.
    expect(screen.getByRole('button', { name: /Paste/ })).toBeDisabled();
    expect(screen.getByRole('button', { name: /Full screen/ })).toBeDisabled();
    rfb.serverConnect();

    // The browser's clipboard to the remote desktop.
    await userEvent.click(screen.getByRole('button', { name: /Paste/ }));
    await waitFor(() => expect(rfb.pasted).toEqual(['from the browser']));
    // The remote desktop's clipboard to the browser, and shown.
    act(() => {
      rfb.dispatchEvent(new CustomEvent('clipboard', { detail: { text: 'from the desktop' } }));
    });
    expect(screen.getByTestId('desktop-clipboard')).toHaveTextContent('Remote clipboard: from the desktop');
    await waitFor(() => expect(written).toEqual(['from the desktop']));

    await userEvent.click(screen.getByRole('button', { name: /Full screen/ }));
    expect(fullscreen).toHaveBeenCalledTimes(1);
  });

  it('is offered only to devices whose agent has the vnc or rdp capability', async () => {
    fakeEngine({ 'GET /api/device/details/web-1': { body: details(['shell']) } });
    renderPage('/devices/web-1/summary');
    expect(await screen.findByRole('tab', { name: 'Terminal' })).toBeInTheDocument();
    expect(screen.queryByRole('tab', { name: 'Remote Desktop' })).toBeNull();
  });
});
