import { lazy, Suspense, useState, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link as RouterLink, Navigate, useNavigate, useParams } from 'react-router';
import Alert from '@mui/material/Alert';
import AlertTitle from '@mui/material/AlertTitle';
import Box from '@mui/material/Box';
import Breadcrumbs from '@mui/material/Breadcrumbs';
import CircularProgress from '@mui/material/CircularProgress';
import IconButton from '@mui/material/IconButton';
import Link from '@mui/material/Link';
import Tab from '@mui/material/Tab';
import Tabs from '@mui/material/Tabs';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import RefreshIcon from '@mui/icons-material/Refresh';
import { ApiError } from '../../api/client';
import { devices as devicesApi } from '../../api/endpoints';
import type { DeviceDetails, TrustAction } from '../../api/types';
import type { DesktopProtocol } from '../../api/endpoints';
import { useSession } from '../../auth/session';
import { ErrorAlert } from '../../components/ErrorAlert';
import { ActivityTab } from './ActivityTab';
import { AgentHealthTab } from './AgentHealthTab';
import { AgentTab } from './AgentTab';
import { RelativeTime, StatusChip, TrustBadge } from './chips';
import { DescriptionEditor } from './DescriptionEditor';
import {
  HardwareTab,
  NetworkTab,
  PatchesTab,
  SessionsTab,
  SoftwareTab,
  SummaryTab,
} from './InventoryTabs';
import { MetadataTab } from './MetadataTab';
import { WatchdogsTab } from './WatchdogsTab';
import { ProcessesTab } from './ProcessesTab';
import { DEVICE_POLL_MS, deviceDetailsKey, devicePath } from './queries';
import { FilesTab } from './files/FilesTab';
import { RegistryTab } from './registry/RegistryTab';
import { ServicesTab } from './ServicesTab';
import { TrustButtons, TrustDialog } from './TrustActions';
import { RedeployButton } from './Redeploy';

// xterm.js is loaded only when a terminal is opened.
const TerminalTab = lazy(() => import('./TerminalTab').then((m) => ({ default: m.TerminalTab })));
// noVNC likewise, only when the desktop is opened.
const RemoteDesktopTab = lazy(() => import('./RemoteDesktopTab').then((m) => ({ default: m.RemoteDesktopTab })));

type TabKey =
  | 'summary'
  | 'hardware'
  | 'network'
  | 'software'
  | 'services'
  | 'processes'
  | 'sessions'
  | 'patches'
  | 'terminal'
  | 'desktop'
  | 'files'
  | 'registry'
  | 'activity'
  | 'metadata'
  | 'watchdogs'
  | 'agent'
  | 'agent-health';

/** The tabs in order; the key is the URL segment (/devices/<hostname>/<key>). */
// when: the tab is shown only for devices it applies to.
const TABS: { key: TabKey; label: string; render: (d: DeviceDetails, hostname: string) => ReactNode; when?: (d: DeviceDetails) => boolean }[] = [
  { key: 'summary', label: 'Summary', render: (d) => <SummaryTab details={d} /> },
  { key: 'hardware', label: 'Hardware', render: (d) => <HardwareTab details={d} /> },
  { key: 'network', label: 'Network', render: (d) => <NetworkTab network={d.network} /> },
  { key: 'software', label: 'Software', render: (d, hostname) => <SoftwareTab hostname={hostname} software={d.software} /> },
  { key: 'services', label: 'Services', render: (d, hostname) => <ServicesTab hostname={hostname} services={d.services} /> },
  { key: 'processes', label: 'Processes', render: (d, hostname) => <ProcessesTab hostname={hostname} inventory={d.processes} /> },
  { key: 'sessions', label: 'Sessions', render: (d) => <SessionsTab sessions={d.sessions} /> },
  { key: 'patches', label: 'Patches', render: (d, hostname) => <PatchesTab hostname={hostname} patches={d.patches} /> },
  {
    key: 'terminal',
    label: 'Terminal',
    render: (d) => (
      <Suspense fallback={<Box role="status">Loading the terminal…</Box>}>
        <TerminalTab guid={d.device.guid} hostname={d.device.hostname} />
      </Suspense>
    ),
  },
  {
    key: 'desktop',
    label: 'Remote Desktop',
    render: (d) => (
      <Suspense fallback={<Box role="status">Loading the remote desktop…</Box>}>
        <RemoteDesktopTab guid={d.device.guid} hostname={d.device.hostname} siteId={d.device.site_id ?? null} protocols={desktopProtocols(d)} />
      </Suspense>
    ),
    // The agent reports the vnc capability (Linux agents with X11) or the
    // rdp one (an RDP server on the host).
    when: (d) => desktopProtocols(d).length > 0,
  },
  { key: 'files', label: 'Files', render: (_, hostname) => <FilesTab hostname={hostname} /> },
  { key: 'registry', label: 'Registry', render: (_, hostname) => <RegistryTab hostname={hostname} />, when: hasRegistry },
  { key: 'activity', label: 'Activity', render: (_, hostname) => <ActivityTab hostname={hostname} /> },
  { key: 'metadata', label: 'Metadata', render: (d, hostname) => <MetadataTab guid={d.device.guid} hostname={hostname} /> },
  { key: 'watchdogs', label: 'Watchdogs', render: (d) => <WatchdogsTab guid={d.device.guid} /> },
  { key: 'agent', label: 'Agent', render: (d) => <AgentTab device={d.device} /> },
  { key: 'agent-health', label: 'Agent Health', render: (d, hostname) => <AgentHealthTab roles={d.roles} lastStatus={d.last_status} hostname={hostname} /> },
];

