import { useEffect, useMemo, useState } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { AgGridReact, type CustomCellRendererProps } from 'ag-grid-react';
import type { ColDef, GetRowIdParams } from 'ag-grid-community';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import IconButton from '@mui/material/IconButton';
import InputAdornment from '@mui/material/InputAdornment';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import ClearIcon from '@mui/icons-material/Clear';
import RefreshIcon from '@mui/icons-material/Refresh';
import { audit } from '../../api/endpoints';
import type { AuditEntry } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatCompactDateTime } from '../../components/format';
import { gridTheme } from '../../components/grid';

export const AUDIT_QUERY = 'audit';
export const AUDIT_PAGE_SIZE = 200;

function OutcomeCell({ data }: CustomCellRendererProps<AuditEntry>) {
  if (!data) return null;
  const ok = data.outcome === 'success';
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', height: '100%' }}>
      <Chip
        size="small"
        label={data.outcome}
        color={ok ? 'success' : 'error'}
        variant={ok ? 'outlined' : 'filled'}
        sx={{ height: 20, fontSize: 12 }}
        data-testid="audit-outcome"
      />
    </Box>
  );
}

/** Waits until typing pauses before the value is used. */
function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = window.setTimeout(() => setV(value), ms);
    return () => window.clearTimeout(t);
  }, [value, ms]);
  return v;
}

export default function AuditPanel() {
  const [usernameInput, setUsernameInput] = useState('');
  const username = useDebounced(usernameInput.trim().toLowerCase(), 300);

  const query = useInfiniteQuery({
    queryKey: [AUDIT_QUERY, username],
    queryFn: ({ pageParam }) => audit.list({ limit: AUDIT_PAGE_SIZE, beforeId: pageParam, username }),
    initialPageParam: null as number | null,
    getNextPageParam: (last) => last.next_before_id ?? undefined,
    refetchOnWindowFocus: false,
  });

  const rows = useMemo(() => query.data?.pages.flatMap((p) => p.entries ?? []) ?? [], [query.data]);

  const columnDefs = useMemo<ColDef<AuditEntry>[]>(
    () => [
      {
        field: 'at',
        headerName: 'Time',
        width: 170,
        cellClass: 'mono',
        valueFormatter: (p) => formatCompactDateTime(p.value, true),
        tooltipValueGetter: (p) => p.value,
        filter: false,
      },
      { field: 'username', headerName: 'Username', width: 110, valueFormatter: (p) => p.value || '—' },
      { field: 'role', headerName: 'Role', width: 84, valueFormatter: (p) => p.value || '—' },
      {
        field: 'action',
        headerName: 'Action',
        flex: 3,
        minWidth: 280,
        cellClass: 'mono',
        tooltipValueGetter: (p) => p.value,
      },
      {
        field: 'target',
        headerName: 'Target',
        flex: 1,
        minWidth: 130,
        cellClass: 'mono',
        valueFormatter: (p) => p.value || '—',
        tooltipValueGetter: (p) => p.value || undefined,
      },
      {
        field: 'api_token_id',
        headerName: 'Via',
        width: 92,
        filter: false,
        valueFormatter: (p) => (p.value ? `token #${p.value}` : 'session'),
        tooltipValueGetter: (p) => (p.value ? `API token ${p.value}` : undefined),
      },
      { field: 'client_addr', headerName: 'Client address', width: 116, tooltipValueGetter: (p) => p.value || undefined, cellClass: 'mono', valueFormatter: (p) => p.value || '—' },
      { field: 'status', headerName: 'Status', width: 76, type: 'numericColumn', filter: false },
      { field: 'outcome', headerName: 'Outcome', width: 130, cellRenderer: OutcomeCell },
    ],
    [],
  );

  const getRowId = (p: GetRowIdParams<AuditEntry>) => String(p.data.id);

  return (
    <Box>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, mb: 1.5, flexWrap: 'wrap' }}>
        <TextField
          label="Username"
          size="small"
          value={usernameInput}
          onChange={(e) => setUsernameInput(e.target.value)}
          helperText={null}
          sx={{ width: 240 }}
          slotProps={{
            htmlInput: { spellCheck: false, autoCapitalize: 'none' },
            input: {
              endAdornment: usernameInput ? (
                <InputAdornment position="end">
                  <IconButton size="small" aria-label="Clear username filter" onClick={() => setUsernameInput('')} edge="end">
                    <ClearIcon fontSize="small" />
                  </IconButton>
                </InputAdornment>
              ) : undefined,
            },
          }}
        />
        <Box sx={{ flex: 1, typography: 'body2', color: 'text.secondary' }}>
          Every state-changing request, newest first. Request bodies are never recorded.
        </Box>
        <Tooltip title="Refresh">
          <span>
            <IconButton aria-label="Refresh audit" onClick={() => void query.refetch()} disabled={query.isFetching}>
              <RefreshIcon />
            </IconButton>
          </span>
        </Tooltip>
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <Box sx={{ '& .mono': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 12.5 } }}>
        <AgGridReact<AuditEntry>
          theme={gridTheme}
          rowData={rows}
          loading={query.isPending}
          columnDefs={columnDefs}
          defaultColDef={{ sortable: true, resizable: true, filter: 'agTextColumnFilter' }}
          getRowId={getRowId}
          domLayout="autoHeight"
          overlayNoRowsTemplate={username ? 'No entries for this username.' : 'No entries yet.'}
          suppressCellFocus
          suppressColumnVirtualisation
          tooltipShowDelay={400}
          animateRows={false}
        />
      </Box>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 2, mt: 1.5 }}>
        <Box sx={{ typography: 'body2', color: 'text.secondary' }} data-testid="audit-count">
          {rows.length} {rows.length === 1 ? 'entry' : 'entries'}
          {query.hasNextPage ? ' shown' : query.isSuccess && rows.length > 0 ? ', the oldest reached' : ''}
        </Box>
        {query.hasNextPage && (
          <Button variant="outlined" size="small" onClick={() => void query.fetchNextPage()} disabled={query.isFetchingNextPage}>
            {query.isFetchingNextPage ? 'Loading…' : 'Load older'}
          </Button>
        )}
      </Box>
    </Box>
  );
}
