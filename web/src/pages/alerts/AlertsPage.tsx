// The Alerts page (/alerts): the watchdog incident queue (GET
// /api/watchdogs/incidents) with its counts per state, a state filter, and
// the operator's actions: acknowledge an Open incident, suppress one with a
// reason, open a suppressed one again. Watchdog events refresh it live
// (App.tsx invalidates INCIDENTS_QUERY).
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import Paper from '@mui/material/Paper';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import TextField from '@mui/material/TextField';
import ToggleButton from '@mui/material/ToggleButton';
import ToggleButtonGroup from '@mui/material/ToggleButtonGroup';
import Typography from '@mui/material/Typography';
import { incidents as incidentsApi } from '../../api/endpoints';
import type { Incident } from '../../api/types';
import { PageHeader } from '../../components/ComingSoon';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';
import { formatDateTime } from '../../components/format';
import { INCIDENTS_QUERY } from './queries';


/** SPEC "Watchdog incident" states, as the Engine spells them. */
export const STATES = ['Open', 'Acknowledged', 'Suppressed', 'Resolved'] as const;
type State = (typeof STATES)[number];

/** The queue shows active incidents unless asked otherwise. */
const ACTIVE: State[] = ['Open', 'Acknowledged', 'Suppressed'];

const severityColor: Record<string, 'info' | 'warning' | 'error'> = { info: 'info', warning: 'warning', critical: 'error' };

export default function AlertsPage() {
  const [states, setStates] = useState<State[]>(ACTIVE);
  const [suppressing, setSuppressing] = useState<Incident | null>(null);
  const queryClient = useQueryClient();
  const query = useQuery({
    queryKey: [...INCIDENTS_QUERY, states],
    queryFn: () => incidentsApi.queue(states),
    refetchInterval: 30_000,
  });
  const done = () => void queryClient.invalidateQueries({ queryKey: INCIDENTS_QUERY });
  const acknowledge = useMutation({ mutationFn: (id: number) => incidentsApi.acknowledge(id), onSuccess: done });
  const reopen = useMutation({ mutationFn: (id: number) => incidentsApi.setState(id, 'Open'), onSuccess: done });
  const byState = (query.data?.by_state ?? {}) as Record<string, number>;
  const rows = query.data?.incidents ?? [];

  return (
    <>
      <PageHeader title="Alerts" subtitle="Incidents the watchdogs opened on the devices of your sites." />
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 2, mb: 1.5, flexWrap: 'wrap' }}>
        <ToggleButtonGroup
          size="small"
          value={states}
          onChange={(_, v: State[]) => setStates(v)}
          aria-label="Incident states shown"
        >
          {STATES.map((s) => (
            <ToggleButton key={s} value={s} data-testid={`state-${s}`}>
              {s}
              <Chip size="small" label={byState[s] ?? 0} sx={{ ml: 1 }} data-testid={`count-${s}`} />
            </ToggleButton>
          ))}
        </ToggleButtonGroup>
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <ErrorAlert error={acknowledge.error ?? reopen.error} />
      <Paper variant="outlined">
        <Table size="small" aria-label="Incidents">
          <TableHead>
            <TableRow>
              <TableCell>Severity</TableCell>
              <TableCell>Incident</TableCell>
              <TableCell>State</TableCell>
              <TableCell>Opened</TableCell>
              <TableCell>Owner / reason</TableCell>
              <TableCell align="right" />
            </TableRow>
          </TableHead>
          <TableBody>
            {rows.map((i) => (
              <TableRow key={i.id} data-testid={`incident-${i.id}`}>
                <TableCell>
                  <Chip size="small" color={severityColor[i.severity] ?? 'default'} label={i.severity} />
                </TableCell>
                <TableCell>{i.title}</TableCell>
                <TableCell>{i.state}</TableCell>
                <TableCell>{formatDateTime(i.opened_at)}</TableCell>
                <TableCell>{i.state === 'Suppressed' ? i.suppress_reason : (i.acknowledged_by ?? '')}</TableCell>
                <TableCell align="right" sx={{ whiteSpace: 'nowrap' }}>
                  {i.state === 'Open' && (
                    <Button size="small" onClick={() => acknowledge.mutate(i.id)} disabled={acknowledge.isPending}>
                      Acknowledge
                    </Button>
                  )}
                  {(i.state === 'Open' || i.state === 'Acknowledged') && (
                    <Button size="small" onClick={() => setSuppressing(i)}>
                      Suppress
                    </Button>
                  )}
                  {i.state === 'Suppressed' && (
                    <Button size="small" onClick={() => reopen.mutate(i.id)} disabled={reopen.isPending}>
                      Open again
                    </Button>
                  )}
                </TableCell>
              </TableRow>
            ))}
            {rows.length === 0 && !query.isPending && (
              <TableRow>
                <TableCell colSpan={6}>
                  <Typography variant="body2" color="text.secondary">
                    No incidents.
                  </Typography>
                </TableCell>
              </TableRow>
            )}
          </TableBody>
        </Table>
      </Paper>
      {suppressing && <SuppressDialog incident={suppressing} onClose={() => setSuppressing(null)} onDone={done} />}
    </>
  );
}

function SuppressDialog({ incident, onClose, onDone }: { incident: Incident; onClose: () => void; onDone: () => void }) {
  const [reason, setReason] = useState('');
  const mutation = useMutation({
    mutationFn: (r: string) => incidentsApi.setState(incident.id, 'Suppressed', r),
    onSuccess: () => {
      onDone();
      onClose();
    },
  });
  const blank = reason.trim() === '';
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="sm" aria-labelledby="suppress-title">
      <DialogTitle id="suppress-title">Suppress “{incident.title}”</DialogTitle>
      <Box
        component="form"
        onSubmit={(e) => {
          e.preventDefault();
          if (!blank) mutation.mutate(reason.trim());
        }}
      >
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={['reason']} />
          <TextField
            autoFocus
            fullWidth
            label="Reason"
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            error={Boolean(fieldError(mutation.error, 'reason'))}
            helperText={fieldError(mutation.error, 'reason') ?? 'Required: a suppressed incident says why.'}
            sx={{ mt: 1 }}
          />
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={blank || mutation.isPending}>
            Suppress
          </Button>
        </DialogActions>
      </Box>
    </Dialog>
  );
}
