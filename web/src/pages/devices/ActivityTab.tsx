import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { ColDef } from 'ag-grid-community';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import DeleteSweepIcon from '@mui/icons-material/DeleteSweep';
import { devices as devicesApi } from '../../api/endpoints';
import type { ActivityRow } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatCompactDateTime, formatDateTime } from '../../components/format';
import { InventoryGrid } from './InventoryGrid';
import { deviceActivityKey } from './queries';

const jobName = (row: ActivityRow) => {
  // metadata is whatever JSON the activity's kind records.
  const meta = row.metadata as Record<string, unknown> | null;
  const name = meta?.scheduled_job_name;
  return typeof name === 'string' && name ? name : null;
};

const columns: ColDef<ActivityRow>[] = [
  {
    field: 'created_at',
    headerName: 'When',
    width: 160,
    sort: 'desc',
    filter: false,
    valueFormatter: (p) => formatCompactDateTime(p.value, true),
    tooltipValueGetter: (p) => formatDateTime(p.value),
  },
  { field: 'kind', headerName: 'Kind', width: 150 },
  {
    field: 'summary',
    headerName: 'Summary',
    flex: 2,
    minWidth: 220,
    valueGetter: (p) => (p.data ? (jobName(p.data) ? `${p.data.summary} (${jobName(p.data)})` : p.data.summary) : ''),
  },
  { field: 'actor', headerName: 'By', width: 130, valueFormatter: (p) => p.value || '—' },
  { field: 'status', headerName: 'Status', width: 120 },
  {
    field: 'finished_at',
    headerName: 'Finished',
    width: 160,
    filter: false,
    valueFormatter: (p) => (p.value ? formatCompactDateTime(p.value, true) : '—'),
  },
];

export function ActivityTab({ hostname }: { hostname: string }) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const query = useQuery({ queryKey: deviceActivityKey(hostname), queryFn: () => devicesApi.activity(hostname) });
  const clear = useMutation({
    mutationFn: () => devicesApi.clearActivity(hostname),
    onSuccess: () => {
      queryClient.setQueryData(deviceActivityKey(hostname), []);
      void queryClient.invalidateQueries({ queryKey: deviceActivityKey(hostname) });
      setConfirming(false);
    },
  });

  const rows = query.data ?? [];
  return (
    <Box>
      <Box sx={{ display: 'flex', justifyContent: 'flex-end', mb: 1 }}>
        <Button
          variant="outlined"
          color="error"
          startIcon={<DeleteSweepIcon />}
          disabled={rows.length === 0}
          onClick={() => {
            clear.reset();
            setConfirming(true);
          }}
        >
          Clear activity
        </Button>
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      {query.isPending ? (
        <Box role="status" sx={{ typography: 'body2', color: 'text.secondary' }}>
          Loading activity…
        </Box>
      ) : (
        !query.isError && (
          <InventoryGrid<ActivityRow>
            noun="entries"
            rows={rows}
            columnDefs={columns}
            getRowId={(p) => String(p.data.id)}
            emptyText="No activity recorded for this device yet."
            height={440}
          />
        )
      )}
      {confirming && (
        <Dialog open onClose={clear.isPending ? undefined : () => setConfirming(false)} fullWidth maxWidth="xs">
          <DialogTitle>Clear the activity of {hostname}?</DialogTitle>
          <DialogContent>
            <ErrorAlert error={clear.error} />
            <DialogContentText sx={{ fontSize: 14 }}>
              All {rows.length} {rows.length === 1 ? 'entry' : 'entries'} of this device’s activity history will be
              deleted. This cannot be undone.
            </DialogContentText>
          </DialogContent>
          <DialogActions>
            <Button onClick={() => setConfirming(false)} disabled={clear.isPending}>
              Cancel
            </Button>
            <Button color="error" variant="contained" onClick={() => clear.mutate()} disabled={clear.isPending}>
              {clear.isPending ? 'Clearing…' : 'Clear activity'}
            </Button>
          </DialogActions>
        </Dialog>
      )}
    </Box>
  );
}
