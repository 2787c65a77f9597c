import type { ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import Divider from '@mui/material/Divider';
import Typography from '@mui/material/Typography';
import { enrollment } from '../../api/endpoints';
import type { Site } from '../../api/types';
import { ApprovalsQueue } from './ApprovalsQueue';
import { AutoApproval } from './AutoApproval';
import { EnrollmentCodes } from './EnrollmentCodes';
import { InstallCommands } from './InstallCommands';
import { codesKey } from './shared';

function Part({ title, children, first = false }: { title: string; children: ReactNode; first?: boolean }) {
  return (
    <Box component="section" aria-label={title} sx={{ mb: 2.5 }}>
      {!first && <Divider sx={{ mb: 2 }} />}
      <Typography variant="subtitle1" component="h3" sx={{ fontWeight: 600, mb: 1 }}>
        {title}
      </Typography>
      {children}
    </Box>
  );
}

/** Everything needed to bring agents into one site: codes, install commands, approvals and auto-approval. */
export function EnrollDialog({ site, canEdit, onClose }: { site: Site; canEdit: boolean; onClose: () => void }) {
  const codes = useQuery({ queryKey: codesKey(site.site_id), queryFn: () => enrollment.codes(site.site_id) });
  const list = codes.data ?? [];
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="md" aria-labelledby="enroll-dialog-title">
      <DialogTitle id="enroll-dialog-title">Enroll agents in {site.name}</DialogTitle>
      <DialogContent dividers>
        <Part title="Enrollment codes" first>
          <EnrollmentCodes siteId={site.site_id} codes={list} loading={codes.isPending} error={codes.error} />
        </Part>
        <Part title="Install an agent">
          <InstallCommands key={site.site_id} site={site} codes={list} canEdit={canEdit} />
        </Part>
        <Part title="Approvals">
          <ApprovalsQueue siteId={site.site_id} />
        </Part>
        <Part title="Temporary auto-approval">
          <AutoApproval site={site} canEdit={canEdit} />
        </Part>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Close</Button>
      </DialogActions>
    </Dialog>
  );
}
