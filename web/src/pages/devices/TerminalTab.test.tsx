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
import { shellSocketUrl } from './TerminalTab';

// jsdom cannot lay out or measure xterm.js; a stand-in records what the tab
// does with it and lets the test type and resize.
const { FakeTerminal, FakeFitAddon, terms } = vi.hoisted(() => {
  const terms: InstanceType<typeof FakeTerminal>[] = [];
  class FakeTerminal {
    cols = 80;
    rows = 24;
    options: Record<string, unknown>;
    written: Uint8Array[] = [];
    disposed = false;
    private handlers = { data: [] as ((d: string) => void)[], binary: [] as ((d: string) => void)[], resize: [] as ((s: { cols: number; rows: number }) => void)[] };
    constructor(options: Record<string, unknown> = {}) {
      this.options = { ...options };
      terms.push(this);
    }
    loadAddon(addon: { activate: (t: FakeTerminal) => void }) {
      addon.activate(this);
    }
    open(el: HTMLElement) {
      const ta = document.createElement('textarea');
      ta.className = 'xterm-helper-textarea';
      el.appendChild(ta);
    }
    write(data: Uint8Array | string) {
      this.written.push(typeof data === 'string' ? new TextEncoder().encode(data) : data);
    }
    focus() {}
    dispose() {
      this.disposed = true;
    }
    private on<K extends keyof FakeTerminal['handlers']>(kind: K) {
      return (cb: FakeTerminal['handlers'][K][number]) => {
        (this.handlers[kind] as unknown[]).push(cb);
        return { dispose: () => {} };
      };
    }
    onData = this.on('data');
    onBinary = this.on('binary');
    onResize = this.on('resize');
    type(text: string) {
      for (const h of this.handlers.data) h(text);
    }
    resize(cols: number, rows: number) {
      this.cols = cols;
      this.rows = rows;
      for (const h of this.handlers.resize) h({ cols, rows });
    }
  }
  class FakeFitAddon {
    activate() {}
    dispose() {}
    fit() {}
  }
  return { FakeTerminal, FakeFitAddon, terms };
});
type FakeTerminal = InstanceType<typeof FakeTerminal>;
vi.mock('@xterm/xterm', () => ({ Terminal: FakeTerminal }));
vi.mock('@xterm/addon-fit', () => ({ FitAddon: FakeFitAddon }));

const sockets: FakeSocket[] = [];
class FakeSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;
  readyState = FakeSocket.CONNECTING;
  binaryType = 'blob';
  sent: (string | Uint8Array)[] = [];
  closedWith: number | null = null;
  onopen: (() => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number }) => void) | null = null;
  onerror: (() => void) | null = null;
  constructor(readonly url: string) {
    sockets.push(this);
  }
  send(data: string | Uint8Array) {
    this.sent.push(data);
  }
  close(code = 1000) {
    this.closedWith = code;
    this.readyState = FakeSocket.CLOSED;
  }
  // What the Engine does:
  serverOpen() {
    act(() => {
      this.readyState = FakeSocket.OPEN;
      this.onopen?.();
    });
  }
  serverSend(data: string | ArrayBuffer) {
    act(() => this.onmessage?.({ data }));
  }
  serverClose(code = 1000) {
    act(() => {
      this.readyState = FakeSocket.CLOSED;
      this.onclose?.({ code });
    });
  }
  controls() {
    return this.sent.filter((s): s is string => typeof s === 'string').map((s) => JSON.parse(s));
  }
}

const SESSION = { session_id: 'sess-1', ws_url: '/api/shell/ws/sess-1?token=one-use', agent_socket: true };

