import { useCallback, useMemo, useRef, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { AgGridReact, type CustomCellRendererProps } from 'ag-grid-react';
import type { ColDef, GetRowIdParams, SelectionChangedEvent } from 'ag-grid-community';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Divider from '@mui/material/Divider';
import IconButton from '@mui/material/IconButton';
import ListItemIcon from '@mui/material/ListItemIcon';
import ListItemText from '@mui/material/ListItemText';
import Menu from '@mui/material/Menu';
import MenuItem from '@mui/material/MenuItem';
import Tooltip from '@mui/material/Tooltip';
import AddIcon from '@mui/icons-material/Add';
import AdminPanelSettingsIcon from '@mui/icons-material/AdminPanelSettings';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import KeyIcon from '@mui/icons-material/Key';
import LocationCityIcon from '@mui/icons-material/LocationCity';
import MoreVertIcon from '@mui/icons-material/MoreVert';
import PhonelinkLockIcon from '@mui/icons-material/PhonelinkLock';
import PhonelinkEraseIcon from '@mui/icons-material/PhonelinkErase';
import RefreshIcon from '@mui/icons-material/Refresh';
import SecurityIcon from '@mui/icons-material/Security';
import { sites as sitesApi, users as usersApi } from '../../api/endpoints';
import type { MfaAction, Operator } from '../../api/types';
import { useSession } from '../../auth/session';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatCompactDate, formatCompactDateTime, formatDateTime } from '../../components/format';
import { gridTheme } from '../../components/grid';
import { SITES_QUERY } from '../SiteDialogs';
import {
  CreateOperatorDialog,
  DeleteOperatorDialog,
  MfaDialog,
  ResetPasswordDialog,
  ROLE_LABEL,
  RoleDialog,
  SiteAssignmentDialog,
  USERS_QUERY,
} from './OperatorDialogs';

type DialogState =
  | { kind: 'create' }
  | { kind: 'role'; user: Operator }
  | { kind: 'password'; user: Operator }
  | { kind: 'mfa'; user: Operator; action: MfaAction }
  | { kind: 'sites'; users: Operator[] }
  | { kind: 'delete'; user: Operator }
  | null;

interface GridContext {
  me: string;
  siteNames: Map<number, string>;
  assignSites: (user: Operator) => void;
  openMenu: (anchor: HTMLElement, user: Operator) => void;
}

/** The "Sites" cell as text: admins see every site, operators their assigned ones. */
export function sitesText(user: Operator, siteNames: Map<number, string>): string {
  if (user.role === 'admin') return 'All sites';
  const ids = user.site_ids ?? [];
  if (ids.length === 0) return 'None';
  return ids
    .map((id) => siteNames.get(id) ?? `#${id}`)
    .sort((a, b) => a.localeCompare(b))
    .join(', ');
}

function UsernameCell({ data, context }: CustomCellRendererProps<Operator, unknown, GridContext>) {
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', gap: 0.75, height: '100%' }}>
      <span style={{ fontWeight: 500 }}>{data.username}</span>
      {data.username === context.me && <Chip size="small" label="you" variant="outlined" sx={{ height: 18, fontSize: 11 }} />}
      {data.recovery_required && (
        <Tooltip title="Flagged by a master-cipher reset: this account must be recovered before it can sign in.">
          <Chip size="small" label="recovery" color="warning" variant="outlined" sx={{ height: 18, fontSize: 11 }} />
        </Tooltip>
      )}
    </Box>
  );
}

function RoleCell({ data }: CustomCellRendererProps<Operator>) {
  if (!data) return null;
  const admin = data.role === 'admin';
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', height: '100%' }}>
      <Chip
        size="small"
        label={admin ? 'Admin' : data.role === 'operator' ? 'Operator' : data.role}
        color={admin ? 'primary' : 'default'}
        variant={admin ? 'filled' : 'outlined'}
        sx={{ height: 20, fontSize: 12 }}
      />
    </Box>
  );
}

function MfaRequiredCell({ data }: CustomCellRendererProps<Operator>) {
  if (!data) return null;
  return data.mfa_enabled ? (
    <span>Required</span>
  ) : (
    <Box component="span" sx={{ color: 'warning.dark', fontWeight: 500 }}>
      Not required
    </Box>
  );
}

function ActionsCell({ data, context }: CustomCellRendererProps<Operator, unknown, GridContext>) {
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', gap: 0.5, alignItems: 'center', height: '100%' }}>
      <Tooltip title="Site assignments">
        <IconButton size="small" aria-label={`Sites of ${data.username}`} onClick={() => context.assignSites(data)}>
          <LocationCityIcon fontSize="small" />
        </IconButton>
      </Tooltip>
      <Tooltip title="More actions">
        <IconButton
          size="small"
          aria-label={`Actions for ${data.username}`}
          aria-haspopup="menu"
          onClick={(e) => context.openMenu(e.currentTarget, data)}
        >
          <MoreVertIcon fontSize="small" />
        </IconButton>
      </Tooltip>
    </Box>
  );
}

