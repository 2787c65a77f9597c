// The Remote Desktop tab: the device's desktop in noVNC, through the Engine's
// gateway (docs/api.md "Remote desktop"). Each connect is a fresh establish:
// the Engine runs the establishment, then hands out a one-time WebSocket
// path that speaks RFB with no password (the Engine authenticated to the
// agent's server itself). Rule 4: Prefer Speed / Prefer Quality set noVNC's
// JPEG quality and compression, and a change reconnects. Rule 9: one full
// framebuffer; Display All offers Fit and Scaled, a single display is always
// fitted. Leaving the tab ends the session.
//
// RDP (docs/api.md "Remote desktop (RDP)"): where the agent offers it, the
// operator picks the protocol; an RDP session needs a login first, a stored
// credential (only its ID is sent) or manual entry, whose password lives in
// this tab's memory only and is cleared on Disconnect (rule 3). The Engine
// turns the RDP session into RFB, so noVNC shows it as it shows VNC.
import { useCallback, useEffect, useRef, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import RFB from '@novnc/novnc';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import MenuItem from '@mui/material/MenuItem';
import TextField from '@mui/material/TextField';
import ToggleButton from '@mui/material/ToggleButton';
import ToggleButtonGroup from '@mui/material/ToggleButtonGroup';
import ContentPasteIcon from '@mui/icons-material/ContentPaste';
import FullscreenIcon from '@mui/icons-material/Fullscreen';
import KeyboardIcon from '@mui/icons-material/Keyboard';
import LinkOffIcon from '@mui/icons-material/LinkOff';
import ReplayIcon from '@mui/icons-material/Replay';
import { credentials as credentialsApi, vnc as vncApi, type DesktopProtocol, type DesktopQuality, type RdpLogin } from '../../api/endpoints';
import { errorCode } from '../../components/errors';
import { useNotify } from '../../toasts/notify';
import { operationErrorToast } from './operationErrors';
import { ONBOARDING_TITLE, shellSocketUrl } from './TerminalTab';

export type DesktopStatus = 'connecting' | 'connected' | 'closed';

const STATUS_CHIP: Record<DesktopStatus, { label: string; color: 'default' | 'info' | 'success' }> = {
  connecting: { label: 'Connecting…', color: 'info' },
  connected: { label: 'Connected', color: 'success' },
  closed: { label: 'Closed', color: 'default' },
};

/** Rule 4: noVNC's JPEG quality (0-9) and compression (0-9) per preference. */
export const QUALITY: Record<DesktopQuality, { qualityLevel: number; compressionLevel: number; label: string }> = {
  speed: { qualityLevel: 2, compressionLevel: 9, label: 'Prefer Speed' },
  quality: { qualityLevel: 9, compressionLevel: 2, label: 'Prefer Quality' },
};

type Scale = 'fit' | 'scaled';

const PROTOCOL_LABEL: Record<DesktopProtocol, string> = { vnc: 'VNC', rdp: 'RDP' };

/** The RDP login form's choice: a stored credential's ID, or manual entry. */
const MANUAL = 'manual';

export function RemoteDesktopTab({
  guid,
  hostname,
  siteId = null,
  protocols = ['vnc'],
}: {
  guid: string;
  hostname: string;
  siteId?: number | null;
  protocols?: DesktopProtocol[];
}) {
  const notify = useNotify();
  const [protocol, setProtocol] = useState<DesktopProtocol>(protocols[0] ?? 'vnc');
  // RDP login: a stored credential ('<id>') or MANUAL; the manual fields
  // stay in memory only.
  const [credChoice, setCredChoice] = useState('');
  const [rdpUser, setRdpUser] = useState('');
  const [rdpPassword, setRdpPassword] = useState('');
  const [rdpDomain, setRdpDomain] = useState('');
  const stored = useQuery({
    queryKey: ['credentials', siteId ?? 'all'],
    queryFn: () => credentialsApi.list(siteId),
    enabled: protocol === 'rdp',
  });
  const login = useRef<RdpLogin | null>(null);
  const screenRef = useRef<HTMLDivElement>(null);
  // failedOpen: the last attempt closed before it connected (an auth
  // failure among the reasons), so the next asks for vnc_auth_retry (rule 7).
  // handoffs: how many times the session had been taken over when this
  // browser got it; a clean close with more means someone took it over.
  const conn = useRef<{ gen: number; rfb: RFB | null; sessionId: string | null; failedOpen: boolean; handoffs: number }>({
    gen: 0,
    rfb: null,
    sessionId: null,
    failedOpen: false,
    handoffs: 0,
  });
  // Other ready or live sessions of this device (another operator, or
  // this one in another browser), which this browser may take over.
  const [others, setOthers] = useState<{ session_id: string; operator: string; status: string }[]>([]);
  const [status, setStatus] = useState<DesktopStatus>('connecting');
  const [quality, setQuality] = useState<DesktopQuality>('speed');
  const [scale, setScale] = useState<Scale>('fit');
  const [displays, setDisplays] = useState(1);
  const [clipboard, setClipboard] = useState('');

  /** Ends the current attempt: closes noVNC and tells the Engine. */
  const teardown = useCallback(() => {
    const c = conn.current;
    c.gen += 1;
    const rfb = c.rfb;
    c.rfb = null;
    if (rfb) rfb.disconnect();
    if (c.sessionId) void vncApi.disconnect(c.sessionId).catch(() => {});
    c.sessionId = null;
  }, []);

  const connect = useCallback(
    async (q: DesktopQuality, proto: DesktopProtocol = 'vnc', takeOver?: string) => {
      teardown();
      const c = conn.current;
      const gen = c.gen;
      setStatus('connecting');
      let session;
      const retry = c.failedOpen && proto === 'vnc';
      c.failedOpen = false;
      try {
        if (takeOver) {
          const taken = await vncApi.handoff(takeOver);
          c.handoffs = taken.handoffs;
          session = taken;
        } else {
          session =
            proto === 'rdp' && login.current
              ? await vncApi.establish(guid, q, undefined, login.current)
              : await vncApi.establish(guid, q, retry ? 'vnc_auth_retry' : undefined);
          c.handoffs = 0;
        }
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
          notify(operationErrorToast(error, 'Open the remote desktop'));
        }
        return;
      }
      if (gen !== c.gen || !screenRef.current) {
        void vncApi.disconnect(session.session_id).catch(() => {});
        return;
      }
      c.sessionId = session.session_id;
      const monitors = session.display_topology?.length ?? 1;
      setDisplays(Math.max(1, monitors));
      const rfb = new RFB(screenRef.current, shellSocketUrl(session.ws_url), { shared: true, wsProtocols: ['binary'] });
      c.rfb = rfb;
      rfb.qualityLevel = QUALITY[q].qualityLevel;
      rfb.compressionLevel = QUALITY[q].compressionLevel;
      rfb.scaleViewport = true;
      rfb.focusOnClick = true;
      let opened = false;
      rfb.addEventListener('connect', () => {
        opened = true;
        if (c.rfb === rfb) setStatus('connected');
      });
      rfb.addEventListener('disconnect', (ev: Event) => {
        if (c.rfb !== rfb) return;
        c.rfb = null;
        setStatus('closed');
        const clean = (ev as CustomEvent<{ clean: boolean }>).detail?.clean;
        if (!opened) c.failedOpen = true;
        const sessionId = c.sessionId;
        if (clean && opened && sessionId) {
          // A clean close of an open session: taken over elsewhere? Then
          // it is no longer this browser's to disconnect.
          void vncApi
            .session(sessionId)
            .then((s) => {
              if (s.status !== 'ended' && s.handoffs > c.handoffs && c.sessionId === sessionId) {
                c.sessionId = null;
                notify({
                  title: 'Remote desktop taken over',
                  message: `${s.operator} took this session on ${hostname} over in another browser. Press Reconnect to open a new one.`,
                  variant: 'info',
                  icon: 'info',
                });
              }
            })
            .catch(() => {});
        }
        if (!clean) {
          notify({ title: 'Remote desktop closed', message: `The connection to ${hostname} ended unexpectedly. Press Reconnect to open it again.`, variant: 'warning', icon: 'warning' });
        }
      });
      rfb.addEventListener('clipboard', (ev: Event) => {
        const text = (ev as CustomEvent<{ text: string }>).detail?.text ?? '';
        setClipboard(text);
        void navigator.clipboard?.writeText(text).catch(() => {});
      });
    },
    [guid, hostname, notify, teardown],
  );

  useEffect(() => {
    // VNC connects on arrival; RDP waits for its login.
    if (protocol === 'vnc') void connect(quality, 'vnc');
    else setStatus('closed');
    return teardown;
    // A quality change reconnects (rule 4) through changeQuality, not here.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [connect, teardown, protocol]);

  // Rule 3: the manual password is cleared on disconnect.
  const forgetLogin = () => {
    login.current = null;
    setRdpPassword('');
  };

  const connectRdp = () => {
    if (credChoice === MANUAL) {
      login.current = { rdp_username: rdpUser.trim(), rdp_password: rdpPassword, ...(rdpDomain.trim() ? { rdp_domain: rdpDomain.trim() } : {}) };
    } else if (credChoice) {
      login.current = { credential_id: Number(credChoice) };
    } else {
      return;
    }
    void connect(quality, 'rdp');
  };
  const rdpReady = credChoice === MANUAL ? rdpUser.trim() !== '' && rdpPassword !== '' : credChoice !== '';

  // Rule 9: a single display is always fitted; Display All may be scaled 1:1.
  useEffect(() => {
    const rfb = conn.current.rfb;
    if (rfb) rfb.scaleViewport = displays <= 1 || scale === 'fit';
  }, [scale, displays, status]);

  // The device's other sessions, on arrival and whenever this one changes.
  useEffect(() => {
    let live = true;
    vncApi
      .sessions()
      .then((list) => {
        if (!live) return;
        setOthers(
          list
            .filter((x) => x.guid === guid && x.session_id !== conn.current.sessionId && (x.status === 'ready' || x.status === 'live'))
            .map((x) => ({ session_id: x.session_id, operator: x.operator, status: x.status })),
        );
      })
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [guid, status]);

  const changeQuality = (q: DesktopQuality) => {
    setQuality(q);
    if (protocol === 'vnc' || login.current) void connect(q, protocol);
  };

  const changeProtocol = (p: DesktopProtocol) => {
    teardown();
    forgetLogin();
    setProtocol(p);
  };

  const chip = STATUS_CHIP[status];
  const connected = status === 'connected';
  return (
    <Box>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.5, mb: 1.25, flexWrap: 'wrap' }}>
        <Chip size="small" variant="outlined" label={chip.label} color={chip.color} data-testid="desktop-status" data-status={status} />
        {protocols.length > 1 && (
          <ToggleButtonGroup size="small" exclusive value={protocol} onChange={(_, v: DesktopProtocol | null) => v && changeProtocol(v)} aria-label="Protocol">
            {protocols.map((p) => (
              <ToggleButton key={p} value={p} aria-label={PROTOCOL_LABEL[p]}>
                {PROTOCOL_LABEL[p]}
              </ToggleButton>
            ))}
          </ToggleButtonGroup>
        )}
        <TextField
          select
          size="small"
          label="Quality"
          value={quality}
          onChange={(e) => changeQuality(e.target.value as DesktopQuality)}
          sx={{ minWidth: 160 }}
          slotProps={{ select: { inputProps: { 'data-testid': 'desktop-quality' } } }}
        >
          {(Object.keys(QUALITY) as DesktopQuality[]).map((k) => (
            <MenuItem key={k} value={k}>
              {QUALITY[k].label}
            </MenuItem>
          ))}
        </TextField>
        <ToggleButtonGroup
          size="small"
          exclusive
          value={displays <= 1 ? 'fit' : scale}
          onChange={(_, v: Scale | null) => v && setScale(v)}
          aria-label="Display All"
        >
          <ToggleButton value="fit" aria-label="Fit">
            Fit
          </ToggleButton>
          <ToggleButton value="scaled" aria-label="Scaled" disabled={displays <= 1}>
            Scaled
          </ToggleButton>
        </ToggleButtonGroup>
        <Box sx={{ flex: 1 }} />
        <Button size="small" variant="outlined" startIcon={<KeyboardIcon />} disabled={!connected} onClick={() => conn.current.rfb?.sendCtrlAltDel()}>
          Ctrl-Alt-Del
        </Button>
        <Button
          size="small"
          variant="outlined"
          startIcon={<ContentPasteIcon />}
          disabled={!connected}
          onClick={async () => {
            const text = (await navigator.clipboard?.readText().catch(() => '')) ?? '';
            if (text) conn.current.rfb?.clipboardPasteFrom(text);
          }}
        >
          Paste
        </Button>
        <Button size="small" variant="outlined" startIcon={<FullscreenIcon />} disabled={!connected} onClick={() => void screenRef.current?.requestFullscreen?.()}>
          Full screen
        </Button>
        <Button
          size="small"
          variant="outlined"
          startIcon={<ReplayIcon />}
          onClick={() => void connect(quality, protocol)}
          disabled={status === 'connecting' || (protocol === 'rdp' && !login.current)}
        >
          Reconnect
        </Button>
        <Button
          size="small"
          variant="outlined"
          color="error"
          startIcon={<LinkOffIcon />}
          disabled={status === 'closed'}
          onClick={() => {
            teardown();
            forgetLogin();
            setStatus('closed');
          }}
        >
          Disconnect
        </Button>
      </Box>
      {protocol === 'rdp' && status === 'closed' && (
        <Box
          component="form"
          data-testid="rdp-login"
          sx={{ display: 'flex', alignItems: 'center', gap: 1.5, mb: 1.25, flexWrap: 'wrap' }}
          onSubmit={(e) => {
            e.preventDefault();
            connectRdp();
          }}
        >
          <TextField
            select
            size="small"
            label="Sign in with"
            value={credChoice}
            onChange={(e) => setCredChoice(e.target.value)}
            sx={{ minWidth: 240 }}
            slotProps={{ select: { inputProps: { 'data-testid': 'rdp-credential' } } }}
          >
            {(stored.data ?? []).map((c) => (
              <MenuItem key={c.credential_id} value={String(c.credential_id)} disabled={!c.has_password || c.secret_status !== 'ok'}>
                {c.name} ({c.domain ? `${c.domain}\\` : ''}
                {c.username})
              </MenuItem>
            ))}
            <MenuItem value={MANUAL}>Enter a username and password…</MenuItem>
          </TextField>
          {credChoice === MANUAL && (
            <>
              <TextField size="small" label="Username" value={rdpUser} onChange={(e) => setRdpUser(e.target.value)} autoComplete="off" />
              <TextField
                size="small"
                label="Password"
                type="password"
                value={rdpPassword}
                onChange={(e) => setRdpPassword(e.target.value)}
                autoComplete="new-password"
              />
              <TextField size="small" label="Domain (optional)" value={rdpDomain} onChange={(e) => setRdpDomain(e.target.value)} autoComplete="off" />
            </>
          )}
          <Button type="submit" size="small" variant="contained" disabled={!rdpReady}>
            Connect
          </Button>
        </Box>
      )}
      {others.length > 0 && (
        <Box data-testid="desktop-others" sx={{ display: 'flex', flexDirection: 'column', gap: 0.5, mb: 1 }}>
          {others.map((o) => (
            <Box key={o.session_id} sx={{ display: 'flex', alignItems: 'center', gap: 1, typography: 'body2' }}>
              <span>
                {o.operator}'s session is {o.status === 'live' ? 'open' : 'waiting for its browser'}.
              </span>
              <Button size="small" variant="text" onClick={() => void connect(quality, 'vnc', o.session_id)}>
                Take over
              </Button>
            </Box>
          ))}
        </Box>
      )}
      <Box ref={screenRef} data-testid="desktop-screen" sx={{ height: 600, width: '100%', bgcolor: '#0b1020', borderRadius: 1, overflow: 'hidden' }} />
      {clipboard && (
        <Box data-testid="desktop-clipboard" sx={{ mt: 1, typography: 'caption', color: 'text.secondary' }}>
          Remote clipboard: {clipboard.length > 80 ? `${clipboard.slice(0, 80)}…` : clipboard}
        </Box>
      )}
    </Box>
  );
}