/**
 * The Engine's rule (docs/api.md "Agent capabilities"): the agent reports the
 * registry capability. A Windows device whose agent is too old to report it
 * keeps the tab, which then shows the Engine's agent_too_old answer.
 */
/** The remote desktop protocols the device's agent offers (its capabilities). */
function desktopProtocols(d: DeviceDetails): DesktopProtocol[] {
  const caps = d.device.capabilities ?? [];
  return (['vnc', 'rdp'] as const).filter((p) => caps.includes(p));
}

function hasRegistry(d: DeviceDetails): boolean {
  return (
    (d.device.capabilities ?? []).includes('registry') ||
    /windows/i.test(d.device.operating_system ?? '') ||
    d.os?.family === 'windows'
  );
}

function isTab(value: string | undefined): value is TabKey {
  return TABS.some((t) => t.key === value);
}

function NotFound({ hostname }: { hostname: string }) {
  return (
    <Alert severity="warning" variant="outlined" sx={{ maxWidth: 760 }} data-testid="device-not-found">
      <AlertTitle>No device named {hostname}</AlertTitle>
      It is not enrolled, it was purged, or it belongs to a site you are not assigned to.{' '}
      <Link component={RouterLink} to="/devices">
        Back to devices
      </Link>
      .
    </Alert>
  );
}

