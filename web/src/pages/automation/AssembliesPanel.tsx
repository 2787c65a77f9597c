// Assemblies: saved scripts (and playbooks, workflow bodies) with versions.
import { createContext, useContext, useEffect, useMemo, useState } from 'react';
import { useSearchParams } from 'react-router';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AgGridReact } from 'ag-grid-react';
import type { ColDef } from 'ag-grid-community';
import Alert from '@mui/material/Alert';
import AlertTitle from '@mui/material/AlertTitle';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import IconButton from '@mui/material/IconButton';
import Link from '@mui/material/Link';
import MenuItem from '@mui/material/MenuItem';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import AddIcon from '@mui/icons-material/Add';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import PlayArrowIcon from '@mui/icons-material/PlayArrow';
import { assemblies as assembliesApi } from '../../api/endpoints';
import type { Assembly, AssemblyKind } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { errorCode } from '../../components/errors';
import { formatCompactDateTime } from '../../components/format';
import { gridTheme } from '../../components/grid';
import { AssemblyEditorDialog, KINDS, kindLabel } from './AssemblyEditor';
import { ASSEMBLIES_QUERY, languageLabel } from './pickers';
import { QuickRunDialog } from './QuickRunDialog';
import { SearchField } from '../../components/SearchField';

interface RowOps {
  open: (a: Assembly) => void;
  run: (a: Assembly) => void;
  remove: (a: Assembly) => void;
}
const RowOpsContext = createContext<RowOps>({ open: () => {}, run: () => {}, remove: () => {} });

function NameCell({ data }: { data?: Assembly }) {
  const { open } = useContext(RowOpsContext);
  if (!data) return null;
  return (
    <Link component="button" type="button" onClick={() => open(data)} sx={{ fontWeight: 600 }} aria-label={`Edit ${data.name}`}>
      {data.name}
    </Link>
  );
}

function ActionsCell({ data }: { data?: Assembly }) {
  const { run, remove } = useContext(RowOpsContext);
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', gap: 0.5, alignItems: 'center', height: '100%' }}>
      {(data.kind === 'script' || data.kind === 'ansible_playbook') && (
        <Tooltip title="Run on devices">
          <IconButton size="small" aria-label={`Run ${data.name}`} onClick={() => run(data)}>
            <PlayArrowIcon fontSize="small" />
          </IconButton>
        </Tooltip>
      )}
      <Tooltip title="Delete">
        <IconButton size="small" aria-label={`Delete ${data.name}`} onClick={() => remove(data)}>
          <DeleteOutlineIcon fontSize="small" />
        </IconButton>
      </Tooltip>
    </Box>
  );
}

const columns: ColDef<Assembly>[] = [
  { field: 'name', headerName: 'Name', flex: 1.5, minWidth: 180, sort: 'asc', cellRenderer: NameCell },
  { field: 'kind', headerName: 'Kind', width: 150, valueFormatter: (p) => kindLabel(p.value) },
  { field: 'language', headerName: 'Language', width: 120, valueFormatter: (p) => (p.value ? languageLabel(p.value) : '—') },
  { field: 'version', headerName: 'Version', width: 95 },
  { field: 'timeout_seconds', headerName: 'Timeout (s)', width: 115 },
  { field: 'description', headerName: 'Description', flex: 2, minWidth: 160 },
  {
    field: 'updated_at',
    headerName: 'Updated',
    width: 190,
    valueGetter: (p) => (p.data ? `${formatCompactDateTime(p.data.updated_at)} · ${p.data.updated_by}` : ''),
  },
  { colId: 'actions', headerName: '', width: 100, sortable: false, filter: false, cellRenderer: ActionsCell },
];

