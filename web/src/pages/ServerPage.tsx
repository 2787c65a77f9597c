import { useMemo, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { AgGridReact, type CustomCellRendererProps } from 'ag-grid-react';
import type { ColDef } from 'ag-grid-community';
import Box from '@mui/material/Box';
import Chip from '@mui/material/Chip';
import FormControl from '@mui/material/FormControl';
import IconButton from '@mui/material/IconButton';
import InputLabel from '@mui/material/InputLabel';
import MenuItem from '@mui/material/MenuItem';
import Select from '@mui/material/Select';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import RefreshIcon from '@mui/icons-material/Refresh';
import { server } from '../api/endpoints';
import { useSession } from '../auth/session';
import type { WorkerState } from '../api/types';
import { PageHeader } from '../components/ComingSoon';
import { ErrorAlert } from '../components/ErrorAlert';
import { formatDateTime } from '../components/format';
import { gridTheme } from '../components/grid';
import { MasterCipherSection } from './server/MasterCipherSection';
import { BackupsSection } from './server/BackupsSection';
import { BackupScheduleSection } from './server/BackupScheduleSection';
import { LogsSection } from './server/LogsSection';
import { ServicesSection } from './server/ServicesSection';
import { ClusterSection } from './server/ClusterSection';

export interface WorkerRow extends WorkerState {
  kind: 'engine' | 'site';
  label: string;
}

export function workerRows(data: { engine?: WorkerState | null; sites?: WorkerState[] | null } | undefined): WorkerRow[] {
  if (!data) return [];
  const rows: WorkerRow[] = [];
  if (data.engine) rows.push({ ...data.engine, kind: 'engine', label: 'Engine' });
  for (const s of data.sites ?? []) rows.push({ ...s, kind: 'site', label: s.name ?? s.site_worker_slug ?? s.task_queue });
  return rows;
}

const STATE_COLOR: Record<string, 'success' | 'warning' | 'error' | 'default'> = {
  running: 'success',
  starting: 'warning',
  failed: 'error',
  stopped: 'default',
};

function StateCell({ value, data }: CustomCellRendererProps<WorkerRow, string>) {
  if (!value) return null;
  const chip = (
    <Chip size="small" label={value} color={STATE_COLOR[value] ?? 'default'} variant={value === 'running' ? 'filled' : 'outlined'} />
  );
  return data?.error ? (
    <Tooltip title={data.error}>
      <span>{chip}</span>
    </Tooltip>
  ) : (
    chip
  );
}

function PollersCell({ data }: CustomCellRendererProps<WorkerRow>) {
  const pollers = data?.pollers ?? [];
  if (pollers.length === 0) return <span>0</span>;
  return (
    <Tooltip
      title={
        <Box component="ul" sx={{ m: 0, pl: 2 }}>
          {pollers.map((p) => (
            <li key={p.identity}>
              {p.identity}
              {p.last_access_time ? ` (last poll ${formatDateTime(p.last_access_time)})` : ''}
            </li>
          ))}
        </Box>
      }
    >
      <span style={{ textDecoration: 'underline dotted', cursor: 'help' }}>{pollers.length}</span>
    </Tooltip>
  );
}

const num = (v: number | null | undefined) => (typeof v === 'number' ? String(v) : '—');

/** A site's assigned work in a few words ("—" for the Engine's queue). */
export function workSummary(w: WorkerRow['assigned_work']): string {
  if (!w) return '—';
  return `ops ${w.operations_running} running, ${w.operations_queued} queued · jobs ${w.jobs_running} running, ${w.jobs_queued} queued`;
}

function NewestRunCell({ data }: CustomCellRendererProps<WorkerRow>) {
  const runs = data?.recent_workflow_runs ?? [];
  if (runs.length === 0) return <span>—</span>;
  const newest = runs[0];
  const label = `${newest.type} (${newest.status})`;
  return (
    <Tooltip
      title={
        <Box component="ul" sx={{ m: 0, pl: 2 }}>
          {runs.map((r) => (
            <li key={r.workflow_id}>
              {r.type} {r.status} {formatDateTime(r.start_time)}
            </li>
          ))}
        </Box>
      }
    >
      {newest.temporal_ui_url ? (
        <a href={newest.temporal_ui_url} target="_blank" rel="noreferrer noopener">
          {label}
        </a>
      ) : (
        <span>{label}</span>
      )}
    </Tooltip>
  );
}

function TemporalLinkCell({ data }: CustomCellRendererProps<WorkerRow>) {
  if (!data?.temporal_ui_url) return <span>—</span>;
  return (
    <a href={data.temporal_ui_url} target="_blank" rel="noreferrer noopener">
      Open
    </a>
  );
}

const HISTORY_OPTIONS = [
  { seconds: 900, label: 'Last 15 minutes' },
  { seconds: 3600, label: 'Last hour' },
  { seconds: 21600, label: 'Last 6 hours' },
  { seconds: 86400, label: 'Last 24 hours' },
];

export default function ServerPage() {
  const { user } = useSession();
  const [history, setHistory] = useState(3600);
  const query = useQuery({
    queryKey: ['server-workers', history],
    queryFn: () => server.workers(history),
    refetchInterval: 15_000,
  });
  const rows = useMemo(() => workerRows(query.data), [query.data]);

  const columnDefs = useMemo<ColDef<WorkerRow>[]>(
    () => [
      {
        field: 'label',
        headerName: 'Worker',
        flex: 1.5,
        minWidth: 150,
        cellStyle: (p) => (p.data?.kind === 'engine' ? { fontWeight: 600 } : null),
      },
      { field: 'task_queue', headerName: 'Task queue', flex: 1.5, minWidth: 150, cellClass: 'mono' },
      { field: 'state', headerName: 'State', width: 115, cellRenderer: StateCell },
      {
        colId: 'local',
        headerName: 'Local',
        headerTooltip: 'Whether this Engine process runs the worker',
        width: 90,
        cellDataType: 'text',
        valueGetter: (p) => (p.data?.local === true ? 'yes' : p.data?.local === false ? 'no' : '—'),
      },
      {
        colId: 'pollers',
        headerName: 'Pollers',
        width: 95,
        cellRenderer: PollersCell,
        valueGetter: (p) => p.data?.pollers?.length ?? 0,
      },
      {
        field: 'total_devices',
        headerName: 'Devices',
        width: 100,
        type: 'numericColumn',
        valueFormatter: (p) => num(p.value),
      },
      {
        field: 'online_devices',
        headerName: 'Online',
        headerTooltip: 'Devices heard from within the online window',
        width: 95,
        type: 'numericColumn',
        valueFormatter: (p) => num(p.value),
      },
      {
        field: 'connected_agents',
        headerName: 'Connected',
        headerTooltip: 'Agents whose management socket a site worker holds (any replica)',
        width: 115,
        type: 'numericColumn',
        valueFormatter: (p) => num(p.value),
      },
      {
        colId: 'assigned_work',
        headerName: 'Assigned work',
        headerTooltip: 'Agent operations sent (running) or waiting for a socket (queued); job runs running or pending on the site',
        flex: 2,
        minWidth: 220,
        valueGetter: (p) => workSummary(p.data?.assigned_work),
      },
      {
        field: 'running_workflows',
        headerName: 'Running',
        headerTooltip: 'Workflows of this queue running now',
        width: 100,
        type: 'numericColumn',
        valueFormatter: (p) => num(p.value),
      },
      {
        field: 'recent_workflows',
        headerName: 'Workflows',
        headerTooltip: 'Workflows started on this queue in the chosen window',
        width: 115,
        type: 'numericColumn',
        valueFormatter: (p) => num(p.value),
      },
      { colId: 'newest_run', headerName: 'Newest workflow', flex: 1.5, minWidth: 170, cellRenderer: NewestRunCell },
      { colId: 'temporal_ui', headerName: 'Temporal UI', width: 115, cellRenderer: TemporalLinkCell },
    ],
    [],
  );

  return (
    <Box>
      <PageHeader
        title="Server"
        subtitle="The master cipher (administrators) and the Temporal workers of this deployment: the Engine queue and one queue per site. A worker is running when it polled its queue in the last minute."
        actions={
          <>
            <FormControl sx={{ minWidth: 170 }}>
              <InputLabel id="history-label">Workflows started</InputLabel>
              <Select labelId="history-label" label="Workflows started" value={history} onChange={(e) => setHistory(Number(e.target.value))}>
                {HISTORY_OPTIONS.map((o) => (
                  <MenuItem key={o.seconds} value={o.seconds}>
                    {o.label}
                  </MenuItem>
                ))}
              </Select>
            </FormControl>
            <Tooltip title="Refresh">
              <span>
                <IconButton aria-label="Refresh workers" onClick={() => void query.refetch()} disabled={query.isFetching}>
                  <RefreshIcon />
                </IconButton>
              </span>
            </Tooltip>
          </>
        }
      />
      {user.role === 'admin' && <MasterCipherSection />}
      {user.role === 'admin' && <BackupsSection />}
      {user.role === 'admin' && <BackupScheduleSection />}
      {query.isError && <ErrorAlert error={query.error} />}
      <Box sx={{ '& .mono': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 12.5 } }}>
        <AgGridReact<WorkerRow>
          theme={gridTheme}
          rowData={rows}
          loading={query.isPending}
          columnDefs={columnDefs}
          defaultColDef={{ sortable: true, resizable: true }}
          getRowId={(p) => `${p.data.kind}:${p.data.task_queue}`}
          domLayout="autoHeight"
          overlayNoRowsTemplate="No worker data."
          suppressCellFocus
          suppressColumnVirtualisation
        />
      </Box>
      {query.dataUpdatedAt > 0 && (
        <Typography variant="caption" color="text.secondary" sx={{ display: 'block', mt: 1 }}>
          Updated {new Date(query.dataUpdatedAt).toLocaleTimeString()}; refreshes every 15 seconds.
        </Typography>
      )}
      {user.role === 'admin' && <ServicesSection sites={rows.filter((r) => r.kind === 'site')} />}
      {user.role === 'admin' && <ClusterSection />}
      {user.role === 'admin' && <LogsSection />}
    </Box>
  );
}
