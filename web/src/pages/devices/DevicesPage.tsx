// The devices grid: pages loaded on demand (AG Grid's infinite row model over
// the paged GET /api/devices, sorted by the server), the site/status
// drilldown and hostname search from the address, a filter builder, saved
// views, a column chooser with metadata columns, and bulk actions on the
// selected devices. Device events refresh only the blocks the grid holds.
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link as RouterLink, useLocation, useSearchParams } from 'react-router';
import { AgGridReact } from 'ag-grid-react';
import type { ColumnState, GetRowIdParams, RowSelectionOptions, SelectionChangedEvent } from 'ag-grid-community';
import Alert from '@mui/material/Alert';
import Badge from '@mui/material/Badge';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import IconButton from '@mui/material/IconButton';
import Link from '@mui/material/Link';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import ComputerIcon from '@mui/icons-material/Computer';
import FilterListIcon from '@mui/icons-material/FilterList';
import RefreshIcon from '@mui/icons-material/Refresh';
import PlayArrowIcon from '@mui/icons-material/PlayArrow';
import SystemUpdateAltIcon from '@mui/icons-material/SystemUpdateAlt';
import { agentUpdates, deviceFilters, deviceListViews, metadataFields, sites as sitesApi } from '../../api/endpoints';
import type { Device, DeviceListView, DeviceListViewSort } from '../../api/types';
import { useSession } from '../../auth/session';
import { PageHeader } from '../../components/ComingSoon';
import { ErrorAlert } from '../../components/ErrorAlert';
import { gridTheme } from '../../components/grid';
import { SITES_QUERY } from '../SiteDialogs';
import { describeError } from '../../components/errors';
import { useNotify } from '../../toasts/notify';
import { QuickRunDialog } from '../automation/QuickRunDialog';
import { ColumnChooser } from './ColumnChooser';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import {
  chooserMetadataFields,
  columnDefsFor,
  DEFAULT_COLUMNS,
  DEFAULT_SORT,
  filterableMetadataFields,
  knownColumns,
  type GridContext,
} from './deviceColumns';
import { BLOCK_SIZE, makeDeviceDatasource, MAX_BLOCKS, type BlockResult } from './deviceDatasource';
import { DEVICE_FILTERS_QUERY, FILTER_METADATA_QUERY, FilterPanel, type AppliedFilter } from './FilterPanel';
import { countConditions, emptyGroup, groupOf, withHostnameSearch } from './filterTree';
import { DEVICE_POLL_MS, onDeviceGridEvent } from './queries';
import { readFilters, STATUS_LABEL, STATUS_TOKENS, writeFilters, type DeviceFilters, type StatusToken } from './status';
import { DEVICE_VIEWS_QUERY, ViewsBar, type ViewState } from './ViewsBar';
import { SearchField } from '../../components/SearchField';

const SEARCH_DEBOUNCE_MS = 300;
/** Device events within this window share one refresh of the held blocks. */
export const EVENT_REFRESH_MS = 1000;
export const METADATA_DEFINITIONS_QUERY = ['metadata-fields', 'definitions'] as const;

// No header checkbox: "select all" cannot mean every device when only some pages are loaded.
const ROW_SELECTION: RowSelectionOptions = { mode: 'multiRow', checkboxes: true, headerCheckbox: false, enableClickSelection: false };
const SELECTION_COLUMN = 'ag-Grid-SelectionColumn';

/**
 * Ticks every `ms` so relative times stay true without a refetch; `mark`
 * moves it on when fresh rows arrive, so a heartbeat newer than the last
 * tick does not read as "in 6 s".
 */
