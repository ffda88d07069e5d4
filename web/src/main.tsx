import { render } from 'preact';
import { Root } from './components/Root';
import { applyTheme } from './lib/theme';
import './styles.css';

applyTheme();
const root = document.getElementById('root');
if (root) render(<Root />, root);
