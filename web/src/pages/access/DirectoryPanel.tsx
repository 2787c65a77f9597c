import { useMemo, useState, type ReactNode } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AgGridReact, type CustomCellRendererProps } from 'ag-grid-react';
import type { ColDef } from 'ag-grid-community';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import IconButton from '@mui/material/IconButton';
import Switch from '@mui/material/Switch';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import AddIcon from '@mui/icons-material/Add';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import EditIcon from '@mui/icons-material/Edit';
import NetworkCheckIcon from '@mui/icons-material/NetworkCheck';
import PersonSearchIcon from '@mui/icons-material/PersonSearch';
import SyncIcon from '@mui/icons-material/Sync';
import { directory } from '../../api/endpoints';
import type { DirectoryProvider } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatDateTime } from '../../components/format';
import { gridTheme } from '../../components/grid';
import { LookupDialog } from './LookupDialog';
import { PROVIDERS_QUERY, ProviderDialog } from './ProviderDialog';

interface Actions {
  edit: (p: DirectoryProvider) => void;
  test: (p: DirectoryProvider) => void;
  lookup: (p: DirectoryProvider) => void;
  sync: (p: DirectoryProvider) => void;
  remove: (p: DirectoryProvider) => void;
  setEnabled: (p: DirectoryProvider, enabled: boolean) => void;
}

function EnabledCell({ data, context }: CustomCellRendererProps<DirectoryProvider, unknown, Actions>) {
  if (!data) return null;
  const testedOK = data.last_test?.ok === true;
  return (
    <Tooltip title={data.enabled || testedOK ? '' : 'A passing connectivity test is needed first'}>
      <span>
        <Switch size="small" checked={data.enabled} disabled={!data.enabled && !testedOK}
          slotProps={{ input: { 'aria-label': `Enable ${data.name}` } }}
          onChange={(e) => context.setEnabled(data, e.target.checked)} />
      </span>
    </Tooltip>
  );
}

function ActionsCell({ data, context }: CustomCellRendererProps<DirectoryProvider, unknown, Actions>) {
  if (!data) return null;
  const button = (label: string, icon: ReactNode, onClick: () => void) => (
    <Tooltip title={label}>
      <IconButton size="small" aria-label={`${label} ${data.name}`} onClick={onClick}>{icon}</IconButton>
    </Tooltip>
  );
  return (
    <Box sx={{ display: 'flex', gap: 0.5, alignItems: 'center', height: '100%' }}>
      {button('Test', <NetworkCheckIcon fontSize="small" />, () => context.test(data))}
      {button('Look up user in', <PersonSearchIcon fontSize="small" />, () => context.lookup(data))}
      {button('Sync', <SyncIcon fontSize="small" />, () => context.sync(data))}
      {button('Edit', <EditIcon fontSize="small" />, () => context.edit(data))}
      {button('Delete', <DeleteOutlineIcon fontSize="small" />, () => context.remove(data))}
    </Box>
  );
}

type DialogState =
  | { kind: 'create' }
  | { kind: 'edit' | 'lookup' | 'delete'; provider: DirectoryProvider }
  | null;

