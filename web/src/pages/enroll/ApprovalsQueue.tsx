// The site's enrollment requests (docs/api.md "Approvals"): pending first,
// approve or deny, and what the Engine made of it.
import { useMemo, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import { enrollment } from '../../api/endpoints';
import { useSession } from '../../auth/session';
import type { DeviceApproval } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatDateTime, formatRelative } from '../../components/format';
import { DEVICES_QUERY } from '../devices/queries';
import { APPROVALS_POLL_MS, APPROVALS_QUERY } from './shared';

/** Decided requests shown under the pending ones. */
const RECENT_DECIDED = 20;

const STATUS: Record<string, { label: string; color: 'warning' | 'success' | 'error' | 'default' | 'info' }> = {
  pending: { label: 'Pending', color: 'warning' },
  approved: { label: 'Approved', color: 'info' },
  enrolled: { label: 'Enrolled', color: 'success' },
  denied: { label: 'Denied', color: 'error' },
  expired: { label: 'Expired', color: 'default' },
};

/** This site's requests, pending first (oldest waiting first), then the most recent decided ones. */
export function orderApprovals(list: readonly DeviceApproval[], siteId: number): DeviceApproval[] {
  const mine = list.filter((a) => a.site_id === siteId);
  const t = (s: string | null) => (s ? Date.parse(s) : 0);
  const pending = mine.filter((a) => a.status === 'pending').sort((a, b) => t(a.requested_at) - t(b.requested_at));
  const decided = mine
    .filter((a) => a.status !== 'pending')
    .sort((a, b) => t(b.decided_at ?? b.requested_at) - t(a.decided_at ?? a.requested_at))
    .slice(0, RECENT_DECIDED);
  return [...pending, ...decided];
}

function resultText(a: DeviceApproval, decision: 'approve' | 'deny'): { severity: 'success' | 'info'; text: string } {
  if (a.status === 'pending')
    return {
      severity: 'info',
      text: `The ${decision === 'approve' ? 'approval' : 'denial'} of ${a.hostname} was sent; the Engine has not recorded it yet. This list shows it once it has.`,
    };
  if (a.status === 'denied') return { severity: 'success', text: `Denied ${a.hostname}. Its agent is told at its next poll.` };
  if (a.status === 'enrolled') return { severity: 'success', text: `${a.hostname} is enrolled.` };
  return { severity: 'success', text: `Approved ${a.hostname}. Its agent collects its tokens at its next poll and then appears under Devices.` };
}

