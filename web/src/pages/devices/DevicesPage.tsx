import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import { Link as RouterLink, useLocation, useSearchParams } from 'react-router';
import { AgGridReact, type CustomCellRendererProps } from 'ag-grid-react';
import type { ColDef, GetRowIdParams, RowSelectionOptions, SelectionChangedEvent } from 'ag-grid-community';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import IconButton from '@mui/material/IconButton';
import InputAdornment from '@mui/material/InputAdornment';
import Link from '@mui/material/Link';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import ComputerIcon from '@mui/icons-material/Computer';
import RefreshIcon from '@mui/icons-material/Refresh';
import PlayArrowIcon from '@mui/icons-material/PlayArrow';
import SearchIcon from '@mui/icons-material/Search';
import SystemUpdateAltIcon from '@mui/icons-material/SystemUpdateAlt';
import { agentUpdates, devices as devicesApi, sites as sitesApi } from '../../api/endpoints';
import type { Device } from '../../api/types';
import { PageHeader } from '../../components/ComingSoon';
import { ErrorAlert } from '../../components/ErrorAlert';
import { gridTheme } from '../../components/grid';
import { SITES_QUERY } from '../SiteDialogs';
import { describeError } from '../../components/errors';
import { useNotify } from '../../toasts/notify';
import { QuickRunDialog } from '../automation/QuickRunDialog';
import { ConfirmDialog } from './ConfirmDialog';
import { RelativeTime, StatusChip, TrustBadge } from './chips';
import { DEVICE_POLL_MS, DEVICES_QUERY, devicePath } from './queries';
import { filterDevices, readFilters, STATUS_LABEL, STATUS_TOKENS, writeFilters, type DeviceFilters, type StatusToken } from './status';

const SEARCH_DEBOUNCE_MS = 300;

const ROW_SELECTION: RowSelectionOptions = { mode: 'multiRow', checkboxes: true, headerCheckbox: true, enableClickSelection: false };

interface GridContext {
  now: number;
}

function HostnameCell({ data }: CustomCellRendererProps<Device>) {
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', gap: 0.75, height: '100%', minWidth: 0 }}>
      <Link component={RouterLink} to={devicePath(data.hostname)} sx={{ fontWeight: 600 }} noWrap>
        {data.hostname}
      </Link>
      <TrustBadge state={data.trust_state} hideActive />
    </Box>
  );
}

function StatusCell({ data }: CustomCellRendererProps<Device>) {
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', height: '100%' }}>
      <StatusChip status={data.connectivity_status} />
    </Box>
  );
}

function LastSeenCell({ data, context }: CustomCellRendererProps<Device, unknown, GridContext>) {
  if (!data) return null;
  return <RelativeTime value={data.last_seen} now={context.now} />;
}

/** Ticks every `ms` so relative times stay true without a refetch. */
function useNow(ms: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = window.setInterval(() => setNow(Date.now()), ms);
    return () => window.clearInterval(t);
  }, [ms]);
  return now;
}

function EmptyState() {
  return (
    <Paper variant="outlined" sx={{ p: 3, maxWidth: 760 }} data-testid="devices-empty">
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.5, mb: 1.5 }}>
        <ComputerIcon color="action" />
        <Typography variant="h6" component="h2">
          No devices yet
        </Typography>
      </Box>
      <Typography variant="body2" sx={{ mb: 1 }}>
        A device appears here once its agent has enrolled in a site and been approved. To enroll a Linux agent:
      </Typography>
      <Box component="ol" sx={{ m: 0, pl: 2.5, '& li': { typography: 'body2', mb: 0.5 } }}>
        <li>
          Open{' '}
          <Link component={RouterLink} to="/sites">
            Sites
          </Link>{' '}
          and choose <b>Enroll agents</b> on the site the device belongs to.
        </li>
        <li>Create an enrollment code there and run the install commands it shows on the device, as root.</li>
        <li>Approve the device’s request in the same dialog (or turn on the site’s temporary auto-approval first).</li>
      </Box>
    </Paper>
  );
}

