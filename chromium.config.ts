/**
 * How the dev tooling (browser tests, the benchmark's Chromium backends) launches the system Chromium:
 * SETUP.md's flags, no background traffic into the closed network, WebGPU on whatever adapter there is.
 */

/** The Chromium binary: EDGEARMOR_CHROMIUM, else Debian's. */
export const CHROMIUM_PATH = process.env['EDGEARMOR_CHROMIUM'] ?? '/usr/bin/chromium';

/** SETUP.md's launch flags: no background traffic into the closed network; WebGPU on the software adapter. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
  '--enable-unsafe-webgpu',
];
