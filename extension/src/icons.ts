/** gpudojo's icons. */

import { LabIcon } from '@jupyterlab/ui-components';

// A stylised chip: a die with pins on every side and a core in the middle.
const CHIP_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M7.5 5h9A2.5 2.5 0 0 1 19 7.5v9a2.5 2.5 0 0 1-2.5 2.5h-9A2.5 2.5 0 0 1 5 16.5v-9A2.5 2.5 0 0 1 7.5 5zm.5 2.5a.5.5 0 0 0-.5.5v8a.5.5 0 0 0 .5.5h8a.5.5 0 0 0 .5-.5V8a.5.5 0 0 0-.5-.5z"/>
    <rect x="10" y="10" width="4" height="4" rx="0.5"/>
    <rect x="8" y="1.5" width="1.6" height="3"/>
    <rect x="11.2" y="1.5" width="1.6" height="3"/>
    <rect x="14.4" y="1.5" width="1.6" height="3"/>
    <rect x="8" y="19.5" width="1.6" height="3"/>
    <rect x="11.2" y="19.5" width="1.6" height="3"/>
    <rect x="14.4" y="19.5" width="1.6" height="3"/>
    <rect x="1.5" y="8" width="3" height="1.6"/>
    <rect x="1.5" y="11.2" width="3" height="1.6"/>
    <rect x="1.5" y="14.4" width="3" height="1.6"/>
    <rect x="19.5" y="8" width="3" height="1.6"/>
    <rect x="19.5" y="11.2" width="3" height="1.6"/>
    <rect x="19.5" y="14.4" width="3" height="1.6"/>
  </g>
</svg>`;

export const gpudojoIcon = new LabIcon({ name: 'gpudojo:logo', svgstr: CHIP_SVG });
