// The Terminal tab: a remote shell on the device in xterm.js. The Engine hands
// out a session and a single-use WebSocket path (so every reconnect is a new
// establish); on that socket binary frames are terminal bytes both ways and
// text frames are JSON control messages (resize from us, exit from the agent,
// error when the Engine or the agent refuses the shell once the socket is open).
// Leaving the tab or the page ends the session.
import { useCallback, useEffect, useRef, useState } from 'react';
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import LinkOffIcon from '@mui/icons-material/LinkOff';
import ReplayIcon from '@mui/icons-material/Replay';
import { shell as shellApi } from '../../api/endpoints';
import type { ShellControl } from '../../api/types';
import { errorCode } from '../../components/errors';
import { useNotify } from '../../toasts/notify';
import { operationErrorToast } from './operationErrors';
import { mono } from './parts';

export type ShellStatus = 'connecting' | 'connected' | 'closed' | 'exited';

const STATUS_CHIP: Record<ShellStatus, { label: string; color: 'default' | 'info' | 'success' | 'warning' }> = {
  connecting: { label: 'Connecting…', color: 'info' },
  connected: { label: 'Connected', color: 'success' },
  closed: { label: 'Closed', color: 'default' },
  exited: { label: 'Exited', color: 'warning' },
};

export const ONBOARDING_TITLE = 'Agent Onboarding Underway';

