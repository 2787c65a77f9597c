// Scheduled jobs: the grid (schedule in words, targets, enabled toggle, next
// and last run), the editor, run history, rerun and delete.
import { createContext, useContext, useEffect, useMemo, useRef, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AgGridReact } from 'ag-grid-react';
import type { ColDef } from 'ag-grid-community';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import IconButton from '@mui/material/IconButton';
import Link from '@mui/material/Link';
import Switch from '@mui/material/Switch';
import Tooltip from '@mui/material/Tooltip';
import AddIcon from '@mui/icons-material/Add';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import HistoryIcon from '@mui/icons-material/History';
import PlayArrowIcon from '@mui/icons-material/PlayArrow';
import { scheduledJobs, workflows as workflowsApi } from '../../api/endpoints';
import type { ScheduledJob } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { describeError } from '../../components/errors';
import { gridTheme } from '../../components/grid';
import { useNotify } from '../../toasts/notify';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { RelativeTime } from '../devices/chips';
import { JobEditorDialog, jobKindLabel, JOBS_QUERY, WORKFLOWS_QUERY } from './JobEditor';
import { JobRunsDialog } from './JobRunsDialog';
import { RunStatusChip } from './RunResults';
import { describeSchedule } from './schedule';

interface RowOps {
  edit: (j: ScheduledJob) => void;
  history: (j: ScheduledJob) => void;
  rerun: (j: ScheduledJob) => void;
  remove: (j: ScheduledJob) => void;
  toggle: (j: ScheduledJob, enabled: boolean) => void;
  toggling: ReadonlySet<number>;
}
const RowOpsContext = createContext<RowOps>({
  edit: () => {},
  history: () => {},
  rerun: () => {},
  remove: () => {},
  toggle: () => {},
  toggling: new Set(),
});

export function describeTargets(j: ScheduledJob): string {
  const parts: string[] = [];
  const d = j.targets?.devices?.length ?? 0;
  const s = j.targets?.sites?.length ?? 0;
  if (d) parts.push(d === 1 ? '1 device' : `${d} devices`);
  if (s) parts.push(s === 1 ? '1 site' : `${s} sites`);
  if (j.targets?.filters?.length) parts.push(`${j.targets.filters.length} filters`);
  return parts.join(', ') || 'none';
}

/** What a job runs: "Script: cleanup", "Workflow: Disk care", "Agent update". */
export function describeWhat(j: ScheduledJob, workflowNames: ReadonlyMap<number, string> = new Map()): string {
  if (j.kind === 'script') return `Script: ${j.assembly_name || `assembly ${j.assembly_id}`}`;
  if (j.kind === 'workflow') return `Workflow: ${(j.workflow_id !== null && workflowNames.get(j.workflow_id)) || j.workflow_id}`;
  return jobKindLabel(j.kind);
}

interface GridContext {
  workflowNames: ReadonlyMap<number, string>;
}

function NameCell({ data }: { data?: ScheduledJob }) {
  const { edit } = useContext(RowOpsContext);
  if (!data) return null;
  return (
    <Link component="button" type="button" onClick={() => edit(data)} sx={{ fontWeight: 600 }} aria-label={`Edit ${data.name}`}>
      {data.name}
    </Link>
  );
}

function EnabledCell({ data }: { data?: ScheduledJob }) {
  const { toggle, toggling } = useContext(RowOpsContext);
  if (!data) return null;
  return (
    <Switch
      size="small"
      checked={data.enabled}
      disabled={toggling.has(data.id)}
      onChange={(e) => toggle(data, e.target.checked)}
      slotProps={{ input: { 'aria-label': `Enable ${data.name}` } }}
    />
  );
}

function LastRunCell({ data }: { data?: ScheduledJob }) {
  if (!data) return null;
  if (!data.last_run) return <span>Never</span>;
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, height: '100%' }}>
      <RunStatusChip status={data.last_run.status} />
      <RelativeTime value={data.last_run.finished_at ?? data.last_run.started_at} />
    </Box>
  );
}

function ActionsCell({ data }: { data?: ScheduledJob }) {
  const { history, rerun, remove } = useContext(RowOpsContext);
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', gap: 0.25, alignItems: 'center', height: '100%' }}>
      <Tooltip title="Run history">
        <IconButton size="small" aria-label={`Runs of ${data.name}`} onClick={() => history(data)}>
          <HistoryIcon fontSize="small" />
        </IconButton>
      </Tooltip>
      <Tooltip title="Run now">
        <IconButton size="small" aria-label={`Run ${data.name} now`} onClick={() => rerun(data)}>
          <PlayArrowIcon fontSize="small" />
        </IconButton>
      </Tooltip>
      <Tooltip title="Delete">
        <IconButton size="small" aria-label={`Delete ${data.name}`} onClick={() => remove(data)}>
          <DeleteOutlineIcon fontSize="small" />
        </IconButton>
      </Tooltip>
    </Box>
  );
}

