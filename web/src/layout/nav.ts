import type { SvgIconComponent } from '@mui/icons-material';
import AccountTreeIcon from '@mui/icons-material/AccountTree';
import AdminPanelSettingsIcon from '@mui/icons-material/AdminPanelSettings';
import AppsIcon from '@mui/icons-material/Apps';
import ComputerIcon from '@mui/icons-material/Computer';
import DnsIcon from '@mui/icons-material/Dns';
import LabelIcon from '@mui/icons-material/Label';
import LocationCityIcon from '@mui/icons-material/LocationCity';
import NotificationImportantIcon from '@mui/icons-material/NotificationImportant';
import SystemUpdateAltIcon from '@mui/icons-material/SystemUpdateAlt';

export interface NavItem {
  label: string;
  path: string;
  icon: SvgIconComponent;
}

export const NAV_ITEMS: NavItem[] = [
  { label: 'Devices', path: '/devices', icon: ComputerIcon },
  { label: 'Software', path: '/software', icon: AppsIcon },
  { label: 'Metadata', path: '/metadata', icon: LabelIcon },
  { label: 'Sites', path: '/sites', icon: LocationCityIcon },
  { label: 'Alerts', path: '/alerts', icon: NotificationImportantIcon },
  { label: 'Patches', path: '/patches', icon: SystemUpdateAltIcon },
  { label: 'Automation', path: '/automation', icon: AccountTreeIcon },
  { label: 'Access', path: '/access', icon: AdminPanelSettingsIcon },
  { label: 'Server', path: '/server', icon: DnsIcon },
];