/** ws_url is a same-origin path; the scheme follows the page's (wss behind HTTPS). */
export function shellSocketUrl(wsUrl: string, loc: Pick<Location, 'protocol' | 'host'> = window.location): string {
  if (/^wss?:\/\//i.test(wsUrl)) return wsUrl;
  const scheme = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  return new URL(wsUrl, `${scheme}//${loc.host}`).toString();
}

function parseControl(text: string): ShellControl | null {
  try {
    const msg = JSON.parse(text) as Partial<ShellControl>;
    return msg && typeof msg.type === 'string' ? (msg as ShellControl) : null;
  } catch {
    return null;
  }
}

export function TerminalTab({ guid, hostname }: { guid: string; hostname: string }) {
  const notify = useNotify();
  const containerRef = useRef<HTMLDivElement>(null);
  const termRef = useRef<Terminal | null>(null);
  const fitRef = useRef<FitAddon | null>(null);
  // gen tells a late answer (establish, socket events) from the current attempt.
  const conn = useRef<{ gen: number; ws: WebSocket | null; sessionId: string | null }>({ gen: 0, ws: null, sessionId: null });
  const [status, setStatus] = useState<ShellStatus>('connecting');
  const [exitCode, setExitCode] = useState<number | null>(null);
  const [refused, setRefused] = useState<{ error: string; message: string } | null>(null);

  const sendControl = useCallback((msg: ShellControl) => {
    const ws = conn.current.ws;
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  }, []);

  const fit = useCallback(() => {
    try {
      fitRef.current?.fit();
    } catch {
      // Not laid out yet (hidden or zero-sized): the next resize fits.
    }
  }, []);

  /** Ends the current attempt, if any: closes its socket and tells the Engine. */
  const teardown = useCallback(() => {
    const c = conn.current;
    c.gen += 1;
    const ws = c.ws;
    c.ws = null;
    if (ws && ws.readyState !== WebSocket.CLOSED) ws.close(1000, 'disconnect');
    if (c.sessionId) void shellApi.disconnect(c.sessionId).catch(() => {});
    c.sessionId = null;
    if (termRef.current) termRef.current.options.disableStdin = true;
  }, []);

  const connect = useCallback(async () => {
    teardown();
    const c = conn.current;
    const gen = c.gen;
    setStatus('connecting');
    setExitCode(null);
    setRefused(null);
    let session;
    try {
      session = await shellApi.establish(guid);
    } catch (error) {
      if (gen !== c.gen) return;
      setStatus('closed');
      if (errorCode(error) === 'agent_socket_missing') {
        notify({
          title: ONBOARDING_TITLE,
          message: `The agent on ${hostname} is not connected to the Engine yet. Wait about 1 minute for onboarding to finish, then press Reconnect.`,
          variant: 'warning',
          icon: 'warning',
          ttlMs: 10_000,
        });
      } else {
        notify(operationErrorToast(error, 'Open a shell'));
      }
      return;
    }
    if (gen !== c.gen) {
      // Left or reconnected meanwhile: this session is nobody's.
      void shellApi.disconnect(session.session_id).catch(() => {});
      return;
    }
    c.sessionId = session.session_id;
    const ws = new WebSocket(shellSocketUrl(session.ws_url));
    ws.binaryType = 'arraybuffer';
    c.ws = ws;
    let opened = false;
    ws.onopen = () => {
      if (c.ws !== ws) return;
      opened = true;
      setStatus('connected');
      const term = termRef.current;
      if (!term) return;
      fit();
      term.options.disableStdin = false;
      sendControl({ type: 'resize', cols: term.cols, rows: term.rows });
      term.focus();
    };
    ws.onmessage = (ev: MessageEvent) => {
      if (c.ws !== ws) return;
      if (typeof ev.data === 'string') {
        const msg = parseControl(ev.data);
        if (msg?.type === 'exit') {
          // The agent closes the socket itself; the session is over.
          c.sessionId = null;
          setExitCode(msg.code);
          setStatus('exited');
          if (termRef.current) termRef.current.options.disableStdin = true;
        }
        if (msg?.type === 'error') {
          // The Engine closes the socket next (1011); say why.
          c.sessionId = null;
          setRefused({ error: msg.error, message: msg.message });
          if (termRef.current) termRef.current.options.disableStdin = true;
        }
        return;
      }
      termRef.current?.write(new Uint8Array(ev.data as ArrayBuffer));
    };
    ws.onclose = (ev: CloseEvent) => {
      if (c.ws !== ws) return;
      c.ws = null;
      if (!opened) {
        notify({
          title: 'Shell connection failed',
          message: `The shell socket to ${hostname} closed before it opened (code ${ev.code}). Press Reconnect to try again.`,
          variant: 'error',
          icon: 'error',
        });
      }
      if (termRef.current) termRef.current.options.disableStdin = true;
      setStatus((s) => (s === 'exited' ? s : 'closed'));
    };
  }, [guid, hostname, notify, teardown, fit, sendControl]);

  // The terminal lives as long as the tab.
  useEffect(() => {
    const el = containerRef.current!;
    const term = new Terminal({
      cursorBlink: true,
      disableStdin: true,
      fontFamily: mono.fontFamily,
      fontSize: 13,
      scrollback: 5000,
      theme: { background: '#0b1020' },
    });
    const fitAddon = new FitAddon();
    term.loadAddon(fitAddon);
    term.open(el);
    termRef.current = term;
    fitRef.current = fitAddon;
    fit();

    const encoder = new TextEncoder();
    const sendBytes = (bytes: Uint8Array) => {
      const ws = conn.current.ws;
      if (ws && ws.readyState === WebSocket.OPEN) ws.send(bytes);
    };
    const subs = [
      term.onData((data) => sendBytes(encoder.encode(data))),
      // onBinary carries raw bytes (mouse reports) one per character.
      term.onBinary((data) => sendBytes(Uint8Array.from(data, (ch) => ch.charCodeAt(0) & 0xff))),
      term.onResize(({ cols, rows }) => sendControl({ type: 'resize', cols, rows })),
    ];
    const observer = new ResizeObserver(() => fit());
    observer.observe(el);
    return () => {
      observer.disconnect();
      for (const s of subs) s.dispose();
      term.dispose();
      termRef.current = null;
      fitRef.current = null;
    };
  }, [fit, sendControl]);

  // Open a session on arrival (and for another device); leaving ends it.
  useEffect(() => {
    void connect();
    return teardown;
  }, [connect, teardown]);

  const chip = STATUS_CHIP[status];
  return (
    <Box>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.5, mb: 1.25, flexWrap: 'wrap' }}>
        <Chip size="small" variant="outlined" label={chip.label} color={chip.color} data-testid="shell-status" data-status={status} />
        <Box sx={{ flex: 1, typography: 'body2', color: 'text.secondary' }}>
          Shell on {hostname} as the agent’s privileged account.
        </Box>
        <Button size="small" variant="outlined" startIcon={<ReplayIcon />} onClick={() => void connect()} disabled={status === 'connecting'}>
          Reconnect
        </Button>
        <Button
          size="small"
          variant="outlined"
          color="error"
          startIcon={<LinkOffIcon />}
          disabled={status !== 'connected' && status !== 'connecting'}
          onClick={() => {
            teardown();
            setStatus('closed');
          }}
        >
          Disconnect
        </Button>
      </Box>
      {refused && status !== 'connecting' && (
        <Alert severity="error" variant="outlined" sx={{ mb: 1.25 }} data-testid="shell-error" data-code={refused.error}>
          {refused.error === 'role_stopped'
            ? `The Remote shell role is stopped on ${hostname}: start it on the Agent Health tab, then Reconnect.`
            : `The shell was refused: ${refused.message || refused.error}.`}
        </Alert>
      )}
      {status === 'exited' && (
        <Alert severity="info" variant="outlined" sx={{ mb: 1.25 }} data-testid="shell-exit">
          Shell exited with code {exitCode}. Reconnect to start a new one.
        </Alert>
      )}
      <Box sx={{ bgcolor: '#0b1020', borderRadius: 1, p: 1 }}>
        <Box
          ref={containerRef}
          data-testid="terminal"
          onClick={() => termRef.current?.focus()}
          sx={{ height: 480, width: '100%', overflow: 'hidden' }}
        />
      </Box>
    </Box>
  );
}