const columns: ColDef<ScheduledJob>[] = [
  { field: 'name', headerName: 'Name', flex: 1.3, minWidth: 160, sort: 'asc', cellRenderer: NameCell },
  {
    colId: 'what',
    headerName: 'Runs',
    flex: 1,
    minWidth: 140,
    valueGetter: (p) => (p.data ? describeWhat(p.data, (p.context as GridContext).workflowNames) : ''),
  },
  { colId: 'schedule', headerName: 'Schedule', flex: 1.5, minWidth: 180, valueGetter: (p) => describeSchedule(p.data?.schedule) },
  { colId: 'targets', headerName: 'Targets', width: 125, valueGetter: (p) => (p.data ? describeTargets(p.data) : '') },
  { field: 'enabled', headerName: 'Enabled', width: 90, cellRenderer: EnabledCell },
  {
    field: 'next_run_at',
    headerName: 'Next run',
    width: 110,
    cellRenderer: (p: { value: string | null }) => <RelativeTime value={p.value} never="—" />,
  },
  { colId: 'last_run', headerName: 'Last run', width: 170, cellRenderer: LastRunCell },
  { colId: 'actions', headerName: '', width: 116, sortable: false, cellRenderer: ActionsCell },
];

export default function JobsPanel() {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const [editing, setEditing] = useState<ScheduledJob | 'new' | null>(null);
  const [viewing, setViewing] = useState<ScheduledJob | null>(null);
  const [deleting, setDeleting] = useState<ScheduledJob | null>(null);
  const [toggling, setToggling] = useState<ReadonlySet<number>>(new Set());
  const query = useQuery({ queryKey: JOBS_QUERY, queryFn: scheduledJobs.list, refetchInterval: 15_000 });
  // Workflow jobs show their workflow's name.
  const hasWorkflowJobs = (query.data ?? []).some((j) => j.kind === 'workflow');
  const workflowsQuery = useQuery({ queryKey: WORKFLOWS_QUERY, queryFn: workflowsApi.list, enabled: hasWorkflowJobs });
  const context = useMemo<GridContext>(
    () => ({ workflowNames: new Map((workflowsQuery.data ?? []).map((w) => [w.id, w.name])) }),
    [workflowsQuery.data],
  );
  const gridRef = useRef<AgGridReact<ScheduledJob>>(null);
  useEffect(() => {
    gridRef.current?.api?.refreshCells({ columns: ['what'], force: true });
  }, [context]);

  const track = (id: number, on: boolean) =>
    setToggling((s) => {
      const next = new Set(s);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });

  const toggle = useMutation({
    mutationFn: ({ job, enabled }: { job: ScheduledJob; enabled: boolean }) => scheduledJobs.toggle(job.id, enabled),
    onMutate: ({ job }) => track(job.id, true),
    onSettled: (_d, _e, { job }) => track(job.id, false),
    onSuccess: (updated) => {
      queryClient.setQueryData<ScheduledJob[]>(JOBS_QUERY, (list) => list?.map((j) => (j.id === updated.id ? updated : j)));
      void queryClient.invalidateQueries({ queryKey: JOBS_QUERY });
    },
    onError: (error, { job }) => notify({ title: `Could not change ${job.name}`, message: describeError(error), variant: 'error' }),
  });
  const rerun = useMutation({
    mutationFn: (job: ScheduledJob) => scheduledJobs.rerun(job.id),
    onSuccess: (_r, job) => {
      void queryClient.invalidateQueries({ queryKey: JOBS_QUERY });
      notify({ title: `${job.name} started`, message: 'Its results appear in the run history.', icon: 'schedule' });
    },
    onError: (error, job) => notify({ title: `Could not run ${job.name}`, message: describeError(error), variant: 'error' }),
  });
  const remove = useMutation({
    mutationFn: (job: ScheduledJob) => scheduledJobs.remove(job.id),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: JOBS_QUERY }),
    onError: (error, job) => notify({ title: `Could not delete ${job.name}`, message: describeError(error), variant: 'error' }),
  });

  const ops = useMemo<RowOps>(
    () => ({
      edit: (j) => setEditing(j),
      history: (j) => setViewing(j),
      rerun: (j) => rerun.mutate(j),
      remove: (j) => setDeleting(j),
      toggle: (job, enabled) => toggle.mutate({ job, enabled }),
      toggling,
    }),
    // The mutations' mutate functions are stable.
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [toggling],
  );

  return (
    <RowOpsContext.Provider value={ops}>
      <Box sx={{ display: 'flex', mb: 2 }}>
        <Box sx={{ flex: 1 }} />
        <Button variant="contained" startIcon={<AddIcon />} onClick={() => setEditing('new')}>
          New job
        </Button>
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <AgGridReact<ScheduledJob>
        ref={gridRef}
        theme={gridTheme}
        rowData={query.data ?? []}
        loading={query.isPending}
        columnDefs={columns}
        defaultColDef={{ sortable: true, resizable: true }}
        getRowId={(p) => String(p.data.id)}
        context={context}
        domLayout="autoHeight"
        overlayNoRowsTemplate="No scheduled jobs yet."
        suppressCellFocus
        suppressColumnVirtualisation
        animateRows={false}
      />
      {editing !== null && <JobEditorDialog job={editing === 'new' ? undefined : editing} onClose={() => setEditing(null)} />}
      {viewing && <JobRunsDialog job={viewing} onClose={() => setViewing(null)} />}
      {deleting && (
        <ConfirmDialog title={`Delete ${deleting.name}?`} confirm="Delete" danger onConfirm={() => remove.mutate(deleting)} onClose={() => setDeleting(null)}>
          The job stops running. Its run history and the entries it left in the devices’ activity are deleted too.
        </ConfirmDialog>
      )}
    </RowOpsContext.Provider>
  );
}
