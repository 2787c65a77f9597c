// Workflows: multi-step automation started on devices (or by a job).
import { createContext, useContext, useMemo, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AgGridReact } from 'ag-grid-react';
import type { ColDef } from 'ag-grid-community';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import IconButton from '@mui/material/IconButton';
import Link from '@mui/material/Link';
import Tooltip from '@mui/material/Tooltip';
import AddIcon from '@mui/icons-material/Add';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import HistoryIcon from '@mui/icons-material/History';
import PlayArrowIcon from '@mui/icons-material/PlayArrow';
import WebhookIcon from '@mui/icons-material/Webhook';
import { workflows as workflowsApi } from '../../api/endpoints';
import type { Workflow } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { describeError } from '../../components/errors';
import { formatCompactDateTime } from '../../components/format';
import { gridTheme } from '../../components/grid';
import { useNotify } from '../../toasts/notify';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { WORKFLOWS_QUERY } from './JobEditor';
import { WorkflowEditorDialog } from './WorkflowEditor';
import { StartWorkflowDialog, WorkflowRunsDialog } from './WorkflowRuns';
import { WorkflowWebhooksDialog } from './WorkflowWebhooks';

type Action = 'edit' | 'start' | 'runs' | 'webhooks' | 'delete';
const RowOpsContext = createContext<(w: Workflow, a: Action) => void>(() => {});

function NameCell({ data }: { data?: Workflow }) {
  const act = useContext(RowOpsContext);
  if (!data) return null;
  return (
    <Link component="button" type="button" onClick={() => act(data, 'edit')} sx={{ fontWeight: 600 }} aria-label={`Edit ${data.name}`}>
      {data.name}
    </Link>
  );
}

function ActionsCell({ data }: { data?: Workflow }) {
  const act = useContext(RowOpsContext);
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', gap: 0.25, alignItems: 'center', height: '100%' }}>
      <Tooltip title="Start on devices">
        <IconButton size="small" aria-label={`Start ${data.name}`} onClick={() => act(data, 'start')}>
          <PlayArrowIcon fontSize="small" />
        </IconButton>
      </Tooltip>
      <Tooltip title="Runs">
        <IconButton size="small" aria-label={`Runs of ${data.name}`} onClick={() => act(data, 'runs')}>
          <HistoryIcon fontSize="small" />
        </IconButton>
      </Tooltip>
      <Tooltip title="Webhooks">
        <IconButton size="small" aria-label={`Webhooks of ${data.name}`} onClick={() => act(data, 'webhooks')}>
          <WebhookIcon fontSize="small" />
        </IconButton>
      </Tooltip>
      <Tooltip title="Delete">
        <IconButton size="small" aria-label={`Delete ${data.name}`} onClick={() => act(data, 'delete')}>
          <DeleteOutlineIcon fontSize="small" />
        </IconButton>
      </Tooltip>
    </Box>
  );
}

const columns: ColDef<Workflow>[] = [
  { field: 'name', headerName: 'Name', flex: 1.3, minWidth: 180, sort: 'asc', cellRenderer: NameCell },
  { field: 'description', headerName: 'Description', flex: 2, minWidth: 180 },
  { colId: 'steps', headerName: 'Steps', width: 90, valueGetter: (p) => p.data?.steps?.length ?? 0 },
  { field: 'created_by', headerName: 'Created by', width: 130 },
  { field: 'updated_at', headerName: 'Updated', width: 150, valueFormatter: (p) => formatCompactDateTime(p.value) },
  { colId: 'actions', headerName: '', width: 165, sortable: false, cellRenderer: ActionsCell },
];

export default function WorkflowsPanel() {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const [open, setOpen] = useState<{ w?: Workflow; a: Action } | null>(null);
  const query = useQuery({ queryKey: WORKFLOWS_QUERY, queryFn: workflowsApi.list });
  const remove = useMutation({
    mutationFn: (w: Workflow) => workflowsApi.remove(w.id),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: WORKFLOWS_QUERY }),
    onError: (error, w) => notify({ title: `Could not delete ${w.name}`, message: describeError(error), variant: 'error' }),
  });
  const act = useMemo(() => (w: Workflow, a: Action) => setOpen({ w, a }), []);
  const close = () => setOpen(null);

  return (
    <RowOpsContext.Provider value={act}>
      <Box sx={{ display: 'flex', mb: 2 }}>
        <Box sx={{ flex: 1 }} />
        <Button variant="contained" startIcon={<AddIcon />} onClick={() => setOpen({ a: 'edit' })}>
          New workflow
        </Button>
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <AgGridReact<Workflow>
        theme={gridTheme}
        rowData={query.data ?? []}
        loading={query.isPending}
        columnDefs={columns}
        defaultColDef={{ sortable: true, resizable: true }}
        getRowId={(p) => String(p.data.id)}
        domLayout="autoHeight"
        overlayNoRowsTemplate="No workflows yet."
        suppressCellFocus
        suppressColumnVirtualisation
        animateRows={false}
      />
      {open?.a === 'edit' && <WorkflowEditorDialog workflow={open.w} onClose={close} />}
      {open?.a === 'start' && open.w && <StartWorkflowDialog workflow={open.w} onClose={close} />}
      {open?.a === 'runs' && open.w && <WorkflowRunsDialog workflow={open.w} onClose={close} />}
      {open?.a === 'webhooks' && open.w && <WorkflowWebhooksDialog workflow={open.w} onClose={close} />}
      {open?.a === 'delete' && open.w && (
        <ConfirmDialog title={`Delete ${open.w.name}?`} confirm="Delete" danger onConfirm={() => remove.mutate(open.w!)} onClose={close}>
          The workflow is deleted; jobs that start it must be changed first.
        </ConfirmDialog>
      )}
    </RowOpsContext.Provider>
  );
}
