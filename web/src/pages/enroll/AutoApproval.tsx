// Temporary auto-approval of a site's enrollment requests (SPEC "Enrollment"):
// administrators turn it on for a while; everyone sees until when.
import { useEffect, useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import FormControlLabel from '@mui/material/FormControlLabel';
import MenuItem from '@mui/material/MenuItem';
import Switch from '@mui/material/Switch';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { sites as sitesApi } from '../../api/endpoints';
import type { Site } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatDateTime, formatRelative } from '../../components/format';
import { SITES_QUERY } from '../SiteDialogs';

export const AUTO_APPROVAL_DURATIONS = [
  { seconds: 900, label: '15 minutes' },
  { seconds: 3600, label: '1 hour' },
  { seconds: 14400, label: '4 hours' },
  { seconds: 86400, label: '24 hours' },
  { seconds: 259200, label: '3 days' },
];

/** The end of auto-approval when it is on at `now`, else null. */
export function autoApprovalEnd(until: string | null | undefined, now: number = Date.now()): string | null {
  if (!until) return null;
  const t = Date.parse(until);
  return Number.isNaN(t) || t <= now ? null : until;
}

export function AutoApproval({ site, canEdit }: { site: Site; canEdit: boolean }) {
  const queryClient = useQueryClient();
  const [until, setUntil] = useState<string | null | undefined>(site.auto_approve_until);
  const [duration, setDuration] = useState(3600);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => setUntil(site.auto_approve_until), [site.auto_approve_until]);
  // Re-evaluate every 15 s, so the switch turns off by itself when the window ends.
  useEffect(() => {
    const t = window.setInterval(() => setNow(Date.now()), 15_000);
    return () => window.clearInterval(t);
  }, []);

  const mutation = useMutation({
    mutationFn: (enabled: boolean) => sitesApi.setAutoApproval(site.site_id, enabled, enabled ? duration : undefined),
    onSuccess: (r) => {
      setNow(Date.now());
      setUntil(r?.auto_approve_until ?? null);
      queryClient.setQueryData<Site[]>(SITES_QUERY, (list) =>
        list?.map((s) => (s.site_id === site.site_id ? { ...s, auto_approve_until: r?.auto_approve_until ?? null } : s)),
      );
      void queryClient.invalidateQueries({ queryKey: SITES_QUERY });
    },
  });
  const end = autoApprovalEnd(until, now);

  return (
    <Box>
      <ErrorAlert error={mutation.error} fields={[]} />
      <Typography variant="body2" sx={{ mb: 1 }} data-testid="auto-approval-state">
        {end ? (
          <>
            Auto-approval is <b>on</b> until{' '}
            <time dateTime={end} title={formatDateTime(end)}>
              {formatDateTime(end)}
            </time>{' '}
            ({formatRelative(end, now)}).
          </>
        ) : (
          <>
            Auto-approval is <b>off</b>: every request waits for an operator.
          </>
        )}
      </Typography>
      {canEdit ? (
        <Box sx={{ display: 'flex', gap: 2, alignItems: 'center', flexWrap: 'wrap' }}>
          <FormControlLabel
            control={
              <Switch
                checked={Boolean(end)}
                disabled={mutation.isPending}
                onChange={(e) => mutation.mutate(e.target.checked)}
              />
            }
            label="Auto-approve enrollment requests"
          />
          <TextField
            select
            label="For"
            value={duration}
            disabled={Boolean(end) || mutation.isPending}
            onChange={(e) => setDuration(Number(e.target.value))}
            sx={{ minWidth: 150 }}
            helperText={end ? 'Turn it off to choose another duration.' : ' '}
          >
            {AUTO_APPROVAL_DURATIONS.map((o) => (
              <MenuItem key={o.seconds} value={o.seconds}>
                {o.label}
              </MenuItem>
            ))}
          </TextField>
        </Box>
      ) : (
        <Typography variant="caption" color="text.secondary">
          Only administrators can turn auto-approval on or off.
        </Typography>
      )}
      {canEdit && (
        <Alert severity="warning" variant="outlined" sx={{ mt: 1 }}>
          While it is on, every request with a valid code for this site is approved at once. Use it for a planned rollout
          only.
        </Alert>
      )}
    </Box>
  );
}
