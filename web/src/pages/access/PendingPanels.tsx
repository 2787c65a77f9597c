import type { ReactNode } from 'react';
import Box from '@mui/material/Box';
import Chip from '@mui/material/Chip';
import Paper from '@mui/material/Paper';
import Typography from '@mui/material/Typography';
import ConstructionIcon from '@mui/icons-material/Construction';

// Honest placeholders for the Access tabs whose Engine routes are not built
// yet. Each is swapped for the real panel in AccessPage.tsx when it lands.

function PendingPanel({ title, summary, items }: { title: string; summary: ReactNode; items: ReactNode[] }) {
  return (
    <Paper variant="outlined" sx={{ p: 3, maxWidth: 760 }} data-testid="coming-soon">
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.5, mb: 1.5 }}>
        <ConstructionIcon color="action" />
        <Typography variant="h6" component="h2">
          {title}
        </Typography>
        <Chip size="small" label="Not available yet" variant="outlined" />
      </Box>
      <Typography variant="body2" sx={{ mb: 1.5 }}>
        {summary}
      </Typography>
      <Typography variant="body2" color="text.secondary" sx={{ mb: 0.5 }}>
        When it lands, this tab will:
      </Typography>
      <Box component="ul" sx={{ m: 0, pl: 2.5, '& li': { typography: 'body2', color: 'text.secondary', mb: 0.5 } }}>
        {items.map((item, i) => (
          <li key={i}>{item}</li>
        ))}
      </Box>
    </Paper>
  );
}

export function DirectoryPending() {
  return (
    <PendingPanel
      title="Directory"
      summary="Directory sign-in arrives with the directory work. Until then every operator is a local account created on the Operators tab."
      items={[
        'connect LDAP, LDAPS or Active Directory providers and test the connection',
        'map directory groups to the admin or operator role and to sites',
        'let directory accounts sign in with their directory password',
      ]}
    />
  );
}

export function CredentialsPending() {
  return (
    <PendingPanel
      title="Credentials"
      summary="Stored credentials arrive with the stored-secrets work. Nothing is stored here yet."
      items={[
        'store credentials that jobs and remote sessions use, sealed by the master cipher',
        'show who created and last used each credential, never its secret',
        'rotate or delete a credential',
      ]}
    />
  );
}

export function SourceTokenPending() {
  return (
    <PendingPanel
      title="Source token"
      summary="The source-hosting token arrives with the stored-secrets work. No token is stored yet."
      items={[
        'store the access token for the source-hosting service that holds scripts and assemblies, sealed by the master cipher',
        'test the token and show when it was set and by whom',
        'replace or remove the token',
      ]}
    />
  );
}
