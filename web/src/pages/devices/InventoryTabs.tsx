// The inventory tabs of the device page (read-only but for the Refresh of
// software and patches). Collections follow agent/proto/inventory.go; null
// means not collected yet, [] means none.
import type { ColDef } from 'ag-grid-community';
import { useQuery } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Chip from '@mui/material/Chip';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import type {
  DeviceDetails,
  DeviceMetrics,
  DeviceSession,
  Disk,
  NetIface,
  PatchRow,
  SoftwareItem,
} from '../../api/types';
import { devices as devicesApi, software as softwareApi } from '../../api/endpoints';
import { formatBytes, formatCompactDateTime, formatDateTime, formatDuration } from '../../components/format';
import { RelativeTime, StatusChip, TrustBadge } from './chips';
import { DevicePatchLane, devicePatchesKey } from './DevicePatches';
import { InventoryGrid } from './InventoryGrid';
import { InventoryRefreshButton } from './InventoryRefresh';
import { SoftwareUninstall, UninstallCell } from './SoftwareUninstall';
import { Facts, mono, NoneReported, NotCollected, OperationBar, Section } from './parts';

const yesNo = (v: boolean | undefined) => (v ? 'Yes' : 'No');
const dateCell = { valueFormatter: (p: { value: unknown }) => formatCompactDateTime(p.value as string | null), filter: false };

function MetricsFacts({ metrics }: { metrics: DeviceMetrics }) {
  const users = metrics.logged_in_users ?? [];
  const pct =
    metrics.memory_total_bytes > 0 ? ` (${Math.round((metrics.memory_used_bytes / metrics.memory_total_bytes) * 100)} %)` : '';
  return (
    <Facts
      items={[
        ['CPU', `${metrics.cpu_percent.toFixed(1)} %`],
        ['Memory', `${formatBytes(metrics.memory_used_bytes)} of ${formatBytes(metrics.memory_total_bytes)}${pct}`],
        ['Uptime', formatDuration(metrics.uptime_seconds)],
        ['Signed-in users', users.length ? users.join(', ') : 'Nobody'],
      ]}
    />
  );
}

export function SummaryTab({ details }: { details: DeviceDetails }) {
  const d = details.device;
  const metrics = details.metrics ?? d.metrics ?? null;
  const metadata = Object.entries(d.metadata_fields ?? {})
    .filter(([, v]) => v !== '')
    .sort(([a], [b]) => Number(a) - Number(b));
  return (
    <Box sx={{ display: 'grid', gridTemplateColumns: { xs: '1fr', lg: '1fr 1fr' }, columnGap: 2 }}>
      <Section title="Device">
        <Facts
          items={[
            ['Hostname', d.hostname],
            ['GUID', <span style={mono}>{d.guid}</span>],
            ['Agent ID', <span style={mono}>{d.agent_id}</span>],
            ['Site', d.site_name],
            ['Status', <StatusChip status={d.connectivity_status} />],
            ['Agent socket', d.agent_socket ? 'Connected' : 'Not connected'],
            ['Last seen', <RelativeTime value={d.last_seen} />],
            ['Agent version', d.agent_version],
            ['Trust state', <TrustBadge state={d.trust_state} />],
          ]}
        />
      </Section>
      <Section title="Live metrics">
        {metrics ? (
          <MetricsFacts metrics={metrics} />
        ) : (
          <NoneReported>No heartbeat metrics yet: they arrive with the agent’s next heartbeat.</NoneReported>
        )}
      </Section>
      <Section title="Operating system">
        {details.os ? (
          <Facts
            items={[
              ['Name', details.os.name],
              ['Version', details.os.version],
              ['Family', details.os.family],
              ['Kernel', details.os.kernel_version],
              ['Architecture', details.os.arch],
              ['Machine ID', details.os.machine_id ? <span style={mono}>{details.os.machine_id}</span> : undefined],
            ]}
          />
        ) : (
          <NotCollected what="Operating system details" />
        )}
      </Section>
      <Section title="Uptime">
        {details.uptime ? (
          <Facts
            items={[
              ['Booted', formatDateTime(details.uptime.boot_time)],
              ['Uptime at inventory', formatDuration(details.uptime.uptime_seconds)],
              ['Boot ID', details.uptime.boot_id ? <span style={mono}>{details.uptime.boot_id}</span> : undefined],
            ]}
          />
        ) : (
          <NotCollected what="Uptime" />
        )}
      </Section>
      <Section title="Metadata fields">
        {metadata.length ? (
          <Facts items={metadata.map(([n, v]) => [`Field ${n}`, v])} />
        ) : (
          <NoneReported>No metadata values are set on this device.</NoneReported>
        )}
      </Section>
    </Box>
  );
}

