// The Processes tab: the agent's live process list (a snapshot at most a
// minute old when the tab opens, a fresh one on Refresh) with Terminate per
// row. When the live list is unavailable the last inventory's list is shown.
import { createContext, useContext, useMemo, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { ColDef } from 'ag-grid-community';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import CircularProgress from '@mui/material/CircularProgress';
import { devices as devicesApi } from '../../api/endpoints';
import type { LiveProcess, ProcessItem } from '../../api/types';
import { describeError } from '../../components/errors';
import { formatBytes, formatDateTime } from '../../components/format';
import { useNotify } from '../../toasts/notify';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { InventoryGrid } from './InventoryGrid';
import { operationErrorToast } from './operationErrors';
import { NotCollected, OperationBar, RefreshButton } from './parts';
import { deviceProcessesKey } from './queries';

/** Seconds a cached snapshot may be old when the tab opens. */
export const PROCESS_MAX_AGE_SECONDS = 60;

const fromInventory = (p: ProcessItem): LiveProcess => ({
  pid: p.pid,
  ppid: p.ppid,
  name: p.name,
  user: p.user ?? '',
  cpu_percent: p.cpu_percent,
  memory_bytes: p.rss_bytes,
  command_line: p.command ?? '',
});

interface RowOps {
  terminating: ReadonlySet<number>;
  ask: (p: LiveProcess) => void;
}

// Cells render inside the React tree, so they read the running terminations from context.
const RowOpsContext = createContext<RowOps>({ terminating: new Set(), ask: () => {} });

function TerminateCell({ data }: { data?: LiveProcess }) {
  const { terminating, ask } = useContext(RowOpsContext);
  if (!data) return null;
  const busy = terminating.has(data.pid);
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', height: '100%' }}>
      <Button
        size="small"
        color="error"
        aria-label={`Terminate ${data.name} (PID ${data.pid})`}
        disabled={busy}
        startIcon={busy ? <CircularProgress size={12} /> : undefined}
        onClick={() => ask(data)}
        sx={{ minWidth: 0, px: 1, py: 0.25 }}
      >
        {busy ? 'Terminating…' : 'Terminate'}
      </Button>
    </Box>
  );
}

const columns: ColDef<LiveProcess>[] = [
  { field: 'pid', headerName: 'PID', width: 90, type: 'numericColumn', filter: 'agNumberColumnFilter' },
  { field: 'name', headerName: 'Name', flex: 1, minWidth: 140 },
  { field: 'user', headerName: 'User', width: 120 },
  {
    field: 'cpu_percent',
    headerName: 'CPU %',
    width: 95,
    type: 'numericColumn',
    filter: 'agNumberColumnFilter',
    sort: 'desc',
    valueFormatter: (p) => (typeof p.value === 'number' ? p.value.toFixed(1) : '—'),
  },
  {
    field: 'memory_bytes',
    headerName: 'Memory',
    width: 105,
    type: 'numericColumn',
    filter: false,
    valueFormatter: (p) => formatBytes(p.value),
  },
  { field: 'command_line', headerName: 'Command', flex: 2.5, minWidth: 220, cellClass: 'mono', tooltipField: 'command_line' },
  { colId: 'actions', headerName: '', width: 130, sortable: false, filter: false, cellRenderer: TerminateCell },
];

export function ProcessesTab({ hostname, inventory }: { hostname: string; inventory: ProcessItem[] | null | undefined }) {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const key = deviceProcessesKey(hostname);
  const [asking, setAsking] = useState<LiveProcess | null>(null);
  const [terminating, setTerminating] = useState<ReadonlySet<number>>(new Set());

  // Every fetch may be a round trip to the agent: no retries, no polling.
  const live = useQuery({ queryKey: key, queryFn: () => devicesApi.processes(hostname, PROCESS_MAX_AGE_SECONDS), retry: false });
  const refresh = useMutation({
    mutationFn: () => devicesApi.processes(hostname, 0),
    onSuccess: (snapshot) => queryClient.setQueryData(key, snapshot),
    onError: (error) => notify(operationErrorToast(error, 'Refresh processes')),
  });

  const mark = (pid: number, on: boolean) =>
    setTerminating((s) => {
      const next = new Set(s);
      if (on) next.add(pid);
      else next.delete(pid);
      return next;
    });
  const terminate = useMutation({
    mutationFn: (p: LiveProcess) => devicesApi.terminateProcess(hostname, p.pid, p.name),
    onMutate: (p) => mark(p.pid, true),
    onSettled: (_d, _e, p) => mark(p.pid, false),
    onSuccess: (_result, p) => {
      notify({ title: `${p.name} terminated`, message: `PID ${p.pid} on ${hostname} has ended.`, icon: 'device' });
      refresh.mutate();
    },
    onError: (error, p) => notify(operationErrorToast(error, `Terminate ${p.name} (PID ${p.pid})`)),
  });

  const ops = useMemo<RowOps>(() => ({ terminating, ask: setAsking }), [terminating]);

  const fallback = inventory ? inventory.map(fromInventory) : null;
  const rows = live.data ? (live.data.processes ?? []) : fallback;
  const refreshButton = (
    <RefreshButton label="Refresh processes" pending={refresh.isPending} onClick={() => refresh.mutate()} />
  );

  return (
    <RowOpsContext.Provider value={ops}>
      <OperationBar actions={refreshButton}>
        <span data-testid="processes-as-of">
          {live.data
            ? `As of ${formatDateTime(live.data.captured_at)}`
            : live.isPending
              ? 'Asking the agent for its process list…'
              : fallback
                ? 'From the last inventory'
                : ''}
        </span>
      </OperationBar>
      {live.isError && !live.data && (
        <Alert severity="warning" variant="outlined" sx={{ mb: 1.5 }} data-testid="processes-live-error">
          The live process list is not available: {describeError(live.error)}
        </Alert>
      )}
      {rows ? (
        <InventoryGrid<LiveProcess>
          noun="processes"
          rows={rows}
          columnDefs={columns}
          getRowId={(p) => String(p.data.pid)}
          emptyText="The agent reported no processes."
        />
      ) : live.isPending ? (
        <Box role="status" sx={{ typography: 'body2', color: 'text.secondary' }}>
          Loading processes…
        </Box>
      ) : (
        <NotCollected what="Process list" />
      )}
      {asking && (
        <ConfirmDialog
          title={`Terminate ${asking.name} (PID ${asking.pid})?`}
          confirm="Terminate"
          danger
          onConfirm={() => terminate.mutate(asking)}
          onClose={() => setAsking(null)}
        >
          The process <b>{asking.name}</b> with PID <b>{asking.pid}</b>
          {asking.user ? ` (user ${asking.user})` : ''} on {hostname} is asked to end, and killed if it does not. Unsaved
          work in it is lost. If the PID now belongs to another program, nothing is terminated.
        </ConfirmDialog>
      )}
    </RowOpsContext.Provider>
  );
}