export default function OperatorsPanel() {
  const { user: me } = useSession();
  const gridRef = useRef<AgGridReact<Operator>>(null);
  const [dialog, setDialog] = useState<DialogState>(null);
  const [selected, setSelected] = useState<Operator[]>([]);
  const [menu, setMenu] = useState<{ anchor: HTMLElement; user: Operator } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const usersQuery = useQuery({ queryKey: USERS_QUERY, queryFn: usersApi.list });
  const sitesQuery = useQuery({ queryKey: SITES_QUERY, queryFn: sitesApi.list });

  const siteNames = useMemo(() => new Map((sitesQuery.data ?? []).map((s) => [s.site_id, s.name])), [sitesQuery.data]);

  const columnDefs = useMemo<ColDef<Operator>[]>(
    () => [
      { field: 'username', headerName: 'Username', flex: 1.2, minWidth: 130, sort: 'asc', cellRenderer: UsernameCell },
      {
        field: 'role',
        headerName: 'Role',
        width: 100,
        cellRenderer: RoleCell,
        filterValueGetter: (p) => ROLE_LABEL[p.data?.role ?? ''] ?? p.data?.role,
      },
      {
        field: 'auth_source',
        headerName: 'Source',
        width: 78,
        filter: false,
        valueFormatter: (p) => (p.value === 'local' ? 'Local' : p.value === 'directory' ? 'Directory' : (p.value ?? '—')),
      },
      {
        field: 'mfa_enabled',
        headerName: 'MFA',
        headerTooltip: 'Whether the operator needs an authenticator code to sign in',
        width: 90,
        filter: false,
        cellDataType: false,
        cellRenderer: MfaRequiredCell,
      },
      {
        field: 'mfa_configured',
        headerName: 'Authenticator',
        headerTooltip: 'Whether the operator has verified an authenticator app',
        width: 122,
        filter: false,
        cellDataType: false,
        valueFormatter: (p) => (p.value ? 'Set up' : 'Not set up'),
      },
      { field: 'passkey_count', headerName: 'Passkeys', width: 92, filter: false, type: 'numericColumn' },
      {
        colId: 'sites',
        headerName: 'Sites',
        flex: 2,
        minWidth: 130,
        valueGetter: (p) => (p.data ? sitesText(p.data, siteNames) : ''),
        tooltipValueGetter: (p) => (p.value as string) || undefined,
        cellStyle: (p) => (p.data?.role === 'admin' ? { color: '#64748b' } : null),
      },
      {
        field: 'last_login_at',
        headerName: 'Last sign-in',
        width: 146,
        valueFormatter: (p) => (p.value ? formatCompactDateTime(p.value) : 'Never'),
        tooltipValueGetter: (p) => (p.value ? formatDateTime(p.value) : undefined),
        filter: false,
      },
      {
        field: 'created_at',
        headerName: 'Created',
        width: 100,
        valueFormatter: (p) => formatCompactDate(p.value),
        tooltipValueGetter: (p) => formatDateTime(p.value),
        filter: false,
      },
      {
        colId: 'actions',
        headerName: '',
        width: 78,
        sortable: false,
        filter: false,
        resizable: false,
        pinned: 'right',
        cellRenderer: ActionsCell,
      },
    ],
    [siteNames],
  );

  const context = useMemo<GridContext>(
    () => ({
      me: me.username,
      siteNames,
      assignSites: (user) => setDialog({ kind: 'sites', users: [user] }),
      openMenu: (anchor, user) => setMenu({ anchor, user }),
    }),
    [me.username, siteNames],
  );

  const onSelectionChanged = useCallback((e: SelectionChangedEvent<Operator>) => setSelected(e.api.getSelectedRows()), []);
  const getRowId = useCallback((p: GetRowIdParams<Operator>) => p.data.username, []);

  // The grid keeps the selected row objects of the moment; refresh them from the latest list.
  const selectedNow = selected
    .map((s) => usersQuery.data?.find((u) => u.username === s.username))
    .filter((u): u is Operator => Boolean(u));

  const open = (next: DialogState) => {
    setMenu(null);
    setNotice(null);
    setDialog(next);
  };
  const menuUser = menu?.user;
  const isSelf = (u: Operator) => u.username === me.username;

  return (
    <Box>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, mb: 1.5, flexWrap: 'wrap' }}>
        <Box sx={{ flex: 1, minWidth: 200, typography: 'body2', color: 'text.secondary' }}>
          Local accounts sign in with a password and an authenticator app. Operators see only their assigned sites.
        </Box>
        <Tooltip title="Refresh">
          <span>
            <IconButton
              aria-label="Refresh operators"
              onClick={() => {
                void usersQuery.refetch();
                void sitesQuery.refetch();
              }}
              disabled={usersQuery.isFetching}
            >
              <RefreshIcon />
            </IconButton>
          </span>
        </Tooltip>
        <Button
          variant="outlined"
          startIcon={<LocationCityIcon />}
          disabled={selectedNow.length === 0}
          onClick={() => open({ kind: 'sites', users: selectedNow })}
        >
          Assign sites{selectedNow.length > 0 ? ` (${selectedNow.length})` : ''}
        </Button>
        <Button variant="contained" startIcon={<AddIcon />} onClick={() => open({ kind: 'create' })}>
          New operator
        </Button>
      </Box>
      {notice && (
        <Alert severity="success" variant="outlined" onClose={() => setNotice(null)} sx={{ mb: 1.5 }} data-testid="operators-notice">
          {notice}
        </Alert>
      )}
      {usersQuery.isError && <ErrorAlert error={usersQuery.error} />}
      {sitesQuery.isError && <ErrorAlert error={sitesQuery.error} />}
      <AgGridReact<Operator>
        ref={gridRef}
        theme={gridTheme}
        rowData={usersQuery.data ?? []}
        loading={usersQuery.isPending}
        columnDefs={columnDefs}
        defaultColDef={{ sortable: true, resizable: true, filter: 'agTextColumnFilter' }}
        context={context}
        getRowId={getRowId}
        rowSelection={{ mode: 'multiRow', checkboxes: true, headerCheckbox: true, enableClickSelection: false }}
        selectionColumnDef={{ width: 46, minWidth: 46, maxWidth: 46, pinned: 'left' }}
        onSelectionChanged={onSelectionChanged}
        domLayout="autoHeight"
        overlayNoRowsTemplate="No operators."
        suppressCellFocus
        suppressColumnVirtualisation
        tooltipShowDelay={400}
        animateRows={false}
      />

      <Menu anchorEl={menu?.anchor} open={Boolean(menu)} onClose={() => setMenu(null)}>
        {menuUser && [
          <MenuItem key="role" onClick={() => open({ kind: 'role', user: menuUser })}>
            <ListItemIcon>
              <AdminPanelSettingsIcon fontSize="small" />
            </ListItemIcon>
            Change role…
          </MenuItem>,
          <MenuItem
            key="password"
            disabled={menuUser.auth_source !== 'local'}
            onClick={() => open({ kind: 'password', user: menuUser })}
          >
            <ListItemIcon>
              <KeyIcon fontSize="small" />
            </ListItemIcon>
            <ListItemText
              primary="Reset password…"
              secondary={menuUser.auth_source !== 'local' ? 'Directory account: its password is in the directory' : undefined}
            />
          </MenuItem>,
          <MenuItem key="sites" onClick={() => open({ kind: 'sites', users: [menuUser] })}>
            <ListItemIcon>
              <LocationCityIcon fontSize="small" />
            </ListItemIcon>
            Site assignments…
          </MenuItem>,
          <Divider key="d1" />,
          menuUser.mfa_enabled ? (
            <MenuItem key="mfa-disable" onClick={() => open({ kind: 'mfa', user: menuUser, action: 'disable' })}>
              <ListItemIcon>
                <SecurityIcon fontSize="small" />
              </ListItemIcon>
              Stop requiring MFA…
            </MenuItem>
          ) : (
            <MenuItem key="mfa-enable" onClick={() => open({ kind: 'mfa', user: menuUser, action: 'enable' })}>
              <ListItemIcon>
                <PhonelinkLockIcon fontSize="small" />
              </ListItemIcon>
              Require MFA…
            </MenuItem>
          ),
          <MenuItem
            key="mfa-reset"
            disabled={!menuUser.mfa_configured}
            onClick={() => open({ kind: 'mfa', user: menuUser, action: 'reset' })}
          >
            <ListItemIcon>
              <PhonelinkEraseIcon fontSize="small" />
            </ListItemIcon>
            <ListItemText
              primary="Reset authenticator…"
              secondary={menuUser.mfa_configured ? undefined : 'No authenticator set up yet'}
            />
          </MenuItem>,
          <Divider key="d2" />,
          <MenuItem key="delete" onClick={() => open({ kind: 'delete', user: menuUser })} sx={{ color: 'error.main' }}>
            <ListItemIcon>
              <DeleteOutlineIcon fontSize="small" color="error" />
            </ListItemIcon>
            Delete…
          </MenuItem>,
        ]}
      </Menu>

      {dialog?.kind === 'create' && <CreateOperatorDialog onClose={() => setDialog(null)} onDone={setNotice} />}
      {dialog?.kind === 'role' && (
        <RoleDialog user={dialog.user} self={isSelf(dialog.user)} onClose={() => setDialog(null)} onDone={setNotice} />
      )}
      {dialog?.kind === 'password' && (
        <ResetPasswordDialog user={dialog.user} self={isSelf(dialog.user)} onClose={() => setDialog(null)} onDone={setNotice} />
      )}
      {dialog?.kind === 'mfa' && (
        <MfaDialog user={dialog.user} action={dialog.action} onClose={() => setDialog(null)} onDone={setNotice} />
      )}
      {dialog?.kind === 'sites' && <SiteAssignmentDialog operators={dialog.users} onClose={() => setDialog(null)} onDone={setNotice} />}
      {dialog?.kind === 'delete' && (
        <DeleteOperatorDialog
          user={dialog.user}
          self={isSelf(dialog.user)}
          onClose={() => setDialog(null)}
          onDone={(m) => {
            setNotice(m);
            gridRef.current?.api?.deselectAll();
          }}
        />
      )}
    </Box>
  );
}