function useNow(ms: number): [number, () => void] {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = window.setInterval(() => setNow(Date.now()), ms);
    return () => window.clearInterval(t);
  }, [ms]);
  const mark = useCallback(() => setNow(Date.now()), []);
  return [now, mark];
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
  const { user } = useSession();
  const queryClient = useQueryClient();
  const notice = (location.state as { notice?: string } | null)?.notice ?? null;
  const [noticeOpen, setNoticeOpen] = useState(true);
  const filters = readFilters(params);
  const { siteId, status, statusRaw, q } = filters;
  const viewParam = params.get('view');
  const gridRef = useRef<AgGridReact<Device>>(null);
  const [now, markNow] = useNow(DEVICE_POLL_MS);
  const notify = useNotify();
  const [selected, setSelected] = useState<Device[]>([]);
  const [bulk, setBulk] = useState<'run' | 'update' | null>(null);
  const [columns, setColumns] = useState<string[]>([...DEFAULT_COLUMNS]);
  const [sort, setSort] = useState<DeviceListViewSort | null>(DEFAULT_SORT);
  const [applied, setApplied] = useState<AppliedFilter | null>(null);
  const [panelOpen, setPanelOpen] = useState(false);
  const [result, setResult] = useState<BlockResult & { gen: number }>({ total: null, error: null, gen: -1 });
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
  const definitions = useQuery({ queryKey: METADATA_DEFINITIONS_QUERY, queryFn: () => metadataFields.definitions().then((r) => r.fields) });
  const filterMeta = useQuery({ queryKey: FILTER_METADATA_QUERY, queryFn: deviceFilters.metadata, enabled: panelOpen });
  const chooserFields = useMemo(() => chooserMetadataFields(definitions.data ?? []), [definitions.data]);
  // The builder keys metadata conditions by the labelled fields; an Engine
  // whose filter metadata lists none yet gets them from the definitions.
  const builderMeta = useMemo(() => {
    const m = filterMeta.data;
    if (!m || (m.metadata_fields?.length ?? 0) > 0) return m;
    return { ...m, metadata_fields: filterableMetadataFields(definitions.data ?? []) };
  }, [filterMeta.data, definitions.data]);
  const labels = useMemo(() => {
    const m = new Map<number, string>();
    for (const d of definitions.data ?? []) if (d.description?.trim()) m.set(d.field_number, d.description.trim());
    return m;
  }, [definitions.data]);

  // One datasource per question; a new one makes the grid drop its blocks and start again.
  const gen = useRef(0);
  const datasource = useMemo(() => {
    const mine = ++gen.current;
    const draft = applied && applied.filterId === null ? applied.tree : null;
    return makeDeviceDatasource(
      { siteId, status, filterId: applied?.filterId ?? null, filter: withHostnameSearch(draft, debounced) },
      (r) => {
        markNow();
        setResult((prev) => (mine === gen.current ? { ...r, gen: mine } : prev));
      },
    );
  }, [siteId, status, applied, debounced, markNow]);
  // Selected rows belong to the old answer; the bar must not act on devices
  // no longer listed. The grid itself keeps them selected across a new datasource.
  useEffect(() => {
    gridRef.current?.api?.deselectAll();
    setSelected([]);
  }, [datasource]);

  // Reload the held blocks now and then (Offline comes from heartbeat age;
  // no event says a device went quiet), and soon after an event about one of them.
  const refresh = useCallback(() => gridRef.current?.api?.refreshInfiniteCache(), []);
  useEffect(() => {
    const t = window.setInterval(refresh, DEVICE_POLL_MS);
    return () => window.clearInterval(t);
  }, [refresh]);
  useEffect(() => {
    let timer: number | null = null;
    const stop = onDeviceGridEvent(({ guid, hostname }) => {
      const api = gridRef.current?.api;
      if (!api || timer !== null) return;
      let held = !guid && !hostname;
      if (guid) held = api.getRowNode(guid) !== undefined;
      else if (hostname)
        api.forEachNode((n) => {
          if (n.data?.hostname.toLowerCase() === hostname.toLowerCase()) held = true;
        });
      if (!held) return;
      timer = window.setTimeout(() => {
        timer = null;
        refresh();
      }, EVENT_REFRESH_MS);
    });
    return () => {
      stop();
      if (timer !== null) window.clearTimeout(timer);
    };
  }, [refresh]);

  useEffect(() => {
    gridRef.current?.api?.refreshCells({ columns: ['last_seen'], force: true });
  }, [now]);

  const columnDefs = useMemo(() => columnDefsFor(columns, sort, labels), [columns, sort, labels]);
  const context = useMemo<GridContext>(() => ({ now }), [now]);
  const getRowId = useCallback((p: GetRowIdParams<Device>) => p.data.guid, []);

  const fromGrid = (state: ColumnState[]) => state.filter((c) => !c.hide && c.colId !== SELECTION_COLUMN);
  const onSortChanged = useCallback(() => {
    const api = gridRef.current?.api;
    if (!api) return;
    const s = fromGrid(api.getColumnState()).find((c) => c.sort);
    setSort(s?.sort ? { column: s.colId, direction: s.sort } : null);
  }, []);
  const onDragStopped = useCallback(() => {
    const api = gridRef.current?.api;
    if (api) setColumns(knownColumns(fromGrid(api.getColumnState()).map((c) => c.colId)));
  }, []);

  // Saved views: picking one restores its columns, sort and filter; the address keeps its ID.
  const viewsQuery = useQuery({ queryKey: DEVICE_VIEWS_QUERY, queryFn: deviceListViews.list });
  const restore = useCallback(
    async (v: DeviceListView | null) => {
      if (!v) {
        setColumns([...DEFAULT_COLUMNS]);
        setSort(DEFAULT_SORT);
        setApplied(null);
        return;
      }
      let filter: AppliedFilter | null = v.filter ? { filterId: null, tree: groupOf(v.filter), name: null } : null;
      if (v.filter_id) {
        filter = { filterId: v.filter_id, tree: emptyGroup(), name: null };
        try {
          const saved = await queryClient.fetchQuery({ queryKey: DEVICE_FILTERS_QUERY, queryFn: deviceFilters.list });
          const f = saved.find((x) => x.id === v.filter_id);
          if (f) filter = { filterId: f.id, tree: groupOf(f.filter), name: f.name };
        } catch {
          // The grid still filters by the ID; only the panel lacks the tree.
        }
      }
      // All at once, so the grid asks one question for the view.
      setColumns(knownColumns(v.columns));
      setSort(v.sort);
      setApplied(filter);
    },
    [queryClient],
  );
  // A view named in the address is restored before the grid asks for anything.
  const [booted, setBooted] = useState(viewParam === null);
  const restoredView = useRef<string | null>(null);
  useEffect(() => {
    if (viewsQuery.isError) setBooted(true);
    if (!viewsQuery.data || restoredView.current === viewParam) return;
    restoredView.current = viewParam;
    const v = viewParam ? viewsQuery.data.find((x) => String(x.id) === viewParam) ?? null : null;
    void restore(v).finally(() => setBooted(true));
  }, [viewsQuery.data, viewsQuery.isError, viewParam, restore]);
  const selectView = (v: DeviceListView | null) => {
    restoredView.current = v ? String(v.id) : null;
    void restore(v);
    setParams(
      (p) => {
        const next = new URLSearchParams(p);
        if (v) next.set('view', String(v.id));
        else next.delete('view');
        return next;
      },
      { state: null },
    );
  };
  const viewState: ViewState = {
    columns: knownColumns(columns),
    sort,
    filter_id: applied?.filterId ?? null,
    filter: applied && applied.filterId === null ? applied.tree : null,
  };

  const sites = sitesQuery.data ?? [];
  const filtered = siteId !== null || status !== null || q.trim() !== '' || applied !== null;
  const total = result.total;
  const empty = total === 0 && result.error === null && !filtered;
  const unknownSite = siteId !== null && sitesQuery.isSuccess && !sites.some((s) => s.site_id === siteId);

  return (
    <Box>
      <PageHeader
        title="Devices"
        subtitle="Connected: recent heartbeat and the agent socket up. Disconnected: heartbeat without the socket. Offline: no recent heartbeat."
        actions={
          <Tooltip title="Refresh">
            <IconButton aria-label="Refresh devices" onClick={refresh}>
              <RefreshIcon />
            </IconButton>
          </Tooltip>
        }
      />
      {notice && noticeOpen && (
        <Alert severity="success" variant="outlined" onClose={() => setNoticeOpen(false)} sx={{ mb: 1.5 }} data-testid="devices-notice">
          {notice}
        </Alert>
      )}
      <Box sx={{ display: 'flex', gap: 1.5, mb: 2, flexWrap: 'wrap', alignItems: 'center' }} role="search" aria-label="Device filters">
        <SearchField
          label="Search hostname"
          value={search}
          onChange={(value) => {
            written.current = value;
            setSearch(value);
            update({ q: value }, true);
          }}
          htmlInput={{ spellCheck: false, autoCapitalize: 'none' }}
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
        <Button
          startIcon={
            <Badge color="primary" variant="dot" invisible={applied === null}>
              <FilterListIcon />
            </Badge>
          }
          onClick={() => setPanelOpen((o) => !o)}
          aria-expanded={panelOpen}
        >
          Filter
        </Button>
        {applied && (
          <Chip
            size="small"
            color="primary"
            variant="outlined"
            label={applied.name ? `Filter: ${applied.name}` : `Custom filter (${countConditions(applied.tree)})`}
            onDelete={() => setApplied(null)}
            data-testid="applied-filter"
          />
        )}
        {filtered && (
          <Button
            onClick={() => {
              setApplied(null);
              update({ siteId: null, status: null, q: '' });
            }}
          >
            Clear filters
          </Button>
        )}
        <Box sx={{ flex: 1 }} />
        <ViewsBar user={user} current={viewState} selectedId={viewParam ? Number(viewParam) : null} onSelect={selectView} />
        <ColumnChooser columns={columns} metadataFields={chooserFields} onChange={(c) => setColumns(knownColumns(c))} />
      </Box>
      {panelOpen &&
        (builderMeta ? (
          <FilterPanel meta={builderMeta} applied={applied} onApply={setApplied} />
        ) : filterMeta.isError ? (
          <ErrorAlert error={filterMeta.error} />
        ) : (
          <Typography variant="body2" color="text.secondary" sx={{ mb: 2 }}>
            Loading the filter fields…
          </Typography>
        ))}
      <Box sx={{ display: 'flex', gap: 1, alignItems: 'center', mb: 1, minHeight: 32 }}>
        {total !== null && (
          <Typography variant="body2" color="text.secondary" data-testid="device-count">
            {total === 1 ? '1 device' : `${total.toLocaleString()} devices`}
          </Typography>
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
      </Box>
      {unknownSite && (
        <Alert severity="warning" variant="outlined" sx={{ mb: 1.5 }}>
          Site {siteId} is not one of your sites, or it no longer exists.
        </Alert>
      )}
      {sitesQuery.isError && <ErrorAlert error={sitesQuery.error} />}
      {result.error !== null && <ErrorAlert error={result.error} />}
      {empty && <EmptyState />}
      {/* Kept mounted when empty: the periodic refresh notices the first device. */}
      <Box
        sx={{
          display: empty ? 'none' : 'block',
          height: 'max(420px, calc(100vh - 300px))',
          '& .mono': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 12.5 },
        }}
      >
        {booted ? (
          <AgGridReact<Device>
            ref={gridRef}
            theme={gridTheme}
            rowModelType="infinite"
            datasource={datasource}
            cacheBlockSize={BLOCK_SIZE}
            maxBlocksInCache={MAX_BLOCKS}
            infiniteInitialRowCount={1}
            columnDefs={columnDefs}
            defaultColDef={{ sortable: true, resizable: true, filter: false }}
            context={context}
            getRowId={getRowId}
            rowSelection={ROW_SELECTION}
            onSelectionChanged={onSelectionChanged}
            onSortChanged={onSortChanged}
            onDragStopped={onDragStopped}
            overlayNoRowsTemplate={result.error !== null ? 'The device list could not be loaded.' : 'No devices match these filters.'}
            suppressCellFocus
            suppressColumnVirtualisation
            animateRows={false}
          />
        ) : (
          <Typography variant="body2" color="text.secondary">
            Loading the view…
          </Typography>
        )}
      </Box>
      {total === 0 && filtered && (
        <Typography variant="body2" color="text.secondary" sx={{ mt: 1 }} data-testid="devices-none-match">
          No devices match these filters.
        </Typography>
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
