import { useMemo, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { AgGridReact, type CustomCellRendererProps } from 'ag-grid-react';
import type { ColDef } from 'ag-grid-community';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import IconButton from '@mui/material/IconButton';
import MenuItem from '@mui/material/MenuItem';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import AddIcon from '@mui/icons-material/Add';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import EditIcon from '@mui/icons-material/Edit';
import { credentials as credentialsApi, sites as sitesApi } from '../../api/endpoints';
import type { Credential } from '../../api/types';
import { useSession } from '../../auth/session';
import { ErrorAlert } from '../../components/ErrorAlert';
import { gridTheme } from '../../components/grid';
import { SITES_QUERY } from '../SiteDialogs';
import { CREDENTIALS_QUERY, CredentialFormDialog, DeleteCredentialDialog } from './CredentialDialogs';

interface GridContext {
  canEdit: boolean;
  edit: (c: Credential) => void;
  remove: (c: Credential) => void;
}

function PasswordCell({ data }: CustomCellRendererProps<Credential>) {
  if (!data) return null;
  if (data.secret_status === 'unreadable')
    return (
      <Tooltip title="Sealed by a master cipher that was reset since. An administrator must enter the password again.">
        <Chip size="small" color="warning" label="Unreadable" />
      </Tooltip>
    );
  return <Chip size="small" variant="outlined" label={data.has_password ? 'Stored' : 'Missing'} />;
}

function ActionsCell({ data, context }: CustomCellRendererProps<Credential, unknown, GridContext>) {
  if (!data || !context.canEdit) return null;
  return (
    <Box sx={{ display: 'flex', gap: 0.5, alignItems: 'center', height: '100%' }}>
      <Tooltip title="Edit">
        <IconButton size="small" aria-label={`Edit ${data.name}`} onClick={() => context.edit(data)}>
          <EditIcon fontSize="small" />
        </IconButton>
      </Tooltip>
      <Tooltip title="Delete">
        <IconButton size="small" aria-label={`Delete ${data.name}`} onClick={() => context.remove(data)}>
          <DeleteOutlineIcon fontSize="small" />
        </IconButton>
      </Tooltip>
    </Box>
  );
}

type DialogState = { kind: 'create' } | { kind: 'edit'; credential: Credential } | { kind: 'delete'; credential: Credential } | null;

/** Stored credentials for remote sessions: everyone reads, administrators change. */
export default function CredentialsPanel() {
  const { user } = useSession();
  const canEdit = user.role === 'admin';
  const [siteFilter, setSiteFilter] = useState<number | ''>('');
  const [dialog, setDialog] = useState<DialogState>(null);
  const sitesQuery = useQuery({ queryKey: SITES_QUERY, queryFn: sitesApi.list });
  const query = useQuery({
    queryKey: [...CREDENTIALS_QUERY, siteFilter],
    queryFn: () => credentialsApi.list(siteFilter === '' ? null : siteFilter),
  });
  const sites = useMemo(() => sitesQuery.data ?? [], [sitesQuery.data]);

  const columnDefs = useMemo<ColDef<Credential>[]>(
    () => [
      { field: 'name', headerName: 'Name', flex: 2, minWidth: 160, sort: 'asc' },
      { field: 'connection_type', headerName: 'Connection', width: 130 },
      { field: 'credential_type', headerName: 'Type', width: 110 },
      {
        colId: 'account',
        headerName: 'Account',
        flex: 2,
        minWidth: 160,
        cellClass: 'mono',
        valueGetter: (p) => (p.data ? (p.data.domain ? `${p.data.domain}\\${p.data.username}` : p.data.username) : ''),
      },
      {
        colId: 'site',
        headerName: 'Site',
        flex: 1.5,
        minWidth: 130,
        // Closes over sites (a dependency below) so names appear once they load.
        valueGetter: (p) =>
          p.data ? (p.data.site_id === null ? 'Global' : (sites.find((s) => s.site_id === p.data!.site_id)?.name ?? `Site ${p.data.site_id}`)) : '',
      },
      { colId: 'password', headerName: 'Password', width: 130, cellRenderer: PasswordCell, sortable: false, filter: false },
      {
        colId: 'actions',
        headerName: '',
        width: 96,
        sortable: false,
        filter: false,
        resizable: false,
        cellRenderer: ActionsCell,
        hide: !canEdit,
      },
    ],
    [canEdit, sites],
  );

  const context = useMemo<GridContext>(
    () => ({
      canEdit,
      edit: (credential) => setDialog({ kind: 'edit', credential }),
      remove: (credential) => setDialog({ kind: 'delete', credential }),
    }),
    [canEdit],
  );

  return (
    <Box>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 2, mb: 2, flexWrap: 'wrap' }}>
        <Box sx={{ flex: 1, minWidth: 240 }}>
          <Typography variant="h6">Stored credentials</Typography>
          <Typography variant="body2" color="text.secondary">
            Accounts for remote sessions. Passwords are encrypted with the master cipher and never shown.
          </Typography>
        </Box>
        <TextField
          select
          size="small"
          label="Site filter"
          value={siteFilter}
          onChange={(e) => setSiteFilter(e.target.value === '' ? '' : Number(e.target.value))}
          sx={{ minWidth: 200 }}
        >
          <MenuItem value="">All sites</MenuItem>
          {sites.map((s) => (
            <MenuItem key={s.site_id} value={s.site_id}>
              {s.name}
            </MenuItem>
          ))}
        </TextField>
        {canEdit && (
          <Button variant="contained" startIcon={<AddIcon />} onClick={() => setDialog({ kind: 'create' })}>
            Add credential
          </Button>
        )}
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <Box sx={{ '& .mono': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 12.5 } }}>
        <AgGridReact<Credential>
          theme={gridTheme}
          rowData={query.data ?? []}
          loading={query.isPending}
          columnDefs={columnDefs}
          defaultColDef={{ sortable: true, resizable: true, filter: 'agTextColumnFilter' }}
          context={context}
          getRowId={(p) => String(p.data.credential_id)}
          domLayout="autoHeight"
          overlayNoRowsTemplate={siteFilter === '' ? 'No stored credentials yet.' : 'No credentials for this site.'}
          suppressCellFocus
          suppressColumnVirtualisation
          animateRows={false}
        />
      </Box>
      {dialog?.kind === 'create' && <CredentialFormDialog sites={sites} onClose={() => setDialog(null)} />}
      {dialog?.kind === 'edit' && (
        <CredentialFormDialog credential={dialog.credential} sites={sites} onClose={() => setDialog(null)} />
      )}
      {dialog?.kind === 'delete' && <DeleteCredentialDialog credential={dialog.credential} onClose={() => setDialog(null)} />}
    </Box>
  );
}