function DeleteDialog({ assembly, onClose }: { assembly: Assembly; onClose: () => void }) {
  const queryClient = useQueryClient();
  const mutation = useMutation({
    mutationFn: () => assembliesApi.remove(assembly.id),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ASSEMBLIES_QUERY });
      onClose();
    },
  });
  const inUse = errorCode(mutation.error) === 'assembly_in_use';
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <DialogTitle>Delete {assembly.name}?</DialogTitle>
      <DialogContent>
        {inUse ? (
          <Alert severity="warning" data-testid="assembly-in-use" sx={{ mb: 2 }}>
            <AlertTitle>In use</AlertTitle>
            {mutation.error instanceof Error && mutation.error.message}
            <br />A scheduled job or workflow runs this assembly. Change or delete those first.
          </Alert>
        ) : (
          <ErrorAlert error={mutation.error} />
        )}
        <DialogContentText sx={{ fontSize: 14 }}>
          The assembly and all its {assembly.version} version{assembly.version === 1 ? '' : 's'} are deleted. Runs that used it keep
          their results.
        </DialogContentText>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Cancel
        </Button>
        <Button color="error" variant="contained" onClick={() => mutation.mutate()} disabled={mutation.isPending || inUse}>
          {mutation.isPending ? 'Deleting…' : 'Delete'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

export default function AssembliesPanel() {
  const [kind, setKind] = useState<AssemblyKind | ''>('');
  const [search, setSearch] = useState('');
  const [q, setQ] = useState('');
  // ?assembly=<id> opens that assembly (the Metadata page links its bundled ones).
  const [params, setParams] = useSearchParams();
  const linked = Number(params.get('assembly'));
  const [editing, setEditing] = useState<number | 'new' | null>(Number.isInteger(linked) && linked > 0 ? linked : null);
  const closeEditor = () => {
    setEditing(null);
    if (params.has('assembly')) {
      const next = new URLSearchParams(params);
      next.delete('assembly');
      setParams(next, { replace: true });
    }
  };
  const [running, setRunning] = useState<number | 'any' | null>(null);
  const [deleting, setDeleting] = useState<Assembly | null>(null);

  useEffect(() => {
    const t = window.setTimeout(() => setQ(search.trim()), 300);
    return () => window.clearTimeout(t);
  }, [search]);

  const query = useQuery({
    queryKey: [...ASSEMBLIES_QUERY, 'list', { kind, q }],
    queryFn: () => assembliesApi.list({ kind: kind || null, q }),
    // Keep the rows on screen while a new filter loads.
    placeholderData: keepPreviousData,
  });
  const ops = useMemo<RowOps>(
    () => ({ open: (a) => setEditing(a.id), run: (a) => setRunning(a.id), remove: (a) => setDeleting(a) }),
    [],
  );

  return (
    <RowOpsContext.Provider value={ops}>
      <Box sx={{ display: 'flex', gap: 1.5, mb: 2, flexWrap: 'wrap', alignItems: 'center' }} role="search" aria-label="Assembly filters">
        <SearchField label="Search assemblies" value={search} onChange={setSearch} />
        <TextField
          select
          label="Kind"
          value={kind}
          onChange={(e) => setKind(e.target.value as AssemblyKind | '')}
          sx={{ minWidth: 180 }}
          slotProps={{ select: { displayEmpty: true }, inputLabel: { shrink: true } }}
        >
          <MenuItem value="">All kinds</MenuItem>
          {KINDS.map((k) => (
            <MenuItem key={k.value} value={k.value}>
              {k.label}
            </MenuItem>
          ))}
        </TextField>
        <Box sx={{ flex: 1 }} />
        <Button variant="outlined" startIcon={<PlayArrowIcon />} onClick={() => setRunning('any')}>
          Run script
        </Button>
        <Button variant="contained" startIcon={<AddIcon />} onClick={() => setEditing('new')}>
          New assembly
        </Button>
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <AgGridReact<Assembly>
        theme={gridTheme}
        rowData={query.data ?? []}
        loading={query.isPending}
        columnDefs={columns}
        defaultColDef={{ sortable: true, resizable: true }}
        getRowId={(p) => String(p.data.id)}
        domLayout="autoHeight"
        overlayNoRowsTemplate={q || kind ? 'No assemblies match these filters.' : 'No assemblies yet. Create one to run it on devices.'}
        suppressCellFocus
        suppressColumnVirtualisation
        animateRows={false}
      />
      {editing !== null && <AssemblyEditorDialog id={editing === 'new' ? undefined : editing} onClose={() => closeEditor()} />}
      {running !== null && <QuickRunDialog assemblyId={running === 'any' ? undefined : running} onClose={() => setRunning(null)} />}
      {deleting && <DeleteDialog assembly={deleting} onClose={() => setDeleting(null)} />}
    </RowOpsContext.Provider>
  );
}
