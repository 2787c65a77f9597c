import type { ComponentType } from 'react';
import { Link as RouterLink, Navigate, useNavigate, useParams } from 'react-router';
import Alert from '@mui/material/Alert';
import AlertTitle from '@mui/material/AlertTitle';
import Box from '@mui/material/Box';
import Link from '@mui/material/Link';
import Tab from '@mui/material/Tab';
import Tabs from '@mui/material/Tabs';
import { useSession } from '../../auth/session';
import { PageHeader } from '../../components/ComingSoon';
import AuditPanel from './AuditPanel';
import CredentialsPanel from './CredentialsPanel';
import DirectoryPanel from './DirectoryPanel';
import OperatorsPanel from './OperatorsPanel';
import SourceTokenPanel from './SourceTokenPanel';

type TabKey = 'operators' | 'directory' | 'credentials' | 'source-token' | 'audit';

/** The tabs in order; the key is the URL segment (/access/<key>). */
const panels: Record<TabKey, { label: string; Panel: ComponentType }> = {
  operators: { label: 'Operators', Panel: OperatorsPanel },
  directory: { label: 'Directory', Panel: DirectoryPanel },
  credentials: { label: 'Credentials', Panel: CredentialsPanel },
  'source-token': { label: 'Source token', Panel: SourceTokenPanel },
  audit: { label: 'Audit', Panel: AuditPanel },
};

const TAB_KEYS = Object.keys(panels) as TabKey[];

function isTabKey(value: string | undefined): value is TabKey {
  return value !== undefined && (TAB_KEYS as string[]).includes(value);
}

export default function AccessPage() {
  const { user } = useSession();
  const { tab } = useParams<{ tab?: string }>();
  const navigate = useNavigate();

  if (user.role !== 'admin') {
    return (
      <Box>
        <PageHeader title="Access" />
        <Alert severity="info" variant="outlined" sx={{ maxWidth: 760 }} data-testid="admins-only">
          <AlertTitle>Administrators only</AlertTitle>
          Operators, directory sign-in, stored credentials and the audit trail are managed by administrators. Your own
          password and authenticator are on your{' '}
          <Link component={RouterLink} to="/profile">
            profile
          </Link>
          .
        </Alert>
      </Box>
    );
  }

  if (tab !== undefined && !isTabKey(tab)) return <Navigate to="/access" replace />;
  const current: TabKey = tab ?? 'operators';
  const { Panel } = panels[current];

  return (
    <Box>
      <PageHeader
        title="Access"
        subtitle="Who can sign in, with which role and to which sites, and what they did."
      />
      <Tabs
        value={current}
        onChange={(_, next: TabKey) => navigate(next === 'operators' ? '/access' : `/access/${next}`)}
        aria-label="Access"
        sx={{ mb: 2, minHeight: 40, borderBottom: 1, borderColor: 'divider', '& .MuiTab-root': { minHeight: 40, py: 1 } }}
      >
        {TAB_KEYS.map((key) => (
          <Tab key={key} value={key} label={panels[key].label} id={`access-tab-${key}`} aria-controls="access-tabpanel" />
        ))}
      </Tabs>
      <Box role="tabpanel" id="access-tabpanel" aria-labelledby={`access-tab-${current}`}>
        <Panel key={current} />
      </Box>
    </Box>
  );
}