function renderPage(route = '/devices/web-1/terminal') {
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

const status = () => screen.getByTestId('shell-status');

beforeEach(() => {
  terms.length = 0;
  sockets.length = 0;
  vi.stubGlobal('WebSocket', FakeSocket);
});
afterEach(() => vi.unstubAllGlobals());

describe('shellSocketUrl', () => {
  it('builds ws:// or wss:// on the page origin from the path', () => {
    expect(shellSocketUrl('/api/shell/ws/x?token=t', { protocol: 'http:', host: 'localhost:5173' })).toBe(
      'ws://localhost:5173/api/shell/ws/x?token=t',
    );
    expect(shellSocketUrl('/api/shell/ws/x?token=t', { protocol: 'https:', host: 'rmm.example' })).toBe(
      'wss://rmm.example/api/shell/ws/x?token=t',
    );
    expect(shellSocketUrl('wss://other/x', { protocol: 'http:', host: 'h' })).toBe('wss://other/x');
  });
});

describe('Terminal tab', () => {
  it('establishes a session, sends the size on open, and bridges keystrokes and output as bytes', async () => {
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/shell/establish': { body: SESSION },
      'POST /api/shell/disconnect': { body: {} },
    });
    renderPage();
    expect(await screen.findByTestId('terminal')).toBeInTheDocument();
    await waitFor(() => expect(sockets).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/shell/establish')[0].body).toEqual({ guid: 'guid-web-1' });
    const ws = sockets[0];
    expect(ws.url).toBe(`ws://${window.location.host}/api/shell/ws/sess-1?token=one-use`);
    expect(ws.binaryType).toBe('arraybuffer');
    expect(status()).toHaveTextContent('Connecting…');
    expect(screen.getByTestId('terminal').querySelector('textarea')).not.toBeNull();

    ws.serverOpen();
    expect(status()).toHaveTextContent('Connected');
    expect(ws.controls()).toEqual([{ type: 'resize', cols: 80, rows: 24 }]);
    const term = terms[terms.length - 1];
    expect(term.options.disableStdin).toBe(false);

    act(() => term.type('ls\r'));
    const keys = ws.sent.find((s) => typeof s !== 'string') as Uint8Array;
    expect(new TextDecoder().decode(keys)).toBe('ls\r');

    ws.serverSend(new TextEncoder().encode('total 0\r\n').buffer as ArrayBuffer);
    expect(new TextDecoder().decode(term.written[term.written.length - 1])).toBe('total 0\r\n');

    act(() => term.resize(120, 40));
    expect(ws.controls()).toEqual([
      { type: 'resize', cols: 80, rows: 24 },
      { type: 'resize', cols: 120, rows: 40 },
    ]);
  });

  it('shows the exit code when the shell ends', async () => {
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/shell/establish': { body: SESSION },
      'POST /api/shell/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(sockets).toHaveLength(1));
    sockets[0].serverOpen();
    sockets[0].serverSend(JSON.stringify({ type: 'exit', code: 130 }));
    sockets[0].serverClose();
    expect(await screen.findByTestId('shell-exit')).toHaveTextContent('Shell exited with code 130');
    expect(status()).toHaveTextContent('Exited');
  });

  it('says why when the shell is refused after the socket opened', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/shell/establish': { body: SESSION },
      'POST /api/shell/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(sockets).toHaveLength(1));
    sockets[0].serverOpen();
    sockets[0].serverSend(JSON.stringify({ type: 'error', error: 'role_stopped', message: 'the remote_shell role is stopped' }));
    sockets[0].serverClose(1011);
    const alert = await screen.findByTestId('shell-error');
    expect(alert).toHaveAttribute('data-code', 'role_stopped');
    expect(alert).toHaveTextContent('The Remote shell role is stopped on web-1: start it on the Agent Health tab');
    expect(status()).toHaveTextContent('Closed');

    // Another refusal says its own message; a reconnect clears it first.
    await user.click(screen.getByRole('button', { name: 'Reconnect' }));
    expect(screen.queryByTestId('shell-error')).toBeNull();
    await waitFor(() => expect(sockets).toHaveLength(2));
    sockets[1].serverOpen();
    sockets[1].serverSend(JSON.stringify({ type: 'error', error: 'shell_limit', message: 'this agent already runs 8 shells' }));
    sockets[1].serverClose(1011);
    expect(await screen.findByTestId('shell-error')).toHaveTextContent('The shell was refused: this agent already runs 8 shells.');
  });

  it('disconnects with the session id, and reconnects with a fresh establish', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/shell/establish': [{ body: SESSION }, { body: { ...SESSION, session_id: 'sess-2', ws_url: '/api/shell/ws/sess-2?token=two' } }],
      'POST /api/shell/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(sockets).toHaveLength(1));
    sockets[0].serverOpen();
    await user.click(screen.getByRole('button', { name: 'Disconnect' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/shell/disconnect')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/shell/disconnect')[0].body).toEqual({ session_id: 'sess-1' });
    expect(sockets[0].closedWith).toBe(1000);
    expect(status()).toHaveTextContent('Closed');

    await user.click(screen.getByRole('button', { name: 'Reconnect' }));
    await waitFor(() => expect(sockets).toHaveLength(2));
    expect(engine.callsTo('POST', '/api/shell/establish')).toHaveLength(2);
    expect(sockets[1].url).toContain('/api/shell/ws/sess-2?token=two');
    sockets[1].serverOpen();
    expect(status()).toHaveTextContent('Connected');
  });

  it('ends the session when the operator leaves the tab', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/shell/establish': { body: SESSION },
      'POST /api/shell/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(sockets).toHaveLength(1));
    sockets[0].serverOpen();
    await user.click(screen.getByRole('tab', { name: 'Summary' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/shell/disconnect')).toHaveLength(1));
    expect(sockets[0].closedWith).toBe(1000);
    expect(terms[terms.length - 1].disposed).toBe(true);
  });

  it('says so when the socket closes before it opened', async () => {
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/shell/establish': { body: SESSION },
      'POST /api/shell/disconnect': { body: {} },
    });
    renderPage();
    await waitFor(() => expect(sockets).toHaveLength(1));
    sockets[0].serverClose(1006);
    const title = await screen.findByText('Shell connection failed', { selector: '[data-testid="toast"] h6' });
    expect(title.closest('[data-testid="toast"]')).toHaveTextContent('code 1006');
    expect(status()).toHaveTextContent('Closed');
  });

  it('opens nothing and says onboarding is underway when the agent has no socket yet', async () => {
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/shell/establish': { status: 409, body: { error: 'agent_socket_missing', message: 'agent socket missing' } },
    });
    renderPage();
    const title = await screen.findByText('Agent Onboarding Underway', { selector: '[data-testid="toast"] h6' });
    const toast = title.closest('[data-testid="toast"]') as HTMLElement;
    expect(toast).toHaveAttribute('data-variant', 'warning');
    expect(within(toast).getByTestId('toast-message')).toHaveTextContent('Wait about 1 minute for onboarding');
    expect(sockets).toHaveLength(0);
    expect(status()).toHaveTextContent('Closed');
  });
});
