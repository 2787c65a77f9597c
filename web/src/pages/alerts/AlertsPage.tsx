// The Alerts page (/alerts): the watchdog incident queue (GET
// /api/watchdogs/incidents) with its counts per state, a state filter, and
// the operator's actions: acknowledge an Open incident (or every selected
// one at once), suppress one with a reason, open a suppressed one again. Watchdog events refresh it live
// (App.tsx invalidates INCIDENTS_QUERY).
import { useContext, useState } from 'react';
import { Link as RouterLink } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Checkbox from '@mui/material/Checkbox';
import Chip from '@mui/material/Chip';
import Paper from '@mui/material/Paper';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import ToggleButton from '@mui/material/ToggleButton';
import ToggleButtonGroup from '@mui/material/ToggleButtonGroup';
import Typography from '@mui/material/Typography';
import { incidents as incidentsApi } from '../../api/endpoints';
import type { Incident } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { PageHeader } from '../../components/ComingSoon';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatDateTime } from '../../components/format';
import { INCIDENTS_QUERY } from './queries';
import { ReasonDialog } from './ReasonDialog';


/** SPEC "Watchdog incident" states, as the Engine spells them. */
export const STATES = ['Open', 'Acknowledged', 'Suppressed', 'Resolved'] as const;
type State = (typeof STATES)[number];

/** The queue shows active incidents unless asked otherwise. */
const ACTIVE: State[] = ['Open', 'Acknowledged', 'Suppressed'];

const severityColor: Record<string, 'info' | 'warning' | 'error'> = { info: 'info', warning: 'warning', critical: 'error' };

export default function AlertsPage() {
  // Rendered inside the signed-in frame; its tests render it bare.
  const isAdmin = useContext(SessionContext)?.user.role === 'admin';
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
  const [selected, setSelected] = useState<Set<number>>(new Set());
  // Bulk acknowledge: one request per incident (each goes through its
  // incident's workflow); those that fail (acknowledged by someone else
  // meanwhile) stay selected and the first error shows.
  const bulk = useMutation({
    mutationFn: async (ids: number[]) => {
      const failed: number[] = [];
      let first: unknown = null;
      for (const id of ids) {
        try {
          await incidentsApi.acknowledge(id);
        } catch (e) {
          failed.push(id);
          first ??= e;
        }
      }
      setSelected(new Set(failed));
      if (first) throw first;
    },
    onSettled: done,
  });
  const byState = (query.data?.by_state ?? {}) as Record<string, number>;
  const rows = query.data?.incidents ?? [];
  const openIds = rows.filter((i) => i.state === 'Open').map((i) => i.id);
  const chosen = openIds.filter((id) => selected.has(id));
  const toggle = (id: number) =>
    setSelected((cur) => {
      const next = new Set(cur);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

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
        <Button
          variant="outlined"
          size="small"
          disabled={chosen.length === 0 || bulk.isPending}
          onClick={() => bulk.mutate(chosen)}
          data-testid="bulk-acknowledge"
        >
          Acknowledge selected ({chosen.length})
        </Button>
        <Button size="small" component={RouterLink} to="/alerts/watchdogs">
          Watchdogs
        </Button>
        {isAdmin && (
          <Button size="small" component={RouterLink} to="/alerts/channels">
            Notification channels
          </Button>
        )}
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <ErrorAlert error={acknowledge.error ?? reopen.error ?? bulk.error} />
      <Paper variant="outlined">
        <Table size="small" aria-label="Incidents">
          <TableHead>
            <TableRow>
              <TableCell padding="checkbox">
                <Checkbox
                  size="small"
                  inputProps={{ 'aria-label': 'Select every open incident' }}
                  checked={openIds.length > 0 && chosen.length === openIds.length}
                  indeterminate={chosen.length > 0 && chosen.length < openIds.length}
                  disabled={openIds.length === 0}
                  onChange={(e) => setSelected(new Set(e.target.checked ? openIds : []))}
                />
              </TableCell>
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
                <TableCell padding="checkbox">
                  {i.state === 'Open' && (
                    <Checkbox
                      size="small"
                      inputProps={{ 'aria-label': `Select ${i.title}` }}
                      checked={selected.has(i.id)}
                      onChange={() => toggle(i.id)}
                    />
                  )}
                </TableCell>
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
                <TableCell colSpan={7}>
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
  return (
    <ReasonDialog
      title={`Suppress “${incident.title}”`}
      action="Suppress"
      helperText="Required: a suppressed incident says why."
      submit={(r) => incidentsApi.setState(incident.id, 'Suppressed', r)}
      onDone={onDone}
      onClose={onClose}
    />
  );
}
