// The browser entry: mounts the console app.
import { render } from 'preact';
import { App } from './app.js';
import './styles.css';
import './conversation.css';
import './metrics.css';

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