export default function DevicesPage() {
  const [params, setParams] = useSearchParams();
  const location = useLocation();
  const notice = (location.state as { notice?: string } | null)?.notice ?? null;
  const [noticeOpen, setNoticeOpen] = useState(true);
  const filters = readFilters(params);
  const { siteId, status, statusRaw, q } = filters;
  const gridRef = useRef<AgGridReact<Device>>(null);
  const now = useNow(DEVICE_POLL_MS);
  const notify = useNotify();
  const [selected, setSelected] = useState<Device[]>([]);
  const [bulk, setBulk] = useState<'run' | 'update' | null>(null);
  const onSelectionChanged = useCallback((e: SelectionChangedEvent<Device>) => setSelected(e.api.getSelectedRows()), []);
  const updateAgents = useMutation({
    mutationFn: (guids: string[]) => agentUpdates.updateMany(guids),
    onSuccess: (r) => {
      const n = r.operations?.length ?? 0;
      notify({
        title: n === 1 ? 'Updating 1 agent' : `Updating ${n} agents`,
        message: 'Each device’s Agent tab shows its progress.',
        icon: 'device',
      });
    },
    onError: (error) => notify({ title: 'Could not update the agents', message: describeError(error), variant: 'error' }),
  });

  // A drilldown may say status=CONNECTED or an unknown word: keep the address canonical.
  useEffect(() => {
    if (statusRaw !== null && statusRaw !== status) {
      setParams((p) => writeFilters(readFilters(p), p), { replace: true });
    }
  }, [statusRaw, status, setParams]);

  const update = useCallback(
    (change: Partial<DeviceFilters>, replace = false) =>
      setParams((p) => writeFilters({ ...readFilters(p), ...change }, p), { replace, state: null }),
    [setParams],
  );

  // The box leads and the address follows. Address updates run as transitions
  // and can land after later keystrokes, so only a q the box did not write
  // (Clear filters, back/forward) is copied into it.
  const [search, setSearch] = useState(q);
  const written = useRef(q);
  useEffect(() => {
    if (q !== written.current) {
      written.current = q;
      setSearch(q);
    }
  }, [q]);
  const [debounced, setDebounced] = useState(q.trim());
  useEffect(() => {
    const t = window.setTimeout(() => setDebounced(search.trim()), SEARCH_DEBOUNCE_MS);
    return () => window.clearTimeout(t);
  }, [search]);

  const sitesQuery = useQuery({ queryKey: SITES_QUERY, queryFn: sitesApi.list });
  const query = useQuery({
    queryKey: debounced ? [...DEVICES_QUERY, 'search', debounced] : [...DEVICES_QUERY, 'list', { siteId, status }],
    queryFn: () => (debounced ? devicesApi.search(debounced) : devicesApi.list({ siteId, status })),
    refetchInterval: DEVICE_POLL_MS,
  });
  const rows = useMemo(() => filterDevices(query.data ?? [], { siteId, status }), [query.data, siteId, status]);

  useEffect(() => {
    gridRef.current?.api?.refreshCells({ columns: ['last_seen'], force: true });
  }, [now]);

  const columnDefs = useMemo<ColDef<Device>[]>(
    () => [
      { field: 'hostname', headerName: 'Hostname', flex: 1.4, minWidth: 170, sort: 'asc', cellRenderer: HostnameCell },
      { field: 'site_name', headerName: 'Site', flex: 1, minWidth: 120 },
      { field: 'connectivity_status', headerName: 'Status', width: 140, cellRenderer: StatusCell },
      { field: 'operating_system', headerName: 'OS', flex: 1.3, minWidth: 150 },
      {
        field: 'last_seen',
        headerName: 'Last seen',
        width: 130,
        cellRenderer: LastSeenCell,
        filter: false,
        // Never-seen devices sort as the oldest.
        comparator: (a: string | null, b: string | null) => (a ? Date.parse(a) : 0) - (b ? Date.parse(b) : 0),
      },
      { field: 'agent_version', headerName: 'Agent', width: 110, cellClass: 'mono' },
      { field: 'description', headerName: 'Description', flex: 1.6, minWidth: 160 },
    ],
    [],
  );
  const context = useMemo<GridContext>(() => ({ now }), [now]);
  const getRowId = useCallback((p: GetRowIdParams<Device>) => p.data.guid, []);

  const sites = sitesQuery.data ?? [];
  const filtered = siteId !== null || status !== null || q.trim() !== '';
  const empty = query.isSuccess && !filtered && (query.data?.length ?? 0) === 0;
  const unknownSite = siteId !== null && sitesQuery.isSuccess && !sites.some((s) => s.site_id === siteId);

  return (
    <Box>
      <PageHeader
        title="Devices"
        subtitle="Connected: recent heartbeat and the agent socket up. Disconnected: heartbeat without the socket. Offline: no recent heartbeat."
        actions={
          <Tooltip title="Refresh">
            <span>
              <IconButton aria-label="Refresh devices" onClick={() => void query.refetch()} disabled={query.isFetching}>
                <RefreshIcon />
              </IconButton>
            </span>
          </Tooltip>
        }
      />
      {notice && noticeOpen && (
        <Alert severity="success" variant="outlined" onClose={() => setNoticeOpen(false)} sx={{ mb: 1.5 }} data-testid="devices-notice">
          {notice}
        </Alert>
      )}
      <Box sx={{ display: 'flex', gap: 1.5, mb: 2, flexWrap: 'wrap', alignItems: 'center' }} role="search" aria-label="Device filters">
        <TextField
          type="search"
          label="Search hostname"
          value={search}
          onChange={(e) => {
            written.current = e.target.value;
            setSearch(e.target.value);
            update({ q: e.target.value }, true);
          }}
          sx={{ minWidth: 240 }}
          slotProps={{
            input: {
              startAdornment: (
                <InputAdornment position="start">
                  <SearchIcon fontSize="small" />
                </InputAdornment>
              ),
            },
            htmlInput: { spellCheck: false, autoCapitalize: 'none' },
          }}
        />
        <TextField
          select
          label="Site"
          value={siteId ?? ''}
          onChange={(e) => update({ siteId: e.target.value === '' ? null : Number(e.target.value) })}
          sx={{ minWidth: 190 }}
        >
          <MenuItem value="">All sites</MenuItem>
          {sites.map((s) => (
            <MenuItem key={s.site_id} value={s.site_id}>
              {s.name}
            </MenuItem>
          ))}
          {siteId !== null && !sites.some((s) => s.site_id === siteId) && (
            <MenuItem value={siteId}>Site {siteId}</MenuItem>
          )}
        </TextField>
        <TextField
          select
          label="Status"
          value={status ?? ''}
          onChange={(e) => update({ status: (e.target.value || null) as StatusToken | null })}
          sx={{ minWidth: 170 }}
        >
          <MenuItem value="">All statuses</MenuItem>
          {STATUS_TOKENS.map((t) => (
            <MenuItem key={t} value={t}>
              {STATUS_LABEL[t]}
            </MenuItem>
          ))}
        </TextField>
        {filtered && (
          <Button onClick={() => update({ siteId: null, status: null, q: '' })}>Clear filters</Button>
        )}
        <Box sx={{ flex: 1 }} />
        {selected.length > 0 && (
          <Box sx={{ display: 'flex', gap: 1, alignItems: 'center' }} role="group" aria-label="Selected devices">
            <Typography variant="body2" data-testid="selected-count">
              {selected.length} selected
            </Typography>
            <Button variant="outlined" size="small" startIcon={<PlayArrowIcon />} onClick={() => setBulk('run')}>
              Run script
            </Button>
            <Button
              variant="outlined"
              size="small"
              startIcon={<SystemUpdateAltIcon />}
              onClick={() => setBulk('update')}
              disabled={updateAgents.isPending}
            >
              Update agents
            </Button>
          </Box>
        )}
        {query.isSuccess && (
          <Typography variant="body2" color="text.secondary" data-testid="device-count">
            {rows.length === 1 ? '1 device' : `${rows.length} devices`}
          </Typography>
        )}
      </Box>
      {unknownSite && (
        <Alert severity="warning" variant="outlined" sx={{ mb: 1.5 }}>
          Site {siteId} is not one of your sites, or it no longer exists.
        </Alert>
      )}
      {sitesQuery.isError && <ErrorAlert error={sitesQuery.error} />}
      {query.isError && <ErrorAlert error={query.error} />}
      {empty ? (
        <EmptyState />
      ) : (
        <Box sx={{ '& .mono': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 12.5 } }}>
          <AgGridReact<Device>
            ref={gridRef}
            theme={gridTheme}
            rowData={query.isError ? [] : rows}
            loading={query.isPending}
            columnDefs={columnDefs}
            defaultColDef={{ sortable: true, resizable: true, filter: 'agTextColumnFilter' }}
            context={context}
            getRowId={getRowId}
            rowSelection={ROW_SELECTION}
            onSelectionChanged={onSelectionChanged}
            domLayout="autoHeight"
            overlayNoRowsTemplate={query.isError ? 'The device list could not be loaded.' : 'No devices match these filters.'}
            suppressCellFocus
            suppressColumnVirtualisation
            animateRows={false}
            pagination
            paginationPageSize={100}
            paginationPageSizeSelector={[50, 100, 250, 500]}
          />
        </Box>
      )}
      {bulk === 'run' && <QuickRunDialog devices={selected} onClose={() => setBulk(null)} />}
      {bulk === 'update' && (
        <ConfirmDialog
          title={selected.length === 1 ? `Update the agent on ${selected[0].hostname}?` : `Update ${selected.length} agents?`}
          confirm="Update agents"
          onConfirm={() => updateAgents.mutate(selected.map((d) => d.guid))}
          onClose={() => setBulk(null)}
        >
          Each agent downloads the Engine’s current build, verifies it, replaces itself and restarts; one that already runs it
          is reinstalled as a repair. The updates run as an agent-maintenance job on each site’s worker.
        </ConfirmDialog>
      )}
    </Box>
  );
}

