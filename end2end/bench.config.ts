import { defineConfig } from '@playwright/test';
import base from './playwright.config';

// `make bench` only (through run.sh, against the release server): the slow-phone timings.
export default defineConfig({ ...base, testDir: './bench', timeout: 600_000 });