function DisksTable({ disks }: { disks: Disk[] }) {
  if (disks.length === 0) return <NoneReported>No disks reported.</NoneReported>;
  return (
    <Table size="small" aria-label="Disks">
      <TableHead>
        <TableRow>
          <TableCell>Name</TableCell>
          <TableCell>Model</TableCell>
          <TableCell align="right">Size</TableCell>
          <TableCell>Mounted at</TableCell>
          <TableCell>File system</TableCell>
          <TableCell align="right">Used</TableCell>
          <TableCell align="right">Free</TableCell>
          <TableCell>Kind</TableCell>
        </TableRow>
      </TableHead>
      <TableBody>
        {disks.map((d, i) => (
          <TableRow key={`${d.name}-${d.mountpoint ?? ''}-${i}`}>
            <TableCell sx={mono}>{d.name}</TableCell>
            <TableCell>{d.model || '—'}</TableCell>
            <TableCell align="right">{formatBytes(d.size_bytes)}</TableCell>
            <TableCell sx={mono}>{d.mountpoint || '—'}</TableCell>
            <TableCell>{d.fs_type || '—'}</TableCell>
            <TableCell align="right">{d.mountpoint ? formatBytes(d.used_bytes ?? 0) : '—'}</TableCell>
            <TableCell align="right">{d.mountpoint ? formatBytes(d.free_bytes ?? 0) : '—'}</TableCell>
            <TableCell>{d.cdrom ? 'CD-ROM' : d.removable ? 'Removable' : 'Fixed'}</TableCell>
          </TableRow>
        ))}
      </TableBody>
    </Table>
  );
}

export function HardwareTab({ details }: { details: DeviceDetails }) {
  const hw = details.hardware;
  if (!hw) return <NotCollected what="Hardware inventory" />;
  const join = (...parts: (string | undefined)[]) => parts.filter(Boolean).join(' ') || undefined;
  return (
    <Box>
      <Section title="System">
        <Facts
          items={[
            ['Processor', hw.cpu_model],
            ['Cores / threads', `${hw.cpu_cores || '?'} cores, ${hw.cpu_threads || '?'} threads`],
            ['Memory', formatBytes(hw.memory_total_bytes)],
            ['System', join(hw.system_vendor, hw.system_model)],
            ['Board', join(hw.board_vendor, hw.board_name)],
            ['Serial number', hw.serial_number ? <span style={mono}>{hw.serial_number}</span> : undefined],
            ['BIOS', join(hw.bios_vendor, hw.bios_version, hw.bios_date ? `(${hw.bios_date})` : undefined)],
            ['Virtualization', hw.virtualization || 'None detected'],
          ]}
        />
      </Section>
      <Section title="Disks">
        <DisksTable disks={hw.disks ?? []} />
      </Section>
    </Box>
  );
}

export function NetworkTab({ network }: { network: NetIface[] | null | undefined }) {
  if (!network) return <NotCollected what="Network interfaces" />;
  if (network.length === 0) return <NoneReported>The agent reported no network interfaces.</NoneReported>;
  return (
    <Table size="small" aria-label="Network interfaces">
      <TableHead>
        <TableRow>
          <TableCell>Interface</TableCell>
          <TableCell>State</TableCell>
          <TableCell>Addresses</TableCell>
          <TableCell>MAC</TableCell>
          <TableCell align="right">MTU</TableCell>
        </TableRow>
      </TableHead>
      <TableBody>
        {network.map((n) => (
          <TableRow key={n.name}>
            <TableCell sx={{ fontWeight: 600 }}>
              {n.name}
              {n.loopback && <Chip size="small" label="loopback" variant="outlined" sx={{ ml: 1, height: 18, fontSize: 11 }} />}
            </TableCell>
            <TableCell>
              <Chip size="small" label={n.up ? 'Up' : 'Down'} color={n.up ? 'success' : 'default'} variant="outlined" />
            </TableCell>
            <TableCell sx={mono}>
              {(n.addresses ?? []).length ? (n.addresses ?? []).map((a) => <div key={a}>{a}</div>) : '—'}
            </TableCell>
            <TableCell sx={mono}>{n.mac || '—'}</TableCell>
            <TableCell align="right">{n.mtu}</TableCell>
          </TableRow>
        ))}
      </TableBody>
    </Table>
  );
}

export function SessionsTab({ sessions }: { sessions: DeviceSession[] | null | undefined }) {
  if (!sessions) return <NotCollected what="Sessions" />;
  if (sessions.length === 0) return <NoneReported>Nobody is signed in to this device.</NoneReported>;
  return (
    <Table size="small" aria-label="Sessions">
      <TableHead>
        <TableRow>
          <TableCell>User</TableCell>
          <TableCell>Type</TableCell>
          <TableCell>Terminal</TableCell>
          <TableCell>From</TableCell>
          <TableCell>Signed in</TableCell>
          <TableCell>Active</TableCell>
          <TableCell>Helper</TableCell>
        </TableRow>
      </TableHead>
      <TableBody>
        {sessions.map((s, i) => (
          <TableRow key={s.session_id || `${s.username}-${s.tty ?? ''}-${i}`}>
            <TableCell sx={{ fontWeight: 600 }}>{s.username}</TableCell>
            <TableCell>{s.type || '—'}</TableCell>
            <TableCell sx={mono}>{s.tty || '—'}</TableCell>
            <TableCell sx={mono}>{s.remote || '—'}</TableCell>
            <TableCell>{s.login_at ? <RelativeTime value={s.login_at} /> : '—'}</TableCell>
            <TableCell>{yesNo(s.active)}</TableCell>
            <TableCell>
              {s.helper_ready ? (
                <Chip size="small" label="Ready" color="success" variant="outlined" />
              ) : (
                <Chip size="small" label="Not running" variant="outlined" />
              )}
            </TableCell>
          </TableRow>
        ))}
      </TableBody>
    </Table>
  );
}

