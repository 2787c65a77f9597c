import { useCallback, useMemo, useRef, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link as RouterLink } from 'react-router';
import { AgGridReact, type CustomCellRendererProps } from 'ag-grid-react';
import type { ColDef, GetRowIdParams, SelectionChangedEvent } from 'ag-grid-community';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import IconButton from '@mui/material/IconButton';
import Link from '@mui/material/Link';
import Tooltip from '@mui/material/Tooltip';
import AddIcon from '@mui/icons-material/Add';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import EditIcon from '@mui/icons-material/Edit';
import InstallDesktopIcon from '@mui/icons-material/InstallDesktop';
import RefreshIcon from '@mui/icons-material/Refresh';
import { sites as sitesApi } from '../api/endpoints';
import type { Site } from '../api/types';
import { useSession } from '../auth/session';
import { PageHeader } from '../components/ComingSoon';
import { ErrorAlert } from '../components/ErrorAlert';
import { formatDateTime } from '../components/format';
import { gridTheme } from '../components/grid';
import { EnrollDialog } from './enroll/EnrollDialog';
import { DeleteSitesDialog, SITES_QUERY, SiteFormDialog } from './SiteDialogs';

interface GridContext {
  canEdit: boolean;
  enroll: (site: Site) => void;
  rename: (site: Site) => void;
  remove: (site: Site) => void;
}

/** The device count, linking to the site's devices (the spec's drilldown). */
function DevicesCell({ data }: CustomCellRendererProps<Site>) {
  if (!data) return null;
  return (
    <Link component={RouterLink} to={`/devices?site=${data.site_id}`} aria-label={`Devices of ${data.name}`}>
      {data.device_count}
    </Link>
  );
}

function ActionsCell({ data, context }: CustomCellRendererProps<Site, unknown, GridContext>) {
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', gap: 0.5, alignItems: 'center', height: '100%' }}>
      <Tooltip title="Enroll agents">
        <IconButton size="small" aria-label={`Enroll agents in ${data.name}`} onClick={() => context.enroll(data)}>
          <InstallDesktopIcon fontSize="small" />
        </IconButton>
      </Tooltip>
      {context.canEdit && <AdminActions data={data} context={context} />}
    </Box>
  );
}

function AdminActions({ data, context }: { data: Site; context: GridContext }) {
  return (
    <>
      <Tooltip title="Rename">
        <IconButton size="small" aria-label={`Rename ${data.name}`} onClick={() => context.rename(data)}>
          <EditIcon fontSize="small" />
        </IconButton>
      </Tooltip>
      <Tooltip title="Delete">
        <IconButton size="small" aria-label={`Delete ${data.name}`} onClick={() => context.remove(data)}>
          <DeleteOutlineIcon fontSize="small" />
        </IconButton>
      </Tooltip>
    </>
  );
}

type DialogState =
  | { kind: 'create' }
  | { kind: 'enroll'; siteId: number }
  | { kind: 'rename'; site: Site }
  | { kind: 'delete'; sites: Site[] }
  | null;

