import { defineConfig } from '@playwright/test';
import base from './playwright.config';

// scripts/bundle-test.sh only: a release bundle deployed as DEPLOY.md says, started by that script.
export default defineConfig({ ...base, testDir: './bundle' });
