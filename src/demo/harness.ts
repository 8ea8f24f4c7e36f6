/** The demo's harness page for edgearmor/testing (and this repository's browser tests). */
import { installGuardHarness } from '../testing.js';
import { modelUrlFromPage, ortWasmPaths } from './page-config.js';

installGuardHarness({ wasmPaths: ortWasmPaths(), defaultModelUrl: modelUrlFromPage(new URLSearchParams(location.search)) });
