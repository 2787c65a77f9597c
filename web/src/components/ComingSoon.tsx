import type { ReactNode } from 'react';
import Box from '@mui/material/Box';
import Chip from '@mui/material/Chip';
import Paper from '@mui/material/Paper';
import Typography from '@mui/material/Typography';
import ConstructionIcon from '@mui/icons-material/Construction';

/** An honest placeholder for a page that a later release builds. */
export function ComingSoon({ title, summary, items }: { title: string; summary: ReactNode; items: ReactNode[] }) {
  return (
    <Box>
      <PageHeader title={title} />
      <Paper variant="outlined" sx={{ p: 3, maxWidth: 760 }} data-testid="coming-soon">
        <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.5, mb: 1.5 }}>
          <ConstructionIcon color="action" />
          <Typography variant="h6" component="h2">
            Coming in a later release
          </Typography>
          <Chip size="small" label="Not available yet" variant="outlined" />
        </Box>
        <Typography variant="body2" sx={{ mb: 1.5 }}>
          {summary}
        </Typography>
        <Typography variant="body2" color="text.secondary" sx={{ mb: 0.5 }}>
          When it lands, this page will:
        </Typography>
        <Box component="ul" sx={{ m: 0, pl: 2.5, '& li': { typography: 'body2', color: 'text.secondary', mb: 0.5 } }}>
          {items.map((item, i) => (
            <li key={i}>{item}</li>
          ))}
        </Box>
      </Paper>
    </Box>
  );
}

export function PageHeader({ title, subtitle, actions }: { title: string; subtitle?: ReactNode; actions?: ReactNode }) {
  return (
    <Box sx={{ display: 'flex', alignItems: 'flex-end', gap: 2, mb: 2, flexWrap: 'wrap' }}>
      <Box sx={{ flex: 1, minWidth: 200 }}>
        <Typography variant="h5" component="h1">
          {title}
        </Typography>
        {subtitle && (
          <Typography variant="body2" color="text.secondary">
            {subtitle}
          </Typography>
        )}
      </Box>
      {actions && <Box sx={{ display: 'flex', gap: 1 }}>{actions}</Box>}
    </Box>
  );
}
