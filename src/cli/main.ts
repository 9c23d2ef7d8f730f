#!/usr/bin/env node
import { buildProgram, reportAndExit } from './program.js';

buildProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => reportAndExit(err));
