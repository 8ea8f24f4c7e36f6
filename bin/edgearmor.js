#!/usr/bin/env node
// The package's command; runs the compiled CLI (npm ci and npm pack build dist/ through "prepare").
import { main } from '../dist/cli/edgearmor.js';

await main(process.argv.slice(2));
