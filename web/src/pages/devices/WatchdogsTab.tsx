// The Watchdogs tab: the watchdogs that target the device or have an
// override or an active incident on it (GET /api/devices/<guid>/watchdogs),
// with their incident state; an operator mutes one here with a reason
// (which suppresses its active incident) or unmutes it.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import Typography from '@mui/material/Typography';
import { deviceWatchdogs } from '../../api/endpoints';
import type { DeviceWatchdog } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { INCIDENTS_QUERY } from '../alerts/queries';
import { ReasonDialog } from '../alerts/ReasonDialog';

/** Watchdog events refresh it with the alert queue (App.tsx). */
export const deviceWatchdogsKey = (guid: string) => [...INCIDENTS_QUERY, 'device', guid] as const;

export function WatchdogsTab({ guid }: { guid: string }) {
  const queryClient = useQueryClient();
  const [muting, setMuting] = useState<DeviceWatchdog | null>(null);
  const query = useQuery({ queryKey: deviceWatchdogsKey(guid), queryFn: () => deviceWatchdogs.list(guid) });
  const unmute = useMutation({
    mutationFn: (id: number) => deviceWatchdogs.setOverride(guid, id, false),
    onSuccess: (rows) => queryClient.setQueryData(deviceWatchdogsKey(guid), rows),
  });
  const rows = query.data ?? [];
  return (
    <Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <ErrorAlert error={unmute.error} />
      <Table size="small" aria-label="Watchdogs">
        <TableHead>
          <TableRow>
            <TableCell>Watchdog</TableCell>
            <TableCell>Severity</TableCell>
            <TableCell>Incident</TableCell>
            <TableCell>Override</TableCell>
            <TableCell align="right" />
          </TableRow>
        </TableHead>
        <TableBody>
          {rows.map((r) => (
            <TableRow key={r.watchdog.id} data-testid={`watchdog-${r.watchdog.id}`}>
              <TableCell>
                {r.watchdog.name}
                {!r.targeted && <Chip size="small" label="not targeted" variant="outlined" sx={{ ml: 1 }} />}
              </TableCell>
              <TableCell>{r.watchdog.severity}</TableCell>
              <TableCell>{r.incident ? r.incident.state : 'none'}</TableCell>
              <TableCell>{r.override ? `Muted: ${r.override.reason}` : ''}</TableCell>
              <TableCell align="right">
                {r.override ? (
                  <Button size="small" onClick={() => unmute.mutate(r.watchdog.id)} disabled={unmute.isPending}>
                    Unmute
                  </Button>
                ) : (
                  <Button size="small" onClick={() => setMuting(r)}>
                    Mute
                  </Button>
                )}
              </TableCell>
            </TableRow>
          ))}
          {rows.length === 0 && !query.isPending && (
            <TableRow>
              <TableCell colSpan={5}>
                <Typography variant="body2" color="text.secondary">
                  No watchdog applies to this device.
                </Typography>
              </TableCell>
            </TableRow>
          )}
        </TableBody>
      </Table>
      {muting && <MuteDialog guid={guid} row={muting} onClose={() => setMuting(null)} />}
    </Box>
  );
}

function MuteDialog({ guid, row, onClose }: { guid: string; row: DeviceWatchdog; onClose: () => void }) {
  const queryClient = useQueryClient();
  return (
    <ReasonDialog
      title={`Mute “${row.watchdog.name}” on this device`}
      action="Mute"
      helperText="Required. Its active incident here is suppressed with this reason."
      submit={(r) => deviceWatchdogs.setOverride(guid, row.watchdog.id, true, r)}
      onDone={(rows) => {
        queryClient.setQueryData(deviceWatchdogsKey(guid), rows);
        void queryClient.invalidateQueries({ queryKey: INCIDENTS_QUERY });
      }}
      onClose={onClose}
    />
  );
}
