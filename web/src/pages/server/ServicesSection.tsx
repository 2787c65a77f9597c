import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import FormControl from '@mui/material/FormControl';
import InputLabel from '@mui/material/InputLabel';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import Select from '@mui/material/Select';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import Typography from '@mui/material/Typography';
import Alert from '@mui/material/Alert';
import { services } from '../../api/endpoints';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatDateTime } from '../../components/format';

export interface ServiceSite {
  name?: string | null;
  site_worker_slug?: string | null;
}

/**
 * Service actions, for administrators: restart a site worker, reload the
 * edge certificate, reconcile tunnels (each a workflow whose outcome is
 * listed), and restart the Engine where a supervisor runs it.
 */
export function ServicesSection({ sites }: { sites: ServiceSite[] }) {
  const qc = useQueryClient();
  const [slug, setSlug] = useState('');
  const [note, setNote] = useState<string | null>(null);
  const actions = useQuery({ queryKey: ['service-actions'], queryFn: services.actions, refetchInterval: 5_000 });
  const refresh = () => void qc.invalidateQueries({ queryKey: ['service-actions'] });
  const act = useMutation({
    mutationFn: ({ key, action }: { key: string; action: 'restart' | 'reload_certificate' | 'reconcile_tunnels' }) =>
      services.action(key, action),
    onSuccess: () => {
      setNote(null);
      refresh();
    },
  });
  const restartEngine = useMutation({
    mutationFn: () => services.restart('engine'),
    onSuccess: (r) => setNote(r.detail),
  });
  const slugs = sites.map((s) => s.site_worker_slug).filter((s): s is string => !!s);

  return (
    <Paper variant="outlined" sx={{ p: 2.5, mt: 2, mb: 2 }} data-testid="services">
      <Typography variant="subtitle1" component="h2" sx={{ fontWeight: 600, mb: 1 }}>
        Services
      </Typography>
      <Box sx={{ display: 'flex', gap: 1, flexWrap: 'wrap', alignItems: 'center', mb: 1.5 }}>
        <FormControl size="small" sx={{ minWidth: 180 }}>
          <InputLabel id="restart-site-label">Site worker</InputLabel>
          <Select labelId="restart-site-label" label="Site worker" value={slug} onChange={(e) => setSlug(String(e.target.value))}>
            {slugs.map((s) => (
              <MenuItem key={s} value={s}>
                {s}
              </MenuItem>
            ))}
          </Select>
        </FormControl>
        <Button
          variant="outlined"
          disabled={!slug || act.isPending}
          onClick={() => act.mutate({ key: `worker:site:${slug}`, action: 'restart' })}
        >
          Restart site worker
        </Button>
        <Button variant="outlined" disabled={act.isPending} onClick={() => act.mutate({ key: 'edge', action: 'reload_certificate' })}>
          Reload certificate
        </Button>
        <Button variant="outlined" disabled={act.isPending} onClick={() => act.mutate({ key: 'tunnels', action: 'reconcile_tunnels' })}>
          Reconcile tunnels
        </Button>
        <Button variant="outlined" color="warning" disabled={restartEngine.isPending} onClick={() => restartEngine.mutate()}>
          Restart Engine
        </Button>
      </Box>
      {note && <Alert severity="info">{note}</Alert>}
      {act.isError && <ErrorAlert error={act.error} />}
      {restartEngine.isError && <ErrorAlert error={restartEngine.error} />}
      {actions.isError && <ErrorAlert error={actions.error} />}
      {(actions.data ?? []).length > 0 && (
        <Table size="small" aria-label="Service actions">
          <TableHead>
            <TableRow>
              <TableCell>Started</TableCell>
              <TableCell>Service</TableCell>
              <TableCell>Action</TableCell>
              <TableCell>Status</TableCell>
              <TableCell>Outcome</TableCell>
            </TableRow>
          </TableHead>
          <TableBody>
            {(actions.data ?? []).map((a) => (
              <TableRow key={a.workflow_id}>
                <TableCell>{formatDateTime(a.started_at)}</TableCell>
                <TableCell>{a.service_key}</TableCell>
                <TableCell>{a.action}</TableCell>
                <TableCell>{a.status}</TableCell>
                <TableCell>{a.error || a.result?.detail || ''}</TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      )}
    </Paper>
  );
}
