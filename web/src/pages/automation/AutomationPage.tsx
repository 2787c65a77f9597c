import type { ComponentType } from 'react';
import { Navigate, useNavigate, useParams } from 'react-router';
import Box from '@mui/material/Box';
import Tab from '@mui/material/Tab';
import Tabs from '@mui/material/Tabs';
import { PageHeader } from '../../components/ComingSoon';
import AssembliesPanel from './AssembliesPanel';
import JobsPanel from './JobsPanel';
import WorkflowsPanel from './WorkflowsPanel';

type TabKey = 'assemblies' | 'jobs' | 'workflows';

/** The tabs in order; the key is the URL segment (/automation/<key>). */
const panels: Record<TabKey, { label: string; Panel: ComponentType }> = {
  assemblies: { label: 'Assemblies', Panel: AssembliesPanel },
  jobs: { label: 'Scheduled jobs', Panel: JobsPanel },
  workflows: { label: 'Workflows', Panel: WorkflowsPanel },
};
const TAB_KEYS = Object.keys(panels) as TabKey[];
const isTabKey = (v: string | undefined): v is TabKey => v !== undefined && (TAB_KEYS as string[]).includes(v);

export default function AutomationPage() {
  const { tab } = useParams<{ tab?: string }>();
  const navigate = useNavigate();
  if (tab !== undefined && !isTabKey(tab)) return <Navigate to="/automation" replace />;
  const current: TabKey = tab ?? 'assemblies';
  const { Panel } = panels[current];
  return (
    <Box>
      <PageHeader title="Automation" subtitle="Signed scripts run by each site’s worker: saved assemblies, quick runs, scheduled jobs and workflows." />
      <Tabs
        value={current}
        onChange={(_, next: TabKey) => navigate(next === 'assemblies' ? '/automation' : `/automation/${next}`)}
        aria-label="Automation"
        sx={{ mb: 2, minHeight: 40, borderBottom: 1, borderColor: 'divider', '& .MuiTab-root': { minHeight: 40, py: 1 } }}
      >
        {TAB_KEYS.map((key) => (
          <Tab key={key} value={key} label={panels[key].label} id={`automation-tab-${key}`} aria-controls="automation-tabpanel" />
        ))}
      </Tabs>
      <Box role="tabpanel" id="automation-tabpanel" aria-labelledby={`automation-tab-${current}`}>
        <Panel key={current} />
      </Box>
    </Box>
  );
}