/** The row's icon as the agent found it or an icon override set it (docs/api.md "Software icons"). */
function SoftwareIconCell({ data }: { data?: SoftwareItem }) {
  if (!data?.icon_hash) return null;
  return (
    <Box
      component="img"
      src={softwareApi.iconUrl(data.icon_hash)}
      alt=""
      data-testid="software-icon"
      sx={{ width: 20, height: 20, display: 'block', mt: '8px' }}
    />
  );
}

const softwareColumns: ColDef<SoftwareItem>[] = [
  { colId: 'icon', headerName: '', width: 52, sortable: false, filter: false, cellRenderer: SoftwareIconCell },
  { field: 'name', headerName: 'Name', flex: 2, minWidth: 180, sort: 'asc' },
  { field: 'version', headerName: 'Version', flex: 1, minWidth: 120, cellClass: 'mono' },
  { field: 'publisher', headerName: 'Publisher', flex: 1.2, minWidth: 120 },
  { field: 'arch', headerName: 'Arch', width: 90 },
  { field: 'source', headerName: 'Source', width: 95 },
  { field: 'installed_at', headerName: 'Installed', width: 150, ...dateCell },
  {
    field: 'size_bytes',
    headerName: 'Size',
    width: 100,
    type: 'numericColumn',
    filter: false,
    valueFormatter: (p) => (p.value ? formatBytes(p.value) : '—'),
  },
  { colId: 'actions', headerName: '', width: 140, sortable: false, filter: false, cellRenderer: UninstallCell },
];

export function SoftwareTab({ hostname, software }: { hostname: string; software: SoftwareItem[] | null | undefined }) {
  return (
    <Box>
      <OperationBar actions={<InventoryRefreshButton hostname={hostname} kind="software" />} />
      {software ? (
        <SoftwareUninstall hostname={hostname}>
          <InventoryGrid<SoftwareItem>
            noun="packages"
            rows={software}
            columnDefs={softwareColumns}
            getRowId={(p) => `${p.data.source}:${p.data.name}:${p.data.arch ?? ''}:${p.data.version}`}
            emptyText="The agent reported no installed software."
          />
        </SoftwareUninstall>
      ) : (
        <NotCollected what="Software inventory" />
      )}
    </Box>
  );
}

const patchColumns: ColDef<PatchRow>[] = [
  {
    colId: 'identity',
    headerName: 'KB / package',
    width: 170,
    cellClass: 'mono',
    valueGetter: (p) => p.data?.kb || p.data?.package || '—',
  },
  { field: 'title', headerName: 'Title', flex: 2, minWidth: 220 },
  {
    field: 'state',
    headerName: 'State',
    width: 110,
    sort: 'desc',
    cellRenderer: (p: { value: string }) =>
      p.value ? (
        <Chip size="small" label={p.value} color={p.value === 'pending' ? 'warning' : 'success'} variant="outlined" />
      ) : null,
  },
  { field: 'source', headerName: 'Source', width: 150 },
  { field: 'installed_version', headerName: 'Installed', width: 140, cellClass: 'mono' },
  { field: 'candidate_version', headerName: 'Candidate', width: 140, cellClass: 'mono' },
  { field: 'severity', headerName: 'Severity', width: 105 },
  { field: 'installed_at', headerName: 'Installed at', width: 150, ...dateCell },
];

export function PatchesTab({ hostname, patches: fromDetails }: { hostname: string; patches: PatchRow[] | null | undefined }) {
  // The lane's view is fresher (re-read while an install runs); the
  // details' rows show until it arrives.
  const lane = useQuery({ queryKey: devicePatchesKey(hostname), queryFn: () => devicesApi.patches(hostname), retry: false });
  const patches = lane.data?.patches ?? fromDetails;
  const pending = patches ? patches.filter((p) => p.state === 'pending').length : 0;
  return (
    <Box>
      <OperationBar actions={<InventoryRefreshButton hostname={hostname} kind="patches" />}>
        {patches && (
          <span data-testid="patch-summary">
            {pending} pending, {patches.length - pending} installed.
          </span>
        )}
      </OperationBar>
      {patches ? (
        <InventoryGrid<PatchRow>
          noun="patches"
          rows={patches}
          columnDefs={patchColumns}
          getRowId={(p) => p.data.patch_key}
          emptyText="The agent reported no patches."
        />
      ) : (
        <NotCollected what="Patch inventory" />
      )}
      <DevicePatchLane hostname={hostname} />
    </Box>
  );
}