export function ApprovalsQueue({ siteId }: { siteId: number }) {
  const queryClient = useQueryClient();
  const isAdmin = useSession().user.role === 'admin';
  const [result, setResult] = useState<{ severity: 'success' | 'info'; text: string } | null>(null);
  const query = useQuery({ queryKey: APPROVALS_QUERY, queryFn: () => enrollment.approvals(), refetchInterval: APPROVALS_POLL_MS });
  const rows = useMemo(() => orderApprovals(query.data ?? [], siteId), [query.data, siteId]);

  const decide = useMutation({
    mutationFn: ({ id, decision }: { id: string; decision: 'approve' | 'deny' }) =>
      decision === 'approve' ? enrollment.approve(id) : enrollment.deny(id),
    onSuccess: (a, { decision }) => {
      queryClient.setQueryData<DeviceApproval[]>(APPROVALS_QUERY, (list) => list?.map((x) => (x.id === a.id ? a : x)));
      void queryClient.invalidateQueries({ queryKey: APPROVALS_QUERY });
      void queryClient.invalidateQueries({ queryKey: DEVICES_QUERY });
      setResult(resultText(a, decision));
    },
    onError: () => setResult(null),
  });
  // One decision at a time; the button of the request being decided says so.
  const deciding = decide.isPending ? decide.variables : undefined;
  const pendingCount = rows.filter((a) => a.status === 'pending').length;

  return (
    <Box>
      {result && (
        <Alert severity={result.severity} variant="outlined" onClose={() => setResult(null)} sx={{ mb: 1 }} data-testid="approval-result">
          {result.text}
        </Alert>
      )}
      <ErrorAlert error={decide.error} />
      {query.isError && <ErrorAlert error={query.error} />}
      {query.isPending ? (
        <Typography variant="body2" color="text.secondary" role="status">
          Loading requests…
        </Typography>
      ) : rows.length === 0 ? (
        !query.isError && (
          <Typography variant="body2" color="text.secondary" data-testid="no-approvals">
            No enrollment requests for this site yet. A request appears here when an agent runs the enroll command.
          </Typography>
        )
      ) : (
        <>
          <Typography variant="body2" color="text.secondary" sx={{ mb: 0.5 }}>
            {pendingCount === 0 ? 'Nothing waits for a decision.' : `${pendingCount} waiting for a decision.`}
          </Typography>
          <Table size="small" aria-label="Enrollment requests">
            <TableHead>
              <TableRow>
                <TableCell>Hostname</TableCell>
                <TableCell>OS / agent</TableCell>
                <TableCell>From</TableCell>
                <TableCell>Requested</TableCell>
                <TableCell>Status</TableCell>
                <TableCell align="right">Decision</TableCell>
              </TableRow>
            </TableHead>
            <TableBody>
              {rows.map((a) => {
                const s = STATUS[a.status] ?? { label: a.status, color: 'default' as const };
                return (
                  <TableRow key={a.id} data-approval-id={a.id}>
                    <TableCell>
                      <Box sx={{ fontWeight: 600 }}>{a.hostname}</Box>
                      <Tooltip title={`Key thumbprint ${a.key_thumbprint}`}>
                        <Box
                          component="span"
                          sx={{ fontSize: 11, color: 'text.secondary', fontFamily: 'ui-monospace, Menlo, Consolas, monospace' }}
                        >
                          fingerprint {a.fingerprint.slice(0, 16)}
                          {a.fingerprint.length > 16 ? '…' : ''}
                        </Box>
                      </Tooltip>
                    </TableCell>
                    <TableCell>
                      {a.operating_system || '—'}
                      <Box sx={{ fontSize: 11, color: 'text.secondary' }}>agent {a.agent_version || '—'}</Box>
                    </TableCell>
                    <TableCell sx={{ fontFamily: 'ui-monospace, Menlo, Consolas, monospace', fontSize: 12 }}>{a.remote_addr || '—'}</TableCell>
                    <TableCell>
                      <time dateTime={a.requested_at} title={formatDateTime(a.requested_at)}>
                        {formatRelative(a.requested_at)}
                      </time>
                    </TableCell>
                    <TableCell>
                      <Chip size="small" label={s.label} color={s.color} variant="outlined" data-testid="approval-status" />
                      {a.readmission && (
                        <Tooltip title="This key belonged to a device that was revoked, purged or quarantined. Only an administrator can let it back in; site auto-approval never does.">
                          <Chip size="small" label="Readmission" color="error" sx={{ ml: 0.5 }} data-testid="approval-readmission" />
                        </Tooltip>
                      )}
                      {a.status !== 'pending' && (a.decided_by || a.auto_approved) && (
                        <Box sx={{ fontSize: 11, color: 'text.secondary', mt: 0.25 }}>
                          {a.auto_approved ? 'auto-approved' : `by ${a.decided_by}`}
                          {a.decided_at ? `, ${formatRelative(a.decided_at)}` : ''}
                        </Box>
                      )}
                    </TableCell>
                    <TableCell align="right" sx={{ whiteSpace: 'nowrap' }}>
                      {a.status === 'pending' ? (
                        <>
                          <Button
                            size="small"
                            variant="contained"
                            aria-label={`Approve ${a.hostname}`}
                            disabled={decide.isPending || (a.readmission && !isAdmin)}
                            title={a.readmission && !isAdmin ? 'Readmission needs an administrator' : undefined}
                            onClick={() => {
                              setResult(null);
                              decide.mutate({ id: a.id, decision: 'approve' });
                            }}
                            sx={{ mr: 1 }}
                          >
                            {deciding?.id === a.id && deciding.decision === 'approve' ? 'Approving…' : 'Approve'}
                          </Button>
                          <Button
                            size="small"
                            variant="outlined"
                            color="error"
                            aria-label={`Deny ${a.hostname}`}
                            disabled={decide.isPending}
                            onClick={() => {
                              setResult(null);
                              decide.mutate({ id: a.id, decision: 'deny' });
                            }}
                          >
                            {deciding?.id === a.id && deciding.decision === 'deny' ? 'Denying…' : 'Deny'}
                          </Button>
                        </>
                      ) : (
                        '—'
                      )}
                    </TableCell>
                  </TableRow>
                );
              })}
            </TableBody>
          </Table>
        </>
      )}
    </Box>
  );
}
