import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Paper from '@mui/material/Paper';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import Typography from '@mui/material/Typography';
import { cluster } from '../../api/endpoints';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatDateTime } from '../../components/format';

/**
 * The cluster, for administrators (docs/architecture.md "Cluster model"):
 * the Engine's processes with role, version and last seen, the database
 * and Temporal roles, join codes, and the admissions waiting on a
 * decision, each with the key fingerprint the joining host printed.
 */
export function ClusterSection() {
  const qc = useQueryClient();
  const state = useQuery({ queryKey: ['cluster'], queryFn: cluster.state, refetchInterval: 10_000 });
  const releases = useQuery({ queryKey: ['cluster-releases'], queryFn: cluster.releases });
  const [code, setCode] = useState<{ code: string; role: string; expires_at: string } | null>(null);
  const refresh = () => void qc.invalidateQueries({ queryKey: ['cluster'] });
  const issue = useMutation({ mutationFn: cluster.joinCode, onSuccess: (c) => setCode(c) });
  const approve = useMutation({ mutationFn: cluster.approve, onSuccess: refresh });
  const cancel = useMutation({ mutationFn: cluster.cancel, onSuccess: refresh });
  const s = state.data;
  const pending = (s?.admissions ?? []).filter((a) => a.state === 'pending');

  return (
    <Paper variant="outlined" sx={{ p: 2.5, mt: 2, mb: 2 }} data-testid="cluster">
      <Typography variant="subtitle1" component="h2" sx={{ fontWeight: 600, mb: 1 }}>
        Cluster
      </Typography>
      {state.error && <ErrorAlert error={state.error} />}
      {s && s.banner.severity !== 'none' && (
        <Alert severity={s.banner.severity === 'warning' ? 'warning' : 'info'} sx={{ mb: 1.5 }} data-testid="cluster-banner">
          {s.banner.message}
        </Alert>
      )}
      {s && (
        <Typography variant="body2" color="text.secondary" sx={{ mb: 1 }}>
          PostgreSQL {s.postgresql.role}
          {s.postgresql.version ? ` ${s.postgresql.version}` : ''} · Temporal {s.temporal.state} (namespace {s.temporal.namespace})
          {releases.data ? ` · this Engine ${releases.data.current.version}` : ''}
        </Typography>
      )}
      <Table size="small" aria-label="Cluster members">
        <TableHead>
          <TableRow>
            <TableCell>Member</TableCell>
            <TableCell>Role</TableCell>
            <TableCell>Version</TableCell>
            <TableCell>Sites</TableCell>
            <TableCell>Last seen</TableCell>
            <TableCell>State</TableCell>
          </TableRow>
        </TableHead>
        <TableBody>
          {(s?.members ?? []).map((m) => (
            <TableRow key={m.member_id}>
              <TableCell>
                {m.name}
                {m.member_id === s?.member_id ? ' (this replica)' : ''}
                {m.admission_id ? '' : ' · configured by hand'}
              </TableCell>
              <TableCell>{m.role === 'engine' ? 'Engine replica' : 'Site worker'}</TableCell>
              <TableCell>{m.version}</TableCell>
              <TableCell>{m.sites.join(', ') || '—'}</TableCell>
              <TableCell>{formatDateTime(m.last_seen)}</TableCell>
              <TableCell>
                <Chip size="small" label={m.state} color={m.state === 'up' ? 'success' : 'default'} />
              </TableCell>
            </TableRow>
          ))}
        </TableBody>
      </Table>

      <Typography variant="subtitle2" component="h3" sx={{ mt: 2, mb: 1 }}>
        Admissions
      </Typography>
      <Box sx={{ display: 'flex', gap: 1, mb: 1 }}>
        <Button size="small" variant="outlined" onClick={() => issue.mutate('worker')} disabled={issue.isPending}>
          Join code for a worker
        </Button>
        <Button size="small" variant="outlined" onClick={() => issue.mutate('engine')} disabled={issue.isPending}>
          Join code for an Engine replica
        </Button>
      </Box>
      {issue.error && <ErrorAlert error={issue.error} />}
      {code && (
        <Alert severity="info" sx={{ mb: 1 }} data-testid="join-code" onClose={() => setCode(null)}>
          Join code for a {code.role} (shown once, valid until {formatDateTime(code.expires_at)}): <code>{code.code}</code>. On the new host:{' '}
          <code>cairn cluster join --engine-url … --code {code.code} --role {code.role}</code>
        </Alert>
      )}
      {(approve.error || cancel.error) && <ErrorAlert error={approve.error ?? cancel.error} />}
      {pending.length === 0 ? (
        <Typography variant="body2" color="text.secondary">
          No process is waiting to join.
        </Typography>
      ) : (
        <Table size="small" aria-label="Pending admissions">
          <TableHead>
            <TableRow>
              <TableCell>Process</TableCell>
              <TableCell>Key fingerprint</TableCell>
              <TableCell>Asked</TableCell>
              <TableCell />
            </TableRow>
          </TableHead>
          <TableBody>
            {pending.map((a) => (
              <TableRow key={a.id}>
                <TableCell>
                  {a.role === 'engine' ? 'Engine replica' : 'Site worker'} {a.name} ({a.version})
                  {a.sites.length ? ` · ${a.sites.join(', ')}` : ''}
                </TableCell>
                <TableCell>
                  <code>{a.fingerprint}</code>
                </TableCell>
                <TableCell>{formatDateTime(a.requested_at)}</TableCell>
                <TableCell align="right">
                  <Button size="small" onClick={() => approve.mutate(a.id)} disabled={approve.isPending}>
                    Approve
                  </Button>
                  <Button size="small" color="error" onClick={() => cancel.mutate(a.id)} disabled={cancel.isPending}>
                    Cancel
                  </Button>
                </TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      )}
      <Typography variant="caption" color="text.secondary" component="p" sx={{ mt: 1 }}>
        Approve only when the fingerprint matches the one the joining host printed.
      </Typography>
    </Paper>
  );
}