export default function SitesPage() {
  const { user } = useSession();
  const canEdit = user.role === 'admin';
  const gridRef = useRef<AgGridReact<Site>>(null);
  const [dialog, setDialog] = useState<DialogState>(null);
  const [selected, setSelected] = useState<Site[]>([]);
  const query = useQuery({ queryKey: SITES_QUERY, queryFn: sitesApi.list });

  const columnDefs = useMemo<ColDef<Site>[]>(
    () => [
      { field: 'name', headerName: 'Name', flex: 2, minWidth: 160, sort: 'asc' },
      { field: 'site_worker_slug', headerName: 'Slug', flex: 1.5, minWidth: 140, cellClass: 'mono' },
      { field: 'site_worker_name', headerName: 'Task queue', flex: 1.5, minWidth: 150, cellClass: 'mono' },
      {
        field: 'device_count',
        headerName: 'Devices',
        width: 110,
        type: 'numericColumn',
        filter: 'agNumberColumnFilter',
        cellRenderer: DevicesCell,
      },
      {
        field: 'created_at',
        headerName: 'Created',
        width: 180,
        valueFormatter: (p) => formatDateTime(p.value),
        filter: false,
      },
      {
        colId: 'actions',
        headerName: '',
        width: canEdit ? 124 : 60,
        sortable: false,
        filter: false,
        resizable: false,
        cellRenderer: ActionsCell,
      },
    ],
    [canEdit],
  );

  const context = useMemo<GridContext>(
    () => ({
      canEdit,
      enroll: (site) => setDialog({ kind: 'enroll', siteId: site.site_id }),
      rename: (site) => setDialog({ kind: 'rename', site }),
      remove: (site) => setDialog({ kind: 'delete', sites: [site] }),
    }),
    [canEdit],
  );

  const onSelectionChanged = useCallback((e: SelectionChangedEvent<Site>) => setSelected(e.api.getSelectedRows()), []);
  const getRowId = useCallback((p: GetRowIdParams<Site>) => String(p.data.site_id), []);
  const clearSelection = () => {
    gridRef.current?.api?.deselectAll();
    setSelected([]);
  };

  // The site as last read, so the dialog sees a changed auto-approval.
  const enrollSite = dialog?.kind === 'enroll' ? query.data?.find((s) => s.site_id === dialog.siteId) : undefined;

  return (
    <Box>
      <PageHeader
        title="Sites"
        subtitle="Each site has its own worker, polling the Temporal task queue site:<slug>, which runs that site's device work."
        actions={
          <>
            <Tooltip title="Refresh">
              <span>
                <IconButton aria-label="Refresh sites" onClick={() => void query.refetch()} disabled={query.isFetching}>
                  <RefreshIcon />
                </IconButton>
              </span>
            </Tooltip>
            {canEdit && (
              <>
                <Button
                  variant="outlined"
                  color="error"
                  startIcon={<DeleteOutlineIcon />}
                  disabled={selected.length === 0}
                  onClick={() => setDialog({ kind: 'delete', sites: selected })}
                >
                  Delete{selected.length > 0 ? ` (${selected.length})` : ''}
                </Button>
                <Button variant="contained" startIcon={<AddIcon />} onClick={() => setDialog({ kind: 'create' })}>
                  Create site
                </Button>
              </>
            )}
          </>
        }
      />
      {!canEdit && (
        <Alert severity="info" variant="outlined" sx={{ mb: 2 }}>
          Only administrators can create, rename or delete sites, or turn on auto-approval.
        </Alert>
      )}
      {query.isError && <ErrorAlert error={query.error} />}
      <Box sx={{ '& .mono': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 12.5 } }}>
        <AgGridReact<Site>
          ref={gridRef}
          theme={gridTheme}
          rowData={query.data ?? []}
          loading={query.isPending}
          columnDefs={columnDefs}
          defaultColDef={{ sortable: true, resizable: true, filter: 'agTextColumnFilter', suppressHeaderMenuButton: false }}
          context={context}
          getRowId={getRowId}
          rowSelection={canEdit ? { mode: 'multiRow', checkboxes: true, headerCheckbox: true, enableClickSelection: false } : undefined}
          selectionColumnDef={{ width: 52, minWidth: 52, maxWidth: 52, pinned: 'left' }}
          onSelectionChanged={onSelectionChanged}
          domLayout="autoHeight"
          overlayNoRowsTemplate="No sites yet. Create one to give its devices a worker."
          suppressCellFocus
          suppressColumnVirtualisation
          animateRows={false}
        />
      </Box>
      {dialog?.kind === 'create' && <SiteFormDialog onClose={() => setDialog(null)} />}
      {dialog?.kind === 'enroll' && enrollSite && (
        <EnrollDialog site={enrollSite} canEdit={canEdit} onClose={() => setDialog(null)} />
      )}
      {dialog?.kind === 'rename' && <SiteFormDialog site={dialog.site} onClose={() => setDialog(null)} />}
      {dialog?.kind === 'delete' && (
        <DeleteSitesDialog sites={dialog.sites} onClose={() => setDialog(null)} onDeleted={clearSelection} />
      )}
    </Box>
  );
}