/** One device: /devices/:hostname/:tab? (hostnames are unique per Engine). */
export default function DevicePage() {
  const { hostname = '', tab } = useParams<{ hostname: string; tab?: string }>();
  const navigate = useNavigate();
  const { user } = useSession();
  const isAdmin = user.role === 'admin';
  const [trustAction, setTrustAction] = useState<TrustAction | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const query = useQuery({
    queryKey: deviceDetailsKey(hostname),
    queryFn: () => devicesApi.details(hostname),
    refetchInterval: DEVICE_POLL_MS,
  });

  if (tab !== undefined && !isTab(tab)) return <Navigate to={devicePath(hostname)} replace />;
  const current: TabKey = tab ?? 'summary';
  const base = devicePath(hostname);

  const crumbs = (
    <Breadcrumbs aria-label="Breadcrumb" sx={{ mb: 1, fontSize: 13 }}>
      <Link component={RouterLink} to="/devices" underline="hover" color="inherit">
        Devices
      </Link>
      <Typography color="text.primary" sx={{ fontSize: 13 }}>
        {hostname}
      </Typography>
    </Breadcrumbs>
  );

  if (query.isPending) {
    return (
      <Box>
        {crumbs}
        <Box role="status" sx={{ display: 'flex', alignItems: 'center', gap: 1.5, py: 4 }}>
          <CircularProgress size={20} /> Loading {hostname}…
        </Box>
      </Box>
    );
  }
  const notFound = query.isError && query.error instanceof ApiError && query.error.status === 404;
  if (query.isError && (!query.data || notFound)) {
    return (
      <Box>
        {crumbs}
        {notFound ? <NotFound hostname={hostname} /> : <ErrorAlert error={query.error} />}
      </Box>
    );
  }

  const details = query.data;
  const d = details.device;
  const tabs = TABS.filter((t) => !t.when || t.when(details));
  const activeTab = tabs.find((t) => t.key === current) ?? tabs[0];

  return (
    <Box>
      {crumbs}
      <Box sx={{ display: 'flex', alignItems: 'flex-start', gap: 2, mb: 1.5, flexWrap: 'wrap' }}>
        <Box sx={{ flex: 1, minWidth: 280 }}>
          <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.25, flexWrap: 'wrap' }}>
            <Typography variant="h5" component="h1">
              {d.hostname}
            </Typography>
            <StatusChip status={d.connectivity_status} />
            <TrustBadge state={d.trust_state} />
          </Box>
          <Box
            sx={{ display: 'flex', gap: 2.5, flexWrap: 'wrap', mt: 0.75, typography: 'body2', color: 'text.secondary' }}
            data-testid="device-facts"
          >
            <span>
              Site:{' '}
              <Link component={RouterLink} to={`/devices?site=${d.site_id}`}>
                {d.site_name || `Site ${d.site_id}`}
              </Link>
            </span>
            <span>OS: {d.operating_system || details.os?.name || '—'}</span>
            <span>
              Last seen: <RelativeTime value={d.last_seen} />
            </span>
            <span>Agent: {d.agent_version || '—'}</span>
            {d.cloned_from && (
              <Tooltip title="This machine ran a copy of another device's agent (a cloned image or VM) and enrolled as a device of its own. The audit trail records device_clone_detected and device_clone_enrolled.">
                <span data-testid="device-cloned-from">
                  Cloned from: <code>{d.cloned_from}</code>
                </span>
              </Tooltip>
            )}
          </Box>
          <Box sx={{ mt: 1 }}>
            <DescriptionEditor key={d.description} hostname={d.hostname} description={d.description ?? ''} />
          </Box>
        </Box>
        <Box sx={{ display: 'flex', flexDirection: 'column', alignItems: 'flex-end', gap: 1 }}>
          <Tooltip title="Refresh">
            <span>
              <IconButton aria-label="Refresh device" onClick={() => void query.refetch()} disabled={query.isFetching}>
                <RefreshIcon />
              </IconButton>
            </span>
          </Tooltip>
          {d.trust_state === 'active' && <RedeployButton guid={d.guid} hostname={d.hostname} />}
          {isAdmin && <TrustButtons state={d.trust_state} onPick={setTrustAction} />}
        </Box>
      </Box>
      {notice && (
        <Alert severity="success" variant="outlined" onClose={() => setNotice(null)} sx={{ mb: 1.5 }} data-testid="device-notice">
          {notice}
        </Alert>
      )}
      {d.trust_state === 'quarantined' && (
        <Alert severity="warning" sx={{ mb: 1.5 }}>
          This device is quarantined: jobs, tunnel, remote desktop, shell and remote operations are blocked.
        </Alert>
      )}
      {d.trust_state === 'revoked' && (
        <Alert severity="error" sx={{ mb: 1.5 }}>
          This device is revoked: its tokens no longer work. It must enroll again and be approved.
        </Alert>
      )}
      {/* A failed background refresh keeps the last data on screen and says so. */}
      {query.isError && <ErrorAlert error={query.error} />}
      <Tabs
        value={activeTab.key}
        onChange={(_, next: TabKey) => navigate(next === 'summary' ? base : `${base}/${next}`)}
        aria-label="Device"
        variant="scrollable"
        scrollButtons="auto"
        sx={{ mb: 2, minHeight: 40, borderBottom: 1, borderColor: 'divider', '& .MuiTab-root': { minHeight: 40, py: 1 } }}
      >
        {tabs.map((t) => (
          <Tab key={t.key} value={t.key} label={t.label} id={`device-tab-${t.key}`} aria-controls="device-tabpanel" />
        ))}
      </Tabs>
      <Box role="tabpanel" id="device-tabpanel" aria-labelledby={`device-tab-${activeTab.key}`}>
        {activeTab.render(details, d.hostname)}
      </Box>
      {trustAction && (
        <TrustDialog
          device={d}
          action={trustAction}
          onClose={() => setTrustAction(null)}
          onDone={(result, message) => {
            setTrustAction(null);
            if (result.trust_state === 'purged' || trustAction === 'purge') {
              navigate('/devices', { state: { notice: message } });
            } else {
              setNotice(message);
            }
          }}
        />
      )}
    </Box>
  );
}