/** Directory providers: create, edit, test, look up, sync, enable, delete (administrators). */
export default function DirectoryPanel() {
  const queryClient = useQueryClient();
  const providers = useQuery({ queryKey: PROVIDERS_QUERY, queryFn: directory.list });
  const sites = useQuery({ queryKey: ['directory', 'sites'], queryFn: directory.sites });
  const [dialog, setDialog] = useState<DialogState>(null);
  const [notice, setNotice] = useState<{ ok: boolean; text: string } | null>(null);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: PROVIDERS_QUERY });

  const action = useMutation({
    mutationFn: async ({ p, what, enabled }: { p: DirectoryProvider; what: 'test' | 'sync' | 'enable'; enabled?: boolean }) => {
      if (what === 'test') {
        const r = await directory.test(p.provider_id);
        return { ok: r.ok, text: `Test of ${p.name}: ${r.ok ? 'passed' : 'failed'}. ${r.message}` };
      }
      if (what === 'sync') {
        const r = await directory.sync(p.provider_id);
        const gone = r.disabled.length ? ` Disabled: ${r.disabled.join(', ')}.` : ' Nobody was disabled.';
        return { ok: true, text: `Sync of ${p.name}: checked ${r.checked} cached users.${gone}` };
      }
      await directory.update(p.provider_id, { enabled });
      return { ok: true, text: `${p.name} is ${enabled ? 'enabled' : 'disabled'}.` };
    },
    onMutate: () => setNotice(null),
    onSuccess: setNotice,
    onSettled: refresh,
  });

  const { mutate } = action;
  const context = useMemo<Actions>(
    () => ({
      edit: (provider) => setDialog({ kind: 'edit', provider }),
      lookup: (provider) => setDialog({ kind: 'lookup', provider }),
      remove: (provider) => setDialog({ kind: 'delete', provider }),
      test: (p) => mutate({ p, what: 'test' }),
      sync: (p) => mutate({ p, what: 'sync' }),
      setEnabled: (p, enabled) => mutate({ p, what: 'enable', enabled }),
    }),
    [mutate],
  );

  const columns = useMemo<ColDef<DirectoryProvider>[]>(
    () => [
      { field: 'name', headerName: 'Name', flex: 1.5, minWidth: 140 },
      { field: 'kind', headerName: 'Kind', width: 150 },
      { colId: 'endpoint', headerName: 'Server', flex: 1.5, minWidth: 160, valueGetter: (p) => p.data && `${p.data.host}:${p.data.port}` },
      {
        // The switch also depends on the last test: the value covers both,
        // so the grid redraws the cell when either changes.
        colId: 'enabled', headerName: 'Enabled', width: 100, cellRenderer: EnabledCell,
        valueGetter: (p) => p.data && `${p.data.enabled}:${p.data.last_test?.ok ?? 'untested'}`,
      },
      {
        colId: 'last_test', headerName: 'Last test', flex: 1.5, minWidth: 160,
        valueGetter: (p) => (p.data?.last_test ? `${p.data.last_test.ok ? 'passed' : 'failed'} ${formatDateTime(p.data.last_test.tested_at)}` : 'never'),
      },
      { field: 'cached_users', headerName: 'Cached users', width: 130 },
      { colId: 'actions', headerName: '', width: 200, sortable: false, cellRenderer: ActionsCell },
    ],
    [],
  );

  return (
    <Box>
      <Box sx={{ display: 'flex', alignItems: 'center', mb: 1 }}>
        <Typography variant="h6" sx={{ flex: 1 }}>Directory sign-in</Typography>
        <Button variant="contained" startIcon={<AddIcon />} onClick={() => setDialog({ kind: 'create' })}>Add provider</Button>
      </Box>
      <Typography variant="body2" color="text.secondary" sx={{ mb: 2 }}>
        Operators sign in with their LDAP or Active Directory account; group mappings give their role and sites. A
        provider is enabled only after its connectivity test passes.
      </Typography>
      {providers.isError && <ErrorAlert error={providers.error} />}
      {action.isError && <ErrorAlert error={action.error} />}
      {notice && <Alert severity={notice.ok ? 'success' : 'error'} sx={{ mb: 2 }} onClose={() => setNotice(null)}>{notice.text}</Alert>}
      <AgGridReact<DirectoryProvider>
        theme={gridTheme} rowData={providers.data ?? []} loading={providers.isPending} columnDefs={columns}
        context={context} getRowId={(p) => String(p.data.provider_id)} domLayout="autoHeight"
        overlayNoRowsTemplate="No directory providers yet." suppressCellFocus suppressColumnVirtualisation animateRows={false}
      />
      {dialog?.kind === 'create' && <ProviderDialog onClose={() => setDialog(null)} />}
      {dialog?.kind === 'edit' && <ProviderDialog provider={dialog.provider} onClose={() => setDialog(null)} />}
      {dialog?.kind === 'lookup' && <LookupDialog provider={dialog.provider} sites={sites.data ?? []} onClose={() => setDialog(null)} />}
      {dialog?.kind === 'delete' && <DeleteDialog provider={dialog.provider} onClose={() => setDialog(null)} onDeleted={refresh} />}
    </Box>
  );
}

function DeleteDialog({ provider, onClose, onDeleted }: { provider: DirectoryProvider; onClose: () => void; onDeleted: () => void }) {
  const mutation = useMutation({
    mutationFn: () => directory.remove(provider.provider_id),
    onSuccess: () => {
      onDeleted();
      onClose();
    },
  });
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <DialogTitle>Delete {provider.name}?</DialogTitle>
      <DialogContent>
        <ErrorAlert error={mutation.error} />
        {provider.cached_users > 0
          ? `${provider.cached_users} cached directory users still belong to it; they must be deleted first.`
          : 'Its settings and mappings are removed.'}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>Cancel</Button>
        <Button color="error" variant="contained" onClick={() => mutation.mutate()} disabled={mutation.isPending}>Delete</Button>
      </DialogActions>
    </Dialog>
  );
}
